"""Related notes: the pages nearest a page by meaning, as Smart Connections shows them beside the
open note, from vectors the build already made (nothing is embedded here).

A page's vector is the normalised mean of its chunks' vectors (``semantic.page_matrix``, computed
once per state of the vector index and kept for the process), so a long-lived process (MCP server,
editor integration) answers each ``related`` call with one matrix-vector product; the same matrix
serves lint's near-duplicate rule and ``communities --semantic``.

Each related page says whether it is already linked (either way), and unlinked pages come first:
they are the connections the vault is missing. The shared key terms (rarest first by document
frequency in the lexical index) say why two pages are near.
"""
from __future__ import annotations

import math
import re
from collections import Counter
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from ..errors import UsageError
from ..stores.analysis import stem
from .pagegraph import STRUCTURAL_PAGES, manifest_of, page_infos, resolve_page
from .semantic import page_matrix

if TYPE_CHECKING:
    from ..core import Context

DEFAULT_LIMIT = 10
TERMS_SHOWN = 5
_WORD = re.compile(r"[^\W\d_][\w'-]*[^\W_]|[^\W\d_]", re.UNICODE)
_HAN = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]+")


@dataclass(frozen=True)
class RelatedPage:
    path: str
    title: str
    score: float
    linked: bool
    link: str | None  # "outgoing", "incoming", "both" or None
    terms: tuple[str, ...]

    def to_dict(self) -> dict[str, Any]:
        return {"path": self.path, "title": self.title, "score": round(self.score, 4), "linked": self.linked,
                "link": self.link, "terms": list(self.terms)}


@dataclass(frozen=True)
class RelatedReport:
    page: str
    title: str
    related: tuple[RelatedPage, ...]
    notices: tuple[str, ...] = ()
    degraded: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {"page": self.page, "title": self.title, "related": [r.to_dict() for r in self.related],
                "notices": list(self.notices), "degraded": list(self.degraded)}


def related(ctx: "Context", page: str, *, limit: int = DEFAULT_LIMIT, include_linked: bool = True,
            include_superseded: bool = False) -> RelatedReport:
    """The ``limit`` pages nearest ``page`` (a path, file name, title or alias) by meaning,
    unlinked ones first, each with whether it is linked and the key terms the two share."""
    if limit < 1:
        raise UsageError(f"--limit must be 1 or more, not {limit}")
    manifest = manifest_of(ctx)
    start = resolve_page(ctx, page, manifest)
    info = page_infos(manifest, [start])
    title = info[start].title if start in info else start
    found, why = page_matrix(ctx.cache)
    if not manifest.chunk_ids_of_page(start):  # only frontmatter (or nothing): no text, so no vector, ever
        return RelatedReport(start, title, (), (f"{start} has no text to compare (only frontmatter, or empty): "
                                                "add some text to it to find the pages near it",), ("no_text",))
    if found is None or start not in found.row:
        reason = why or f"{start} has no vectors yet: run `wikimem index` (or let the watcher catch up)"
        return RelatedReport(start, title, (), (reason,), ("vectors_missing",))
    sims = found.vectors @ found.vectors[found.row[start]]
    # read a few more than asked: superseded, meta and (optionally) linked pages are dropped after
    wanted = min(len(sims), max(limit * 4, limit + 20))
    top = np.argpartition(-sims, wanted - 1)[:wanted] if wanted < len(sims) else np.arange(len(sims))
    order = sorted(top.tolist(), key=lambda i: (-float(sims[i]), found.paths[i]))
    candidates = [found.paths[i] for i in order if found.paths[i] != start]
    infos = page_infos(manifest, candidates)
    links = _links(manifest, start)
    kept: list[tuple[str, float, str | None]] = []
    for path in candidates:
        meta = infos.get(path)
        if meta is None or path in STRUCTURAL_PAGES or (meta.status == "superseded" and not include_superseded):
            continue
        link = links.get(path)
        if link and not include_linked:
            continue
        kept.append((path, float(sims[found.row[path]]), link))
    kept = kept[:limit]
    kept.sort(key=lambda k: (k[2] is not None, -k[1], k[0]))  # unlinked first, then by nearness
    shared = _shared_terms(manifest, start, [p for p, _, _ in kept])
    notices = []
    missing = sum(found.missing.values())
    if missing:
        notices.append(f"{missing} chunk(s) have no vector yet; their pages were compared on the rest")
    return RelatedReport(start, title, tuple(RelatedPage(p, infos[p].title, s, link is not None, link, shared.get(p, ()))
                                              for p, s, link in kept), tuple(notices))


def _links(manifest, start: str) -> dict[str, str]:
    """Pages linked with ``start``: path -> outgoing | incoming | both (any edge type between pages)."""
    out, inc = manifest.linked_pages(start)
    return {p: ("both" if p in out and p in inc else "outgoing" if p in out else "incoming") for p in out | inc}


def _surface(text: str, wanted: set[str]) -> dict[str, str]:
    """The word of ``text`` each wanted index term came from (its most frequent one), so a stem
    such as "librari" is shown as "libraries". Only words that could stem to a wanted term (they
    share its first letters) are stemmed: a page's whole vocabulary would cost ~1 ms a word."""
    words = Counter(m.group(0).lower() for m in _WORD.finditer(_HAN.sub(" ", text)))
    out: dict[str, str] = {}
    for term in wanted:
        if _HAN.search(term):
            out[term] = term  # Han terms are words as rjieba cut them
            continue
        head = term[:4]
        for word, _n in sorted(((w, n) for w, n in words.items() if w.startswith(head)), key=lambda wn: -wn[1]):
            if stem(word) == term:
                out[term] = word
                break
    return out


def _telling(term: str) -> bool:
    """A term worth showing: a Han word of two or more characters, or a word of three or more
    letters (not a number, not "vs")."""
    if _HAN.search(term):
        return len(term) > 1
    return len(term) > 2 and not term.isdigit() and any(c.isalpha() for c in term)


def _shared_terms(manifest, start: str, others: list[str]) -> dict[str, tuple[str, ...]]:
    """The terms both pages use most, rarest in the vault first (tf x idf), shown as the start
    page's own words."""
    if not others:
        return {}
    lexical = manifest.lexical
    terms = lexical.page_terms([start, *others])  # as tokenised at build time: nothing is stemmed again
    mine = terms.get(start, Counter())
    total = lexical.document_count() or 1
    df = lexical.document_frequencies(sorted(mine))
    shared: dict[str, list[str]] = {}
    for path in others:
        theirs = terms.get(path, Counter())
        weight = {t: math.sqrt(mine[t] * theirs[t]) * math.log(1 + total / df[t])
                  for t in mine.keys() & theirs.keys() if df.get(t) and _telling(t)}
        shared[path] = sorted(weight, key=lambda t: (-weight[t], t))[:TERMS_SHOWN]
    wanted = {t for common in shared.values() for t in common}
    words = _surface("\n".join(t or "" for t in manifest.chunk_texts(start)), wanted) if wanted else {}
    return {path: tuple(words.get(t, t) for t in common) for path, common in shared.items()}
