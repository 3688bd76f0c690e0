"""Fusion: each ranker's list becomes a share of the candidate's score, weighted and summed.

``candidates`` makes the typed candidates (candidates.py) from the rankers' lists, ``rank`` runs the
re-rank steps (steps.py) and orders them, ``select`` keeps one hit per page (or ``per_page``), drops
repeated texts and what the query's text conditions rule out, and ``hits`` makes the results."""
from __future__ import annotations

import re
from typing import Any, Callable, Iterable, Sequence

from ..stores.vectors import is_held
from ..model import Chunk, Hit, index_clean
from ..parse.chunk import shown_heading
from . import evidence
from .candidates import Candidate
from .steps import Candidates, Facts, run_steps
from .tuning import REPEAT_MIN_CHARS, REPEAT_MIN_TOTAL, REPEAT_SPARE


def fusion_scores(ranked: Sequence[tuple[str, float]], settings, floor: float | None = None) -> list[float]:
    """Each candidate's share from one ranker, before that ranker's weight.

    ``rrf``: ``1 / (rrf_k + rank)``, scale-free. ``convex`` (the default): the ranker's own score
    rescaled so its best candidate gets 1 and ``floor`` gets 0; a candidate the ranker did not
    return gets 0. BM25 has a natural floor (0: no match), so its share is ``score / best`` and
    does not depend on how many candidates were fetched; cosine has none (multilingual-e5's
    cosines crowd into 0.7-0.9), so the vector side is min-max scaled over its candidate list
    (``floor=None``). Rank fusion throws away how far apart the scores are: a turn whose cosine
    stands well clear of the rest but which BM25 misses ranks no better than one found mid-list by
    both (Bruch et al., "An analysis of fusion functions for hybrid retrieval", 2023). Measured on
    LoCoMo and the held-aside set in benchmarks/README.md."""
    if settings.fusion == "rrf":
        return [1.0 / (settings.rrf_k + rank) for rank in range(1, len(ranked) + 1)]
    if not ranked:
        return []
    scores = [score for _, score in ranked]
    low = min(scores) if floor is None else min(floor, min(scores))
    spread = max(scores) - low
    return [(score - low) / spread if spread > 0 else 1.0 for score in scores]


def placed(ranked: Sequence[tuple[str, float]], scores: Sequence[float]) -> list[float]:
    """``scores`` (chunks the vector side did not list) as shares on the scale of its list's
    min-max shares (``fusion_scores``): its best 1, its last 0, below that negative, at least -1
    (as far below the last as the best is above it). Below the list is not "as good as the last":
    a chunk only BM25 found that is far from the question in meaning loses on that side, as one
    the vector side found and BM25 ranked low loses on the lexical side."""
    if not ranked:
        return [0.0 for _ in scores]
    listed = [score for _, score in ranked]
    low, spread = min(listed), max(listed) - min(listed)
    if spread <= 0:
        return [0.0 if score < low else 1.0 for score in scores]
    return [max(-1.0, min(1.0, (score - low) / spread)) for score in scores]


def _groups(ranked, turn_ids: set[str] | None):
    """The vector list as it is, or split into notes and transcript turns (ranked and scaled apart,
    so transcript tuning cannot change a note's share)."""
    if turn_ids is None:
        return [ranked]
    return [[r for r in ranked if r[0] not in turn_ids], [r for r in ranked if r[0] in turn_ids]]


_NOT_WORD = re.compile(r"[\W_]+")


def _key(text: str) -> str:
    return " ".join(_NOT_WORD.sub(" ", text.lower()).split())


def repeat_key(text: str) -> tuple[tuple[str, ...], str] | None:
    """A chunk's text as compared for repeats: its paragraphs of some length and its whole body
    (headings left out; case, punctuation and Markdown marks ignored), or None when it has too
    little text to call anything a repeat."""
    lines = [line for line in text.splitlines() if not line.lstrip().startswith("#")]
    paragraphs = tuple(k for k in (_key(p) for p in "\n".join(lines).split("\n\n")) if len(k) >= REPEAT_MIN_CHARS)
    if sum(map(len, paragraphs)) < REPEAT_MIN_TOTAL:
        return None
    return paragraphs, _key("\n".join(lines))


def repeats(key: tuple[tuple[str, ...], str], other: tuple[tuple[str, ...], str]) -> bool:
    """One fact ingested comes back as its raw text and as the source page quoting it: a hit all of
    whose paragraphs a better hit shows (or which shows all of the better hit's) is a repeat."""
    return all(p in other[1] for p in key[0]) or all(p in key[1] for p in other[0])



def candidates(ctx, query: str, lexical, vector, settings, mode: str, turn_ids: set[str] | None = None,
               nearest: dict[str, Any] | None = None, vector_trust: float = 1.0,
               lexical_reach: float = 1.0, lexical_deeper: Sequence[tuple[str, float]] = (),
               vector_more: dict[str, tuple[float, Any]] | None = None) -> Candidates:
    """The rankers' lists fused into candidates. ``turn_ids``: in a vault with transcripts, which
    vector candidates are transcript turns (scaled apart from notes); ``nearest``: chunk id ->
    rankers.Nearest for the vector candidates. A chunk whose row is gone (a build committed during
    this search) is dropped.

    ``vector_trust``: the share of the vault's chunks the vector side could see (its coverage while
    vectors are still being embedded), which scales its weight. Its scores are scaled over its own
    list, so while only a few pages have vectors the nearest of those few got a full share whatever
    it was: in a new vault's first minutes "compress a folder into an archive" ranked the `apkeep`
    page first, level with `7za`.

    ``lexical_reach``: the share of the query the lexical side can match at all
    (rankers.lexical_reach), which scales its weight the same way: the best of BM25's list gets a
    full share however little of the query it matched, so a Chinese question about English pages
    ranked the pages that say "npm" most often first.

    ``lexical_deeper`` (BM25's list beyond ``lexical``) and ``vector_more`` (chunk id -> (vector
    score, rankers.Nearest) for note chunks BM25 found and the vector side did not return): with
    ``convex`` fusion every candidate is scored by both sides (``filled`` in its components), not
    given 0 by the side whose list it missed, each on that side's own scale: ``score / best`` for
    BM25, the vector list's min-max (``placed``: below its last, negative). A candidate BM25 did not list got
    0 where the 50th listed got ~half the best (on pages that share their words, npm's manual,
    BM25's scores are flat), so being in BM25's list was worth more than what it said about the
    text; docs/search.md "Every candidate scored by both sides"."""
    nearest = nearest or {}
    fill = settings.fusion == "convex"
    on_list = {cid for cid, _ in vector}
    more = {cid: got for cid, got in (vector_more or {}).items() if cid not in on_list} if fill else {}
    cache = ctx.cache
    # hybrid only: which candidates are in another script than the query (the language steps)
    other: set[str] = set()
    if mode == "hybrid" and evidence.language_steps_on():
        other = evidence.foreign(cache.manifest, query, list(dict.fromkeys([cid for cid, _ in vector] +
                                                                     [cid for cid, _ in lexical])))
    found: Candidates = {}
    for side, groups, weight, floor, trust in (("bm25", [lexical], settings.weight_lexical, 0.0, lexical_reach),
                                               ("vector", _groups(vector, turn_ids), settings.weight_vector, None,
                                                vector_trust)):
        for g, ranked in enumerate(groups):
            listed = len(ranked)
            shares = [share * trust for share in fusion_scores(ranked, settings, floor)]
            if side == "vector" and g == 0 and more and ranked:  # notes BM25 alone found, on the list's scale
                ranked = list(ranked) + [(cid, score) for cid, (score, _) in more.items()]
                shares += [share * trust for share in placed(ranked[:listed], [s for _, s in ranked[listed:]])]
            for rank, ((cid, score), share) in enumerate(zip(ranked, shares), 1):
                c = found.get(cid)
                if c is None:
                    if rank > listed:
                        continue
                    c = found[cid] = Candidate(cid, foreign=cid in other)
                if side == "bm25":
                    c.bm25_rank, c.bm25 = rank, round(score, 6)
                elif rank > listed:  # a chunk BM25 found, scored by the vector side
                    c.vector, c.vector_share = round(score, 6), share
                    why = more[cid][1]
                    c.vector_whole = round(why.whole, 6)
                    c.vector_passage = None if why.passage is None else round(why.passage, 6)
                    c.filled = "vector"
                else:
                    c.vector_rank, c.vector = rank, round(score, 6)
                    c.vector_share = share
                    if cid in nearest:
                        why = nearest[cid]
                        c.vector_whole = round(why.whole, 6)
                        c.vector_passage = None if why.passage is None else round(why.passage, 6)
                c.fused += weight * share
                if c.foreign:  # what ImputeLexical reads
                    c.shares[side] = share
    if fill and lexical and lexical[0][1] > 0:  # vector candidates BM25 scored below its list
        deeper = dict(lexical_deeper)
        for cid, c in found.items():
            if c.bm25 is None and cid in deeper:
                share = deeper[cid] / lexical[0][1] * lexical_reach
                c.bm25, c.filled = round(deeper[cid], 6), "bm25"
                c.fused += settings.weight_lexical * share
                if c.foreign:
                    c.shares["bm25"] = share
    light = cache.manifest.paths_by_id(found)  # light rows: full chunks are read for the final hits only
    kept: Candidates = {}
    for cid, c in found.items():
        if cid in light:
            c.path, c.speakers, c.ordinal = light[cid]
            kept[cid] = c
    return kept


def impute_pending(found: Candidates, vectors_of: Callable, settings, trust: float) -> None:
    """A candidate the lexical side found whose vector is not embedded yet (a page written a moment
    ago, its vectors pending) would get 0 on the vector side and lose to pages only near in meaning:
    "right after write_page, a search for its own rare word" ranked it below them. It is ranked by
    what it has: its lexical share stands for the vector side too (the step says so). A candidate
    with a vector the vector side did not return keeps its 0: that is a judgement, not a gap."""
    if settings.fusion != "convex" or settings.weight_lexical <= 0:
        return
    lonely = [cid for cid, c in found.items() if c.vector_rank is None and c.bm25_rank is not None]
    if not lonely:
        return
    have = vectors_of(lonely)
    for cid in lonely:
        if cid not in have:
            c = found[cid]
            c.fused *= (settings.weight_lexical + settings.weight_vector * trust) / settings.weight_lexical
            c.steps.append("vector_pending")


def rank(ctx, query: str, found: Candidates, settings, mode: str, filters=None,
         vectors_of: Callable | None = None) -> list[Candidate]:
    """The re-rank steps over ``found``, then every candidate best first (ties by chunk id).
    ``filters``: the search's (stores.filters.Filters; pulled-in pages must pass them); ``vectors_of``: chunk
    ids -> {id: unit vector across the language axis} (rankers.unit_vectors), when the vector side ran."""
    facts = Facts(query, mode, settings, ctx.cache, filters, vectors_of,
                  turns=any(c.turn for c in found.values()), two_scripts=any(c.foreign for c in found.values()))
    found = run_steps(found, facts)
    return sorted(found.values(), key=lambda c: (-c.score, c.id))


def select(cache, ranked: Sequence[Candidate], limit: int, per_page: int, hidden: frozenset[str] = frozenset(),
           text_ok: Callable[[Chunk], bool] | None = None,
           page_ok: Callable[[str], bool] | None = None) -> list[tuple[Candidate, Chunk]]:
    """At most ``limit`` candidates with their chunks, best first: ``per_page`` per page (0: no
    cap), never a ``hidden`` page, never a text a better hit shows (a source page quoting its raw
    file). ``page_ok``/``text_ok``: conditions of the query checked after ranking (a page, a
    chunk); a candidate that fails one takes no place in its page's quota. Candidates are read
    until ``limit`` are chosen (or none is left): a few spare were read once, and a search among
    pages that repeat whole sections (npm's config options) returned 7 hits of the 10 asked for."""
    seen: dict[str, int] = {}
    chunks: dict[str, Chunk] = {}
    read_to = 0
    out: list[tuple[Candidate, Chunk]] = []
    shown: list[tuple[tuple[str, ...], str]] = []
    for i, c in enumerate(ranked):
        if len(out) >= limit:
            break
        if c.path in hidden or (per_page and seen.get(c.path, 0) >= per_page):
            continue
        if page_ok is not None and not page_ok(c.path):
            continue
        if i >= read_to:  # chunks read ahead in batches: the limit and a few spare for the repeats dropped
            read_to = i + (100 if text_ok is not None else limit + min(limit, REPEAT_SPARE))
            chunks.update(cache.manifest.chunks_by_id(d.id for d in ranked[i:read_to] if d.id not in chunks))
        chunk = chunks.get(c.id)
        if chunk is None:  # replaced by a build that committed during this search: it no longer exists
            continue
        if text_ok is not None and not text_ok(chunk):
            continue
        text = repeat_key(chunk.text)
        if text is not None and any(repeats(text, other) for other in shown):
            # the same text a better hit shows (a source page quoting its raw file): not shown, and
            # not counted in its page's quota, so the page's next chunk, saying something else, may be
            continue
        if text is not None:
            shown.append(text)
        seen[c.path] = seen.get(c.path, 0) + 1
        out.append((c, chunk))
    return out


_PARAGRAPH = re.compile(r"\n\s*\n")
_HEADING_ONLY = re.compile(r"^\s*#{1,6}\s")


def lexical_passage(text: str, query: str) -> str | None:
    """The paragraph (or list item) of ``text`` holding the most of ``query``'s words, in the
    passage form (cleaned, one line), when it is not the chunk's first: what a hit shows and points
    at when no vector says which part is nearest (``--mode lexical``, a vault with no vectors yet)."""
    from ..stores.analysis import tokens
    wanted = set(tokens(query))
    if not wanted:
        return None
    pieces: list[str] = []
    for block in _PARAGRAPH.split(text.strip()):
        lines = block.splitlines()
        if len(lines) > 1 and all(re.match(r"^\s*(?:[-*+]|\d+[.)])\s", line) for line in lines if line.strip()):
            pieces.extend(lines)  # a list: each item is a piece
            continue
        run: list[str] = []  # a heading right above its paragraph (no blank line) is a piece of its own:
        for line in lines:  # the passage is the paragraph, the heading is where it lives
            if _HEADING_ONLY.match(line):
                if run:
                    pieces.append("\n".join(run))
                pieces.append(line)
                run = []
            else:
                run.append(line)
        if run:
            pieces.append("\n".join(run))
    best, best_found = None, 0
    for i, piece in enumerate(pieces):
        if _HEADING_ONLY.match(piece) and "\n" not in piece.strip():
            continue  # a heading alone: the chunk's label, not a passage
        found = len(wanted & set(tokens(piece)))
        if found > best_found:
            best, best_found = i, found
    if best is None or best == 0 or (best == 1 and _HEADING_ONLY.match(pieces[0])):
        return None  # the chunk's first paragraph: the hit already starts there
    shown = " ".join(index_clean(pieces[best]).split())
    return shown or None


def hits(ctx, chosen: Sequence[tuple[Candidate, Chunk]], uri: Callable[..., str],
         nearest: dict[str, Any] | None = None, query: str | None = None) -> list[Hit]:
    """The hits for ``chosen``: each with its passage (the part nearest the query by meaning, else,
    with ``query``, the paragraph holding most of its words), the lines it spans in its file and a
    link that opens it (``uri(path, heading)``)."""
    nearest = nearest or {}
    cache = ctx.cache
    manifest = cache.manifest
    said = manifest.passage_texts(nearest[c.id].passage_id for c, _ in chosen
                               if c.id in nearest and nearest[c.id].passage_id is not None)
    lines = chunk_lines(manifest, [chunk for _, chunk in chosen])
    out: list[Hit] = []
    for c, chunk in chosen:
        found = nearest.get(c.id)
        passage = said.get(found.passage_id) if found is not None else None
        if passage is None and found is None and query:
            passage = lexical_passage(chunk.text, query)
        if passage is not None and found is not None and is_held(found.passage_id) \
                and passage.startswith(f"{chunk.title}: "):
            # a note's passage was embedded with its page title in front (index/passages.py)
            passage = passage[len(chunk.title) + 2:]
        heading_path = shown_heading(chunk.text, chunk.heading_path, passage) if passage else chunk.heading_path
        start, end = lines.get(c.id, (None, None))
        line = start
        if start is not None and passage:
            line = start + passage_offset(chunk.text, passage)
        heading = heading_path[-1] if heading_path and tuple(heading_path) != (chunk.title,) else None
        out.append(Hit(c.id, chunk.path, chunk.title, heading_path, chunk.text, c.score, c.components(),
                       c.found_by, uri(chunk.path, heading), chunk.type, chunk.status, chunk.blocks, passage,
                       start_line=start, end_line=end, line=line, steps=tuple(c.steps)))
    return out


def chunk_lines(manifest, chunks: Iterable[Chunk]) -> dict[str, tuple[int, int]]:
    """Chunk id -> (first, last) 1-based line in its file of the text it shows (blank lines at
    either end left out). A chunk's span indexes its page's body, which starts after the
    frontmatter (``Page.body_line``): both are read from the page record the index keeps. A chunk
    whose text is not where its span says (a record from an older index) gets none."""
    chunks = list(chunks)
    paths = sorted({c.path for c in chunks})
    bodies: dict[str, tuple[int, str]] = {}
    for path, body_line, body in manifest.page_bodies(paths):
        if isinstance(body, str) and isinstance(body_line, int):
            bodies[path] = (body_line, body)
    out: dict[str, tuple[int, int]] = {}
    for c in chunks:
        if c.path not in bodies or not c.text.strip():
            continue
        body_line, body = bodies[c.path]
        if body[c.start:c.end] != c.text:
            continue
        first = c.start + len(c.text) - len(c.text.lstrip())
        last = c.start + len(c.text.rstrip()) - 1
        out[c.id] = (body_line + body.count("\n", 0, first) + 1, body_line + body.count("\n", 0, last) + 1)
    return out


def passage_offset(text: str, passage: str) -> int:
    """How many lines below the first shown line of ``text`` the ``passage`` starts (0 when it
    cannot be placed: a passage is the embedded form, whitespace and bold marks gone)."""
    probe = " ".join(index_clean(passage).split())[:20]
    if probe:
        for i, line in enumerate(text.strip().splitlines()):
            if probe in " ".join(index_clean(line).split()):
                return i
    return 0
