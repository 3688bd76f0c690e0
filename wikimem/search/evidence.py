"""Page-level evidence and language balance: re-rank steps for ordinary notes (issue 17).

One best chunk is weak evidence for a page on real documentation: the chunk that holds the
answer ("- Extract files matching a pattern: `tar xf … --wildcards`") often lacks the words that
say what the page is about (its title, its opening description), and a page whose several chunks
all match is likelier to be the right one than a page with one lucky chunk. These steps score a
candidate chunk with its page's other evidence:

- ``page_support``: a chunk gains ``share`` of the best other candidate chunk of its page (the
  order of chunks within a page never changes: the best chunk gains least).
- ``title_bonus``: a chunk gains ``weight`` when the query contains every word of its page's title
  (or of one alias) — "how do I rebase with git" names the page "git rebase".
- ``impute_lexical`` (hybrid): BM25 cannot see a candidate written in another script than the
  query, so that candidate's missing lexical share is imputed from its vector share. The vector
  side itself measures similarity across the vault's language axis (language.py), so such
  candidates reach the vector list at all.
- ``translations`` / ``below_translations`` (hybrid): a candidate in another script whose text is
  a translation of a candidate in the query's script ranks just below it. Across the language
  axis a page and its translation score alike, so with the imputed share the translation won
  about half of those ties; the reader asked in one language and gets the page in it first, the
  translation next. That is what lets the imputation be generous to pages that exist only in the
  other language.

Transcript turns (chunks with speakers) are left alone: there the unit of retrieval is the turn,
and the transcript steps (steps.py) handle its context. Each step is off when its constant is 0,
but the translation step, which is off above 1 (``TWIN_SIMILARITY``); it runs only with the
imputation on (``CROSS_LEXICAL`` > 0), the step it corrects.
"""
from __future__ import annotations

import json
import re
from typing import Iterable

import numpy as np

from ..index.analysis import tokens

# Measured in benchmarks/README.md ("tldr pages"); a step that hurt any set stays off (0).
PAGE_SHARE = 0.0  # off: +0.011 MRR@10 on tldr, but examples/ held-aside 0.895 -> 0.885
TITLE_WEIGHT = 0.0  # off: no gain on tldr (0.682 -> 0.683), +0.004 on examples/
CROSS_LEXICAL = 0.8  # on, with the language axis and translations ranked below their originals (benchmarks/README.md)
# Two candidates are one text in two languages when each is the other's nearest candidate across
# the scripts and their cosine (across the language axis) is at least this. Measured on
# multilingual-e5-small over tldr's 1,162 page pairs: 99 % of translations are at >= 0.937, and 95 %
# of the nearest non-translations below 0.938 (benchmarks/README.md, "Session 7").
TWIN_SIMILARITY = 0.94

_HAN = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")
_LATIN = re.compile(r"[A-Za-z\u00c0-\u024f]")
_CODE = re.compile(r"`[^`\n]*`|\{\{[^}]*\}\}|<https?://[^>]*>|https?://\S+")
LETTERS_PER_HAN = 5  # a Han character carries about as much meaning as a five-letter run of Latin


def script(text: str) -> str:
    """``"han"``, ``"latin"`` or ``""``: whichever carries more of the prose's meaning, counting a
    Han character as ``LETTERS_PER_HAN`` Latin letters; ``""`` for prose with neither (numbers, a
    table of figures, another alphabet), which belongs to no side. Code spans, placeholders and
    URLs are left out (a Chinese page's commands are still written in ASCII)."""
    prose = _CODE.sub(" ", text)
    han = len(_HAN.findall(prose))
    latin = len(_LATIN.findall(prose))
    if not han and not latin:
        return ""
    return "han" if han * LETTERS_PER_HAN >= latin else "latin"


_SCRIPTS: dict[int, str] = {}


def script_of(text: str) -> str:
    """``script(text)``, memoised for this process by the text's hash: a chunk's text is read
    again by every search that finds it and by every estimate of the language axis."""
    key = hash(text)
    got = _SCRIPTS.get(key)
    if got is None:
        got = script(text)
        if len(_SCRIPTS) < 500_000:
            _SCRIPTS[key] = got
    return got


_SCRIPT_OF_ID: dict[str, str] = {}  # chunk id -> the script of its text (the id hashes the text)


def foreign(db, query: str, ids: list[str]) -> set[str]:
    """The chunk ids among ``ids`` written in another script than ``query`` (transcript turns are
    never counted: their steps live in steps.py). Each chunk's script is found once per process:
    a chunk id hashes its path, headings and body, so it cannot come to name other text. Whether
    it is a turn is read each time: that also depends on its page's frontmatter."""
    want = script(query)
    out: set[str] = set()
    if not want:  # a query with no letters is in no language: nothing is foreign to it
        return out
    ids = list(dict.fromkeys(ids))
    for start in range(0, len(ids), 500):
        part = ids[start:start + 500]
        marks = ",".join("?" * len(part))
        notes = [cid for cid, speakers in db.execute(f"SELECT id, speakers FROM chunks WHERE id IN ({marks})", part)
                 if speakers in ("", "[]")]
        unknown = [cid for cid in notes if cid not in _SCRIPT_OF_ID]
        if unknown:
            marks = ",".join("?" * len(unknown))
            for cid, text in db.execute(f"SELECT id, text FROM chunks WHERE id IN ({marks})", unknown):
                if len(_SCRIPT_OF_ID) >= 500_000:
                    _SCRIPT_OF_ID.clear()  # a bound, not a working set: refilled by the next searches
                _SCRIPT_OF_ID[cid] = script(text)
        out.update(cid for cid in notes if cid in _SCRIPT_OF_ID and _foreign_to(_SCRIPT_OF_ID[cid], want))
    return out


def _foreign_to(side: str, want: str) -> bool:
    # text without prose (a chunk of code examples, figures) is ASCII to BM25: visible to a Latin
    # query, foreign to a Chinese one
    return side != want and not (side == "" and want == "latin")


def impute_lexical(parts, shares: dict[str, dict[str, float]], weight_lexical: float,
                   share: float | None = None) -> None:
    """BM25 cannot match a Chinese question against English text (or only on stray ASCII words),
    so its silence about a page in another script is no evidence against it: that candidate's
    lexical share is missing, not 0. It is taken to be ``share`` times the candidate's vector
    share (0 <= share <= 1; below 1 because it is a guess, not a match), unless BM25's own share
    is higher. ``shares``: chunk id -> {"bm25": share, "vector": share} for the candidates in
    another script than the query."""
    share = CROSS_LEXICAL if share is None else share
    if share <= 0:
        return
    for cid, got in shares.items():
        gain = share * got.get("vector", 0.0) - got.get("bm25", 0.0)
        if gain > 0:
            parts[cid]["fused"] += weight_lexical * gain
            parts[cid]["imputed"] = round(weight_lexical * gain, 8)


def translations(vectors: dict[str, np.ndarray], other: set[str],
                 threshold: float | None = None) -> dict[str, str]:
    """Which candidates in another script than the query are translations of one in its script:
    candidate id -> the id of its original. ``vectors``: candidate id -> unit vector across the
    language axis, for the candidates of both scripts (ordinary notes only); ``other``: those in
    another script. A pair must be mutual nearest neighbours across the two groups (among this
    search's candidates) and at least ``threshold`` similar: a page near several in the other
    language is a neighbour, not a translation. A second candidate whose nearest original is
    already paired, as near, is that original's second translation. ``threshold`` above 1: off."""
    threshold = TWIN_SIMILARITY if threshold is None else threshold
    theirs = sorted(c for c in other if c in vectors)
    ours = sorted(c for c in vectors if c not in other)
    if not theirs or not ours or threshold > 1.0:
        return {}
    # einsum, not a BLAS product: OpenBLAS's worker threads keep spinning after a matrix product
    # and slowed the next query embedding by ~60 % (measured: 17.5 -> 29.8 ms); ~1 ms either way
    sims = np.einsum("ik,jk->ij", np.stack([vectors[c] for c in theirs]), np.stack([vectors[c] for c in ours]))
    nearest_ours = sims.argmax(axis=1)
    nearest_theirs = sims.argmax(axis=0)
    close = sims[np.arange(len(theirs)), nearest_ours] >= threshold
    pairs = {theirs[i]: ours[j] for i, j in enumerate(nearest_ours) if close[i] and nearest_theirs[j] == i}
    originals = set(pairs.values())
    # a page translated twice (zh/ and zh_TW/): the second is as near its original as the first
    pairs.update((theirs[i], ours[j]) for i, j in enumerate(nearest_ours)
                 if close[i] and theirs[i] not in pairs and ours[j] in originals)
    return pairs


def below_translations(scores: dict[str, float], parts, twins: dict[str, str],
                       paths: dict[str, str]) -> None:
    """Rank each translation just below its original when it would rank above it (in place); the
    original's page is recorded in ``parts[cid]["translation_of"]`` either way."""
    for cid, original in twins.items():
        if cid not in scores or original not in scores:
            continue
        parts[cid]["translation_of"] = paths.get(original)
        ceiling = scores[original] - 1e-6
        if scores[cid] > ceiling:
            scores[cid] = ceiling


def _title_words(db, paths: Iterable[str]) -> dict[str, list[set[str]]]:
    """Each page's title and aliases as sets of index terms (empty names dropped)."""
    paths = sorted(set(paths))
    out: dict[str, list[set[str]]] = {}
    for start in range(0, len(paths), 500):
        part = paths[start:start + 500]
        marks = ",".join("?" * len(part))
        for path, title, aliases in db.execute(f"SELECT path, title, aliases FROM files WHERE path IN ({marks})", part):
            names = [title or ""]
            try:
                names += [a for a in json.loads(aliases or "[]") if isinstance(a, str)]
            except ValueError:
                pass
            out[path] = [words for words in (set(tokens(n)) for n in names) if words]
    return out


def page_evidence(db, query: str, scores: dict[str, float], parts, light,
                  share: float | None = None, weight: float | None = None) -> None:
    """Add page support and the title bonus to ``scores`` (chunk id -> score) in place, recording
    them in ``parts[cid]["page"]``. ``light``: chunk id -> (path, speakers, ordinal)."""
    share = PAGE_SHARE if share is None else share
    weight = TITLE_WEIGHT if weight is None else weight
    if share <= 0 and weight <= 0:
        return
    by_page: dict[str, list[str]] = {}
    for cid in scores:
        row = light.get(cid)
        if row and not row[1]:  # ordinary notes only
            by_page.setdefault(row[0], []).append(cid)
    asked = set(tokens(query)) if weight > 0 else set()
    titles = _title_words(db, by_page) if weight > 0 else {}
    for path, cids in by_page.items():
        base = {cid: scores[cid] for cid in cids}
        named = weight if any(words <= asked for words in titles.get(path, ())) else 0.0
        for cid in cids:
            others = [s for c, s in base.items() if c != cid]
            gain = (share * max(others) if others and share > 0 else 0.0) + named
            if gain:
                scores[cid] += gain
                parts[cid]["page"] = round(gain, 8)


def language_steps_on() -> bool:
    """Whether a language step is on (finding each candidate's script costs a read of its text)."""
    return CROSS_LEXICAL > 0
