"""Pages as MCP resources and the wiki's workflows as MCP prompts."""
from __future__ import annotations

from ..errors import UsageError
from ..knowledge.names import refuse_unreadable


def page_resource_text(vault, path: str, lines: str = "") -> str:
    """A page's text, or lines ``a-b`` of it (1-based, inclusive), for ``wikimem://page/...``."""
    from ..agent.pages import note_path
    rel = note_path(vault, path)
    refuse_unreadable(vault, rel)  # notes only: no dot folders, nothing .wikimemignore hides
    text = vault.files.read_note(rel).text.replace("\r\n", "\n")
    if not lines:
        return text
    try:
        first, _, last = lines.partition("-")
        start, end = int(first), int(last or first)
    except ValueError:
        raise UsageError(f"lines={lines!r}: give a range such as 10-40") from None
    if start < 1 or end < start:
        raise UsageError(f"lines={lines!r}: give a range such as 10-40")
    return "\n".join(text.split("\n")[start - 1:end]) + "\n"


def add_resources_and_prompts(server, vault) -> None:
    """Pages as resources (``wikimem://page/<path>``, ``?lines=a-b``; SCHEMA.md and index.md as
    ``wikimem://schema`` and ``wikimem://index``) and the wiki's workflows as prompts, read from
    AGENTS.md (agent/workflows.py), so an agent new to wikimem maintains the wiki as it describes."""
    from ..agent.workflows import WORKFLOWS, workflow

    @server.resource("wikimem://page/{+path}{?lines}", name="page", mime_type="text/markdown",
                     description="A note of the vault by its path; ?lines=10-40 for part of it.")
    def page(path: str, lines: str = "") -> str:
        return page_resource_text(vault, path, lines)

    @server.resource("wikimem://schema", name="schema", mime_type="text/markdown",
                     description="SCHEMA.md: the wiki's domain, tags, naming and page thresholds.")
    def schema() -> str:
        return page_resource_text(vault, "SCHEMA.md")

    @server.resource("wikimem://index", name="index", mime_type="text/markdown",
                     description="index.md: one line per page, by type.")
    def index() -> str:
        return page_resource_text(vault, "index.md")

    @server.prompt(name="ingest_source", description="Ingest a source from raw/ and update the pages it touches.")
    def ingest_source(path: str = "") -> str:
        return workflow(vault, "ingest_source", f"the source {path}." if path else "")

    @server.prompt(name="answer_and_file", description="Answer a question from the wiki with citations and file it.")
    def answer_and_file(question: str = "") -> str:
        return workflow(vault, "answer_and_file", f"the question: {question}" if question else "")

    @server.prompt(name="lint_and_fix", description="Lint the wiki and fix what it reports.")
    def lint_and_fix(paths: str = "") -> str:
        return workflow(vault, "lint_and_fix", f"these pages: {paths}" if paths else "")

    assert set(WORKFLOWS) == {"ingest_source", "answer_and_file", "lint_and_fix"}
