"""Language balance: what the re-rank steps for a vault in two scripts compute (issue 17).

- ``foreign``: which candidates are written in another script than the query (``script``).
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

Nothing here looks at folders or file names: which text is a translation of which is found from
the vectors alone. Transcript turns (chunks with speakers) are never foreign: there the unit of
retrieval is the turn, and the transcript steps handle its context. The steps that apply these
are steps.ImputeLexical and steps.TranslationsBelowOriginals; the constants are in tuning.py.
(The page-support and title-bonus steps that lived here were measured, kept off, and removed: see
tuning.py.)
"""
from __future__ import annotations

import re
from typing import Mapping

import numpy as np

from .tuning import CROSS_LEXICAL, LETTERS_PER_HAN, TWIN_SIMILARITY

_HAN = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")
_LATIN = re.compile(r"[A-Za-z\u00c0-\u024f]")
_CODE = re.compile(r"`[^`\n]*`|\{\{[^}]*\}\}|<https?://[^>]*>|https?://\S+")


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


def foreign(manifest, query: str, ids: list[str]) -> set[str]:
    """The chunk ids among ``ids`` written in another script than ``query`` (transcript turns are
    never counted: their steps live in steps.py). Each chunk's script is found once per process:
    a chunk id hashes its path, headings and body, so it cannot come to name other text. Whether
    it is a turn is read each time: that also depends on its page's frontmatter. ``manifest``: the
    search's (``Cache.manifest``), asked ``chunk_speakers`` and ``chunk_texts_by_id``."""
    want = script(query)
    out: set[str] = set()
    if not want:  # a query with no letters is in no language: nothing is foreign to it
        return out
    ids = list(dict.fromkeys(ids))
    for start in range(0, len(ids), 500):
        part = ids[start:start + 500]
        notes = [cid for cid, speakers in manifest.chunk_speakers(part).items() if speakers in ("", "[]")]
        unknown = [cid for cid in notes if cid not in _SCRIPT_OF_ID]
        if unknown:
            for cid, text in manifest.chunk_texts_by_id(unknown).items():
                if len(_SCRIPT_OF_ID) >= 500_000:
                    _SCRIPT_OF_ID.clear()  # a bound, not a working set: refilled by the next searches
                _SCRIPT_OF_ID[cid] = script(text)
        out.update(cid for cid in notes if cid in _SCRIPT_OF_ID and _foreign_to(_SCRIPT_OF_ID[cid], want))
    return out


def _foreign_to(side: str, want: str) -> bool:
    # text without prose (a chunk of code examples, figures) is ASCII to BM25: visible to a Latin
    # query, foreign to a Chinese one
    return side != want and not (side == "" and want == "latin")


def imputed_gains(shares: Mapping[str, Mapping[str, float]], weight_lexical: float,
                  share: float | None = None) -> dict[str, float]:
    """BM25 cannot match a Chinese question against English text (or only on stray ASCII words),
    so its silence about a page in another script is no evidence against it: that candidate's
    lexical share is missing, not 0. It is taken to be ``share`` times the candidate's vector
    share (0 <= share <= 1; below 1 because it is a guess, not a match), unless BM25's own share
    is higher. ``shares``: chunk id -> {"bm25": share, "vector": share} for the candidates in
    another script than the query. Returns chunk id -> what its fused score gains (> 0)."""
    share = CROSS_LEXICAL if share is None else share
    if share <= 0:
        return {}
    gains: dict[str, float] = {}
    for cid, got in shares.items():
        gain = share * got.get("vector", 0.0) - got.get("bm25", 0.0)
        if gain > 0:
            gains[cid] = weight_lexical * gain
    return gains


def impute_lexical(parts, shares: Mapping[str, Mapping[str, float]], weight_lexical: float,
                   share: float | None = None) -> None:
    """``imputed_gains`` added in place to ``parts[cid]["fused"]`` (recorded as ``"imputed"``)."""
    for cid, gain in imputed_gains(shares, weight_lexical, share).items():
        parts[cid]["fused"] += gain
        parts[cid]["imputed"] = round(gain, 8)


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
    # a page translated twice (into Simplified and Traditional Chinese, say): both are nearest to the
    # one original, which can be nearest to only one of them, so the second is not mutual. It is
    # paired too when it clears the same threshold. No folder or file name is looked at.
    pairs.update((theirs[i], ours[j]) for i, j in enumerate(nearest_ours)
                 if close[i] and theirs[i] not in pairs and ours[j] in originals)
    return pairs


def capped_translations(scores: Mapping[str, float], twins: Mapping[str, str]) -> dict[str, tuple[str, float]]:
    """Each translation whose original is scored too: translation id -> (original id, its score
    lowered to just below the original's when it would rank above it, else as it was)."""
    out: dict[str, tuple[str, float]] = {}
    for cid, original in twins.items():
        if cid in scores and original in scores:
            ceiling = scores[original] - 1e-6
            out[cid] = (original, ceiling if scores[cid] > ceiling else scores[cid])
    return out


def below_translations(scores: dict[str, float], parts, twins: Mapping[str, str],
                       paths: Mapping[str, str]) -> None:
    """``capped_translations`` in place on ``scores``; the original's page is recorded in
    ``parts[cid]["translation_of"]`` either way."""
    for cid, (original, score) in capped_translations(scores, twins).items():
        parts[cid]["translation_of"] = paths.get(original)
        scores[cid] = score


def language_steps_on() -> bool:
    """Whether a language step is on (finding each candidate's script costs a read of its text)."""
    return CROSS_LEXICAL > 0
