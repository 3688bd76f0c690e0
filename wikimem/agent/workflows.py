"""The LLM-Wiki workflows offered to agents as MCP prompts, read from ``AGENTS.md``.

One text serves both: ``AGENTS.md`` (in the vault template, so ``wikimem init`` writes it, and
agents that read files find it) holds the workflows as ``## `` sections; a vault's own ``AGENTS.md``,
edited by its people, wins over the template's, so a team's way of working is what agents are told.
"""
from __future__ import annotations

import re
from importlib import resources

AGENTS_FILE = "AGENTS.md"
WORKFLOWS = {"ingest_source": "Ingest a source", "answer_and_file": "Answer and file", "lint_and_fix": "Lint and fix"}


def agents_text(ctx) -> str:
    """The vault's AGENTS.md, or the template's when it has none (or it cannot be read)."""
    try:
        return ctx.files.read_note(AGENTS_FILE).text.replace("\r\n", "\n")
    except Exception:  # noqa: BLE001 - no file, unreadable: the bundled workflows serve
        return resources.files("wikimem.vault_template").joinpath(AGENTS_FILE).read_text(encoding="utf-8")


def sections(text: str) -> dict[str, str]:
    """``## Heading`` -> the text under it (down to the next ``## ``)."""
    out, current, lines = {}, None, []
    for line in text.split("\n"):
        m = re.match(r"^##\s+(.+?)\s*#*\s*$", line)
        if m:
            if current is not None:
                out[current] = "\n".join(lines).strip()
            current, lines = m.group(1), []
        elif current is not None:
            lines.append(line)
    if current is not None:
        out[current] = "\n".join(lines).strip()
    return out


def intro(text: str) -> str:
    """What AGENTS.md says before its first workflow."""
    head = text.split("\n## ", 1)[0]
    return "\n".join(line for line in head.split("\n") if not line.startswith("# ")).strip()


def workflow(ctx, name: str, subject: str = "") -> str:
    """The prompt for workflow ``name``: the vault's rules, the steps, and what it is about."""
    text = agents_text(ctx)
    heading = WORKFLOWS[name]
    steps = sections(text).get(heading) or sections(
        resources.files("wikimem.vault_template").joinpath(AGENTS_FILE).read_text(encoding="utf-8"))[heading]
    about = f"\n\nThis time: {subject}" if subject else ""
    return f"{intro(text)}\n\n## {heading}\n\n{steps}{about}\n"
