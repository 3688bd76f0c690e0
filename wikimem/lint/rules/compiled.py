"""WM509: a source that contradicts a page, which ``wikimem compile`` held back for a person."""
from __future__ import annotations

from ..registry import rule


@rule("WM509", "compile-contradiction", severity="warning")
def compile_contradiction(ctx):
    """A sentence of a source under raw/ disagrees with a sentence an entity or concept page holds
    (the same subject, another number, date, version or name): ``wikimem compile`` did not write it
    over the page; a person decides (edit the page, or ``supersede`` it). Both sentences are checked
    to stand where the finding says. Example: the page says "Tool X listens on port 8080 by default."
    and a source says "Tool X listens on port 9090 by default."."""
    from ...compile.contradict import verified
    from ...compile.extract import plan
    from ...compile.names import existing_subjects
    from ...compile.run import own_sentences
    from ...compile.sources import read_sources

    pages = ctx.pages
    sources = read_sources(pages, lambda page: ())
    found = []
    for subject in existing_subjects(pages):
        found += plan(subject, sources, own_sentences(pages[subject.path])).held
    texts = {p: "\n" * page.body_line + page.body for p, page in pages.items()}  # lines as in the file
    kept, _ = verified(found, texts.__getitem__)
    for c in kept:
        yield ctx.finding(c.page, c.page_line, f"{c.source_link} ({c.source}:{c.source_line}) says "
                                               f"{c.source_sentence!r}; this page says {c.page_sentence!r}")
