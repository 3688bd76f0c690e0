"""Candidates from each ranker: BM25 (FTS5) and vectors (FAISS), each a ranked (chunk id, score) list.

Transcript tuning stays with transcripts: speakers' names are left out of the vector query only
for transcript turns (they pull the vector side towards turns that merely address that person;
the speaker boost uses the names instead). Ordinary notes are always scored against the query
exactly as the user wrote it.
"""
from __future__ import annotations

import re
from collections import Counter
from typing import NamedTuple

import numpy as np

from .tuning import CHECK_TOP, PASSAGE_LOOK, PASSAGE_SHARE, SHORT_PASSAGE

_WORD = re.compile(r"[^\W_]+", re.UNICODE)


class Nearest(NamedTuple):
    """Why a chunk got its vector score: its whole-chunk cosine and its nearest passage's (None
    when it has no passages, or they are not all embedded yet), and that passage's id."""

    whole: float
    passage: float | None
    passage_id: int | None


def lexical(cache, query: str, n: int, filters, exclude) -> list[tuple[str, float]]:
    """BM25's top ``n`` (the lexical store), on this thread's connection in one committed state: a
    hybrid search runs it on the vault's worker threads (``cache.runtime.pool()``)."""
    with cache.reading() as manifest:
        return manifest.lexical.search(query, n, filters, exclude=exclude)


def lexical_and_reach(cache, query: str, n: int, filters, exclude) -> tuple[list[tuple[str, float]], float]:
    """``lexical``, and how much of the query the lexical side can match (``lexical_reach``; 1.0 when
    nothing was found), read in the same committed state."""
    with cache.reading() as manifest:
        index = manifest.lexical  # one object for both questions: it may keep what the first read
        found = index.search(query, n, filters, exclude=exclude)
        return found, (_reach(index, query) if found else 1.0)


def lexical_reach(cache, query: str) -> float:
    """How much of ``query`` the lexical side can match at all: the share of its terms' letters (a
    Han character counting ``LETTERS_PER_HAN``) in a script of which the index holds at least one
    of the query's terms. A Chinese question about English pages has only its stray Latin words
    ("npm") to match, and BM25 ranked the chunks that hold them as if they answered the whole
    question; its share in fusion is scaled by this (fusion.candidates). The mirror case, an
    English question about Chinese pages, is the same rule. A vault that holds some of the
    question's words in each of its scripts gets 1: a word no note holds ("halfway", or a Chinese
    word jieba cut otherwise) is not the lexical side's blindness to a script, and scaling by it
    cost tldr's Chinese questions over Chinese pages (README "Cross-script questions")."""
    with cache.reading() as manifest:
        return _reach(manifest.lexical, query)


def _reach(index, query: str) -> float:
    from ..stores.analysis import terms
    from .tuning import LETTERS_PER_HAN, REACH_MIN
    if REACH_MIN >= 1.0:
        return 1.0
    asked = terms(query)
    if not asked:
        return 1.0
    held = index.document_frequencies(asked)
    mass = {"han": 0, "other": 0}
    seen = {"han": False, "other": False}
    for term in asked:
        han = len(_HAN.findall(term))
        side = "han" if han else "other"
        mass[side] += len(term) - han + han * LETTERS_PER_HAN
        seen[side] = seen[side] or held.get(term, 0) > 0
    total = mass["han"] + mass["other"]
    found = sum(mass[side] for side in mass if seen[side])
    return max(REACH_MIN, found / total) if total else 1.0


_HAN = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")


def words(text: str) -> set[str]:
    return {w.lower() for w in _WORD.findall(text)}


def names_in(speaker: str, query_words: set[str]) -> bool:
    """A speaker is named in the query when one of their name's words (3+ letters) is in it."""
    return any(len(part) >= 3 and part.lower() in query_words for part in _WORD.findall(speaker))


def transcript_query(query: str, speakers, settings) -> str | None:
    """The query to embed for transcript turns when it names a speaker (None: the same query)."""
    if not settings.speaker_strip or not speakers:
        return None
    names = {part.lower() for s in speakers for part in _WORD.findall(s) if len(part) >= 3}
    kept = [tok for tok in query.split() if not (_WORD.findall(tok) and _WORD.findall(tok)[0].lower() in names)]
    stripped = " ".join(kept)
    return stripped if stripped != query and _WORD.search(stripped) else None


def vector(cache, index, qvec, tvec, n: int, excluded: set[int], allowed,
           has_turns: bool, query_script: str | None = None) -> tuple[list[tuple[int, float]], set[int], dict[int, Nearest]]:
    """Chunk vids ranked by vector similarity, which of them are transcript turns, and for each
    ranked chunk its whole-chunk cosine and nearest passage (``Nearest``).

    In a vault with transcripts the two kinds are ranked apart, each its own top ``n``: ordinary
    notes by the query as written (``qvec``), turns by ``tvec`` (the query without speakers' names)
    when given. So nothing tuned for transcripts can move a note in or out of the candidates, and
    fusion scales each group by its own scores (see fusion.fuse). ``query_script``: the query's
    script (evidence.script), for the language axis of a one-script vault (language.axis_for)."""
    from .language import axis_for
    lang = axis_for(cache, index, query_script)
    why: dict[int, Nearest] = {}
    ranked = _ranking(cache, index, qvec, n if not has_turns else 2 * n, excluded, allowed, lang, why)
    if not has_turns:
        return ranked, set(), why
    turns = cache.manifest.transcript_vids(v for v, _ in ranked)
    notes = [(v, s) for v, s in ranked if v not in turns][:n]
    said_why = why
    if tvec is not None:
        said_why = {}
        ranked = _ranking(cache, index, tvec, 2 * n, excluded, allowed, lang, said_why)
        turns = cache.manifest.transcript_vids(v for v, _ in ranked)
    said = [(v, s) for v, s in ranked if v in turns][:n]
    merged = sorted(notes + said, key=lambda h: (-round(h[1], 6), h[0]))
    return merged, {v for v, _ in said}, {v: (why if v not in turns else said_why)[v] for v, _ in merged}


def scores_of(cache, index, qvec, vids, query_script: str | None = None) -> dict[int, tuple[float, Nearest]]:
    """The vector side's score for given note chunks it did not return (vid -> (score, Nearest)),
    computed as ``_ranking`` computes it (the whole cosine and the best held passage's, across the
    same language axis): fusion scores every candidate on both sides (fusion.candidates). A chunk
    whose vector is not stored yet is left out (it is pending, not far)."""
    from .language import axis_for
    vids = list(vids)
    if not vids:
        return {}
    lang = axis_for(cache, index, query_script)
    whole = dict(_similar(index, qvec, lang, ids=vids))
    held = _held_best(cache, index, qvec, lang, list(whole), whole, len(whole))
    out: dict[int, tuple[float, Nearest]] = {}
    for vid, cos in whole.items():
        passage, pid = held.get(vid, (None, None))
        out[vid] = (_combined(cos, passage), Nearest(cos, passage, pid))
    return out


def _combined(whole: float, passage: float | None) -> float:
    """A chunk's vector score: the mean (``PASSAGE_SHARE``) of its whole cosine and its best passage's."""
    return (1.0 - PASSAGE_SHARE) * whole + PASSAGE_SHARE * (whole if passage is None else passage)


def unit_vectors(cache, index, ids) -> dict[str, np.ndarray]:
    """Chunk id -> its stored vector across the vault's language axis, at unit length, as the vector
    side compares them (chunks whose vector is not stored yet are left out)."""
    from .language import axis
    vids = cache.manifest.vids_by_id(ids)
    order = sorted(vids)
    rows = index.vector_rows([vids[c] for c in order])
    lang = axis(cache, index)
    if lang is not None:
        rows = lang.project(rows)
    norms = np.linalg.norm(rows, axis=1)
    return {c: rows[i] / norms[i] for i, c in enumerate(order) if norms[i] > 1e-6}


def _similar(index, qvec, lang, ids=None, k: int = 0, allowed=None) -> list[tuple[int, float]]:
    """Cosines of the query with the top ``k`` searched vectors (or with the stored vectors of
    ``ids``, all of one kind, those present), measured across the language axis when the vault has
    one (language.py: FAISS ranks by the projected numerator, each candidate's own projected norm
    is applied after)."""
    q = lang.query(qvec) if lang is not None else qvec
    if ids is None:
        found = index.search(q, k, allowed)
        if lang is None or not found:
            return found
        ids = [i for i, _ in found]
        rows, numerators = index.vector_rows(ids), [s for _, s in found]
    else:
        rows = index.vector_rows(ids)
        present = np.flatnonzero(np.any(rows != 0, axis=1))  # a row of zeros: not stored (yet)
        ids, rows = [ids[i] for i in present], rows[present]
        numerators = rows @ np.asarray(q, dtype=np.float32).reshape(-1)
        if lang is None:
            return list(zip(ids, numerators.tolist()))
    rescaled = lang.rescale(qvec, numerators, rows)
    return sorted(zip(ids, rescaled.tolist()), key=lambda h: (-round(h[1], 6), h[0]))


def _held_best(cache, index, qvec, lang, vids, whole: dict[int, float] | None = None,
               n: int = 0) -> dict[int, tuple[float, int]]:
    """Each note chunk's best passage similarity, from its held passage vectors (index/passages.py:
    a note's passages are read back for the candidates, never searched). A chunk whose passages
    are not all embedded yet gets none (it ranks by its whole vector, as before it had passages):
    a best over some of them would rank it on a scale of its own. With ``whole`` (chunk vid ->
    whole cosine) and ``n``: only the ``CHECK_TOP`` x ``n`` best-scored chunks whose nearest passage
    lifts them above their whole cosine are checked for content (``_with_content``): a passage
    below the whole lifts nothing, and a chunk far down cannot reach the top ``n``."""
    owner = cache.vector_store.held_passages(vids)
    if not owner:
        return {}
    ranked: dict[int, list[tuple[float, int]]] = {}
    for pid, score in _similar(index, qvec, lang, ids=list(owner)):
        ranked.setdefault(owner[pid], []).append((score, pid))
    owned = Counter(owner.values())
    complete = {vid: sorted(found, key=lambda sp: (-sp[0], sp[1])) for vid, found in ranked.items()
                if len(found) == owned[vid]}
    if whole is None or SHORT_PASSAGE <= 0:
        return _with_content(cache, complete)
    lifting = sorted((vid for vid, found in complete.items() if found[0][0] > whole.get(vid, 1.0)),
                     key=lambda vid: (-(whole[vid] + complete[vid][0][0]), vid))[:CHECK_TOP * n]
    checked = _with_content(cache, {vid: complete[vid] for vid in lifting})
    return {vid: (checked.get(vid) if vid in lifting else found[0]) for vid, found in complete.items()
            if vid not in lifting or vid in checked}


def _with_content(cache, ranked: dict[int, list[tuple[float, int]]]) -> dict[int, tuple[float, int]]:
    """Each chunk's best passage that carries some meaning: a passage with fewer than
    ``SHORT_PASSAGE`` letters of its own (a lone "Keyboard shortcuts:", a list item of one word) is
    embedded as little more than its page title and wins by that alone (issue 52). The best of the
    chunk's ``PASSAGE_LOOK`` nearest passages that is long enough is taken; a chunk with none ranks
    by its whole vector."""
    if SHORT_PASSAGE <= 0:
        return {vid: found[0] for vid, found in ranked.items()}
    from .priors import known_chars

    def own_texts(pids):  # a held passage is "<page title>: <text>": its title is not its content
        return {pid: (t.split(": ", 1)[1] if ": " in t else t)
                for pid, t in cache.manifest.passage_texts(pids).items()}
    best: dict[int, tuple[float, int]] = {}
    open_ = dict(ranked)  # chunks whose best passage with content is not known yet
    for look in range(PASSAGE_LOOK):  # the nearest first: most are long enough, so few texts are read
        chars = known_chars([found[look][1] for found in open_.values() if look < len(found)], own_texts)
        for vid in list(open_):
            found = open_[vid]
            if look >= len(found):
                del open_[vid]
                continue
            if chars.get(found[look][1], 0) >= SHORT_PASSAGE:
                best[vid] = found[look]
                del open_[vid]
        if not open_:
            break
    return best


def _ranking(cache, index, qvec, n: int, excluded: set[int], allowed, lang=None,
             why: dict[int, Nearest] | None = None) -> list[tuple[int, float]]:
    """Chunk vids ranked by the mean of the whole-chunk similarity and the best passage's
    (index/passages.py, ``PASSAGE_SHARE``); a chunk without passages scores its whole-chunk cosine.

    One FAISS search over the searched vectors: chunks and transcript passages. A transcript turn
    found by only one kind gets the other from its stored vector (chunk) or, for passages not among
    the hits, the lowest passage score seen. A note's passages are held, not searched: the chunks
    found get their best passage from the held vectors. ``lang``: the vault's language axis, or None.
    ``why``: filled with each returned chunk's ``Nearest``."""
    k = 4 * (n + len(excluded))
    raw = _similar(index, qvec, lang, k=k, allowed=allowed)
    owners = cache.manifest.passage_owners(i for i, _ in raw)
    whole: dict[int, float] = {}
    best: dict[int, float] = {}
    nearest: dict[int, int] = {}  # chunk vid -> its best passage's id
    for i, score in raw:
        if i in owners:
            vid = owners[i]
            if score > best.get(vid, -2.0):
                best[vid], nearest[vid] = score, i
        else:
            whole[i] = score
    candidates = (set(whole) | set(best)) - excluded
    floor, has_passages = -1.0, set()
    if best:  # transcript turns
        floor = min(s for i, s in raw if i in owners) if len(raw) >= k else -1.0
        whole.update(_similar(index, qvec, lang, ids=[v for v in candidates if v not in whole]))
        has_passages = cache.vector_store.chunks_with_passages(v for v in candidates if v not in best)
    held = _held_best(cache, index, qvec, lang, [v for v in candidates if v in whole and v not in best], whole, n)
    for vid, (score, pid) in held.items():
        best[vid], nearest[vid] = score, pid
    scored = []
    passage: dict[int, float | None] = {}  # the passage score each chunk got (None: it has none)
    for v in candidates:
        if v not in whole:
            continue  # a passage whose chunk vector is not stored yet (embedding under way)
        # a turn none of whose passages was among the hits gets the lowest passage score seen
        passage[v] = best.get(v, floor if v in has_passages else None)
        scored.append((v, _combined(whole[v], passage[v])))
    scored.sort(key=lambda h: (-round(h[1], 6), h[0]))
    scored = scored[:n]
    if why is not None:
        for v, _ in scored:
            why[v] = Nearest(whole[v], passage[v], nearest.get(v))
    return scored
