"""The extractive section: what the sources say about one subject, in their own words.

For each source that names the subject (newest first, then by path), the sentences that name it, in
the source's order, at most ``MAX_PER_SOURCE`` of them, each followed by its citation. Nothing is
reworded, so the same sources always give the same section (compile twice = no change). A sentence
that contradicts one the page already holds (contradict.py) is held back and reported instead.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from .contradict import Contradiction, disagree
from .names import Subject, matcher, prose
from .sources import Sentence, Source

SECTION = "compiled"  # the marked section's name (parse/generated.py)
HEADING = "## What the sources say"
MAX_PER_SOURCE = 5
MAX_SOURCES = 30


@dataclass
class Plan:
    """What one subject's section will hold."""

    subject: Subject
    by_source: list[tuple[Source, list[Sentence]]] = field(default_factory=list)
    held: list[Contradiction] = field(default_factory=list)
    claims: list[tuple[str, str, Sentence]] | None = None  # llm: (claim, quote, the sentence it stands on)

    @property
    def sentences(self) -> list[Sentence]:
        return [s for _, said in self.by_source for s in said]

    @property
    def cited(self) -> set[str]:
        return {s.source for s in self.sentences}


def about(subject: Subject, sources: list[Source]) -> list[tuple[Source, list[Sentence]]]:
    """(source, the sentences naming ``subject``) for every source naming it, newest first."""
    patterns = matcher(subject.names, subject.kind)
    out = []
    for source in sources:
        said = [s for s in source.sentences if any(p.search(prose(s.text)) for p in patterns)]
        if said:
            out.append((source, said))
    return out


def plan(subject: Subject, sources: list[Source], page_sentences: list[tuple[str, int]]) -> Plan:
    """The section for ``subject``; ``page_sentences``: (sentence, line) of the page's own text."""
    result = Plan(subject)
    for source, said in about(subject, sources)[:MAX_SOURCES]:
        kept = []
        for s in said:
            clash = next(((p, line) for p, line in page_sentences if disagree(p, s.text)), None)
            if clash is not None:
                result.held.append(Contradiction(subject.path, clash[1], clash[0], s.source, s.line, s.text, s.link))
                continue
            kept.append(s)
            if len(kept) == MAX_PER_SOURCE:
                break
        if kept:
            result.by_source.append((source, kept))
    return result


def _source_heading(source: Source) -> str:
    where = f"[[{source.page.removesuffix('.md')}|{source.title}]]" if source.page else \
        f"[[{source.path.removesuffix('.md')}|{source.title}]]"
    return f"### {where}" + (f" · {source.date}" if source.date else "")


def render(p: Plan) -> str:
    """The section's Markdown (without its markers)."""
    lines = [HEADING, ""]
    if not p.by_source:
        lines.append(f"No source in raw/ says anything about {p.subject.title} now.")
        return "\n".join(lines)
    if p.claims is not None:
        by_source: dict[str, list] = {}
        for claim, quote, s in p.claims:
            by_source.setdefault(s.source, []).append(f"- {claim} (“{quote}”) {s.link}")
        for source, _ in p.by_source:
            if source.path in by_source:
                lines += [_source_heading(source), ""] + by_source[source.path] + [""]
        return "\n".join(lines).rstrip("\n")
    for source, said in p.by_source:
        lines += [_source_heading(source), ""] + [f"- {s.text} {s.link}" for s in said] + [""]
    return "\n".join(lines).rstrip("\n")


def entries(p: Plan) -> list[str]:
    """The ``sources`` frontmatter entries the section's citations record."""
    out: list[str] = []
    used = p.sentences if p.claims is None else [s for _, _, s in p.claims]
    for s in used:
        entry = f"{s.link} sha256:{s.chunk_sha256}" if s.chunk_sha256 else s.link
        if entry not in out:
            out.append(entry)
    return out
