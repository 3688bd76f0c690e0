"""``communities --write``: the ``communities.md`` page (one section per community, wikilinks, a
Mermaid map of communities and their bridges), written through the one writer path.

The compiled part is a marked section (parse/generated.py): a later ``--write`` rewrites only that
section, so what a person adds to the page above or below it stays, and a section edited by hand is
kept with the new one written above it. A ``communities.md`` wikimem did not write (no
``generated_by: wikimem`` in its frontmatter) is never overwritten: the write is refused. A page an
older version wrote whole (marked generated, no section markers), or one whose markers a person
removed, keeps every line: the new marked section is written below its title (with a warning),
since what a person may have added to it cannot be told apart from what was generated.

The page carries no date, so an unchanged result compiles to the same bytes and is not rewritten;
``communities.md`` itself is left out of the graph (``pagegraph.STRUCTURAL_PAGES``), so writing it
never changes the next result. The page counts communities as ``wikimem communities`` does (every
one Leiden found, single pages included) and says how many are single pages: those are listed
together under "Unclustered" instead of one section each.
"""
from __future__ import annotations

from dataclasses import dataclass

from ..errors import ConflictError
from ..parse import frontmatter as fm
from ..parse import generated
from .communities import CommunityReport
from .pagegraph import PageInfo, manifest_of, page_infos

PAGE = "communities.md"
MAP_COMMUNITIES = 30  # the Mermaid map shows the largest ones; more is unreadable
MIN_SECTION = 2  # singletons are listed together at the end, not one section each
SECTION = "communities"
GENERATED_BY = "wikimem communities --write"


@dataclass(frozen=True)
class CompileResult:
    path: str
    written: bool
    sha256: str
    warnings: tuple[str, ...] = ()

    def to_dict(self) -> dict:
        return {"path": self.path, "written": self.written, "sha256": self.sha256, "warnings": list(self.warnings)}


def _link(path: str, info: dict[str, PageInfo]) -> str:
    target = path[:-3] if path.endswith(".md") else path
    title = info[path].title if path in info else target
    shown = title.replace("|", "/").replace("]", ")").replace("[", "(")
    return f"[[{target}|{shown}]]" if shown != target else f"[[{target}]]"


def _mermaid_text(text: str) -> str:
    return text.replace('"', "'").replace("\n", " ")[:60]


def mermaid(report: CommunityReport) -> str:
    shown = [c for c in report.communities if c.size >= MIN_SECTION][:MAP_COMMUNITIES]
    ids = {c.id for c in shown}
    lines = ["```mermaid", "graph LR"]
    for c in shown:
        lines.append(f'  c{c.id}["{c.id}. {_mermaid_text(c.label or "untitled")} ({c.size})"]')
    for c in shown:
        for b in c.bridges:
            if b.community in ids and c.id < b.community:
                lines.append(f"  c{c.id} ---|{b.links}| c{b.community}")
    lines.append("```")
    return "\n".join(lines)


def summary(report: CommunityReport) -> str:
    """How many communities, said as ``wikimem communities`` says it (every community Leiden found,
    single pages included), and how many of them are single pages (listed under Unclustered)."""
    alone = sum(1 for c in report.communities if c.size < MIN_SECTION)
    text = f"{len(report.communities)} communities over {report.pages} pages"
    if alone:
        text += (f", {alone} of them a single page" if alone == 1 else f", {alone} of them single pages") + \
            " (listed together under Unclustered)"
    return text


def render_section(report: CommunityReport, info: dict[str, PageInfo]) -> str:
    """The compiled part of the page (what the marked section holds)."""
    sections = [c for c in report.communities if c.size >= MIN_SECTION]
    alone = sorted(p for c in report.communities if c.size < MIN_SECTION for p in c.members)
    out = [f"Clusters of the link graph found by Leiden (resolution {report.resolution:g}, seed {report.seed}"
           f"{', with semantic edges' if report.semantic else ''}): {summary(report)}. "
           "Compiled by `wikimem communities --write`, which rewrites only this marked section: notes you add "
           "above or below it stay.", "",
           mermaid(report), ""]
    for c in sections:
        out += [f"## {c.id}. {c.label or 'untitled'}", "",
                f"- Size: {c.size}",
                f"- Hubs: {', '.join(_link(h, info) for h in c.hubs)}"]
        if c.tags:
            out.append(f"- Tags: {', '.join('#' + t for t in c.tags)}")
        if c.bridges:
            out.append("- Bridges: " + "; ".join(
                f"community {b.community} ({b.links} links, strongest {_link(b.strongest[0], info)} → "
                f"{_link(b.strongest[1], info)})" for b in c.bridges))
        out += ["", "Members: " + ", ".join(_link(p, info) for p in c.members), ""]
    if alone:
        out += ["## Unclustered", "", "Pages with no links to other pages: " + ", ".join(_link(p, info) for p in alone),
                ""]
    return "\n".join(out)


def render(report: CommunityReport, info: dict[str, PageInfo]) -> str:
    """A new ``communities.md``."""
    head = ["---", "title: Communities", "type: note", f"generated_by: {GENERATED_BY}", "---", "", "# Communities", ""]
    return "\n".join(head) + "\n" + generated.render(SECTION, render_section(report, info))


def _ours(data) -> bool:
    return str(data.get("generated_by") or "").startswith("wikimem")


def write_page(ctx, report: CommunityReport) -> CompileResult:
    """Compile and write ``communities.md`` (unchanged bytes are not rewritten), then log it."""
    info = page_infos(manifest_of(ctx))
    path = ctx.root / PAGE
    expected, warnings = None, []
    if not path.exists():
        text = render(report, info)
    else:
        note = ctx.files.read_note(PAGE)
        expected = note.sha256
        current = note.text.replace("\r\n", "\n")
        front, body = fm.parse(current)
        marked = generated.find(body, SECTION) is not None
        if not marked and not _ours(front.data):
            raise ConflictError(f"{PAGE} is a page of your own (it has no 'generated_by: wikimem' and no marked "
                                "section), so wikimem will not overwrite it; rename it, or add the lines "
                                f"'<!-- wikimem:begin {SECTION} -->' and '<!-- wikimem:end {SECTION} -->' where the "
                                "communities should go")
        body, kept = generated.replace(body, SECTION, render_section(report, info))
        if kept:
            warnings.append(f"{PAGE}: {kept}")
        text = fm.compose(front.raw, body)
        if current == text:
            return CompileResult(PAGE, False, note.sha256)
    from ..knowledge.writer import write_page as write_note_page
    result = write_note_page(ctx, PAGE, text, expected_sha256=expected, reason="communities")
    return CompileResult(result.path, True, result.sha256, tuple(warnings) + tuple(result.warnings))
