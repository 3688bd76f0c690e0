"""How close a new text is to an existing page: duplicate, update (a supersede candidate) or neither.

Two signals: the embedder's cosine and lexical overlap (Jaccard of the lexical analyzer's tokens,
so Chinese is segmented and English stemmed). Thresholds are never one hard-coded number: each
embedder compresses cosines differently (the default one scores unrelated passages ~0.74 and a
paraphrase ~0.92), so they are calibrated per embedder identity on a labelled pair set
(``benchmarks/similarity_pairs.json``, ``benchmarks/calibrate_similarity.py``) and stored in
``calibration.json`` beside this module, keyed by the identity key. An embedder without a
calibration falls back to the lexical-only thresholds, and says so.
"""
from __future__ import annotations

import json
import logging
import re
import unicodedata
from dataclasses import asdict, dataclass
from functools import lru_cache
from pathlib import Path
from typing import Sequence

from ..errors import WikimemError
from ..parse import parse_page
from ..vault.files import is_raw_path

log = logging.getLogger(__name__)

CALIBRATION_FILE = Path(__file__).with_name("calibration.json")
LEXICAL = "lexical"  # the calibration key used when there is no embedder (or no calibration for it)
MAX_CHARS = 2000  # a page is compared by its first MAX_CHARS of body: the embedder truncates anyway
CANDIDATES = 8


@dataclass(frozen=True)
class Thresholds:
    """A pair is a duplicate when cos >= duplicate_cos and lex >= duplicate_lex; otherwise an
    update (same subject, changed content: supersede candidate) when cos >= update_cos and
    lex >= update_lex. Cosine thresholds are 0 for the lexical-only calibration."""

    key: str
    duplicate_cos: float
    duplicate_lex: float
    update_cos: float
    update_lex: float

    def classify(self, cos: float | None, lex: float, same_numbers: bool = True) -> str:
        """``same_numbers``: both texts state the same numbers. Embeddings barely move when only a
        value changes ("runs 5 km" -> "runs 10 km"), so different numbers are never a duplicate."""
        c = 1.0 if cos is None else cos
        if c >= self.duplicate_cos and lex >= self.duplicate_lex and same_numbers:
            return "duplicate"
        if c >= self.update_cos and lex >= self.update_lex:
            return "update"
        return "different"


@dataclass(frozen=True)
class Match:
    path: str
    label: str  # duplicate | update | different
    cosine: float | None
    lexical: float

    @property
    def similarity(self) -> float:
        return self.cosine if self.cosine is not None else self.lexical


# -- the two signals ----------------------------------------------------------------------------
_SPACE = re.compile(r"\s+")
_PUNCT_CATEGORIES = ("P", "S")


def normalise(text: str) -> str:
    """Case, width, whitespace and punctuation folded: "Vim over nano." == "vim over nano"."""
    text = unicodedata.normalize("NFKC", text).casefold()
    text = "".join(" " if unicodedata.category(ch)[0] in _PUNCT_CATEGORIES else ch for ch in text)
    return _SPACE.sub(" ", text).strip()


_CN_DIGITS = {"零": 0, "〇": 0, "一": 1, "二": 2, "两": 2, "三": 3, "四": 4, "五": 5, "六": 6, "七": 7, "八": 8, "九": 9}
# Chinese numerals count only before a unit or classifier ("五公里", "六月一日"), so words such as
# 一律 or 统一 are not numbers.
_NUMBER = re.compile(r"\d+(?:[.,]\d+)*|[零〇一二两三四五六七八九十]{1,4}(?=[个次天年月日号点时分秒周岁公米千克斤元块倍%％])")


def _cn_value(run: str) -> str:
    """Chinese numerals below 100 -> digits ("十五" -> "15"); anything else is kept as written."""
    if "十" not in run:
        return "".join(str(_CN_DIGITS[c]) for c in run) if all(c in _CN_DIGITS for c in run) else run
    tens, _, units = run.partition("十")
    if len(run) > 3 or any(c not in _CN_DIGITS for c in tens + units):
        return run
    return str((_CN_DIGITS[tens] if tens else 1) * 10 + (_CN_DIGITS[units] if units else 0))


def numbers(text: str) -> tuple[str, ...]:
    """The numbers a text states, sorted, Chinese numerals as digits: "6月1日" == "六月一日"."""
    out = []
    for m in _NUMBER.finditer(unicodedata.normalize("NFKC", text)):
        tok = m.group(0)
        out.append(tok.replace(",", "") if tok[0].isdigit() else _cn_value(tok))
    return tuple(sorted(out))


def lexical_overlap(a: str, b: str) -> float:
    """Jaccard overlap of analyzer tokens (stop words kept out, stems in)."""
    from ..index.analysis import tokens
    ta, tb = set(tokens(a)), set(tokens(b))
    if not ta and not tb:
        return 1.0 if normalise(a) == normalise(b) else 0.0
    return len(ta & tb) / len(ta | tb)


def cosines(embedder, text: str, others: Sequence[str]) -> list[float] | None:
    if embedder is None or not others:
        return None if embedder is None else []
    vecs = embedder.embed_passages([text[:MAX_CHARS], *[o[:MAX_CHARS] for o in others]])
    return [float(x) for x in vecs[1:] @ vecs[0]]


# -- calibration --------------------------------------------------------------------------------
@lru_cache(maxsize=1)
def _calibrations() -> dict:
    try:
        return json.loads(CALIBRATION_FILE.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        log.warning("similarity calibration %s unreadable; using built-in lexical thresholds", CALIBRATION_FILE)
        return {}


_FALLBACK = Thresholds(LEXICAL, 0.0, 0.75, 0.0, 0.35)


def thresholds_for(embedder) -> tuple[Thresholds, str | None]:
    """(thresholds, notice): the embedder's calibration, else the lexical-only one with a notice."""
    data = _calibrations()
    key = embedder.identity.key if embedder is not None else LEXICAL
    entry = data.get(key)
    if entry is None:
        notice = None if embedder is None else (
            f"no similarity calibration for embedder {key}; duplicates and updates are judged by lexical "
            "overlap only (run benchmarks/calibrate_similarity.py to calibrate it)")
        entry = data.get(LEXICAL)
        if entry is None:
            return _FALLBACK, notice
        return Thresholds(LEXICAL, **entry["thresholds"]), notice
    return Thresholds(key, **entry["thresholds"]), None


def thresholds_to_dict(t: Thresholds) -> dict:
    d = asdict(t)
    d.pop("key")
    return d


# -- comparing a text with pages ----------------------------------------------------------------
def compare(embedder, thresholds: Thresholds, text: str, others: dict[str, str]) -> list[Match]:
    """Classify ``text`` against each of ``others`` (path -> text), most similar first. Texts
    equal after ``normalise`` are duplicates whatever the signals say. Both labels need a minimum
    lexical overlap, so only the texts that reach it are embedded (an embedding costs ~0.1-0.5 s
    with the default embedder; a lexical overlap microseconds)."""
    norm = normalise(text)
    floor = min(thresholds.duplicate_lex, thresholds.update_lex)
    lex = {p: lexical_overlap(text, t) for p, t in others.items()}
    exact = {p for p, t in others.items() if normalise(t) == norm}
    embed = sorted(p for p in others if p not in exact and lex[p] >= floor)
    use = embedder if thresholds.key != LEXICAL else None
    cos = dict(zip(embed, cosines(use, text, [others[p] for p in embed]) or [])) if use is not None else {}
    out = []
    for p in sorted(others):
        c = cos.get(p)
        if p in exact:
            label = "duplicate"
        elif p in embed:
            label = thresholds.classify(c, lex[p], numbers(text) == numbers(others[p]))
        else:
            label = "different"
        out.append(Match(p, label, c, lex[p]))
    return sorted(out, key=lambda m: (-m.similarity, m.path))


def body_of(text: str, rel: str = "note.md") -> str:
    return parse_page(rel, text).body.strip()


def candidate_paths(v, text: str, page_type: str, exclude: str, limit: int = CANDIDATES) -> list[str]:
    """Active pages of ``page_type`` that search finds for ``text`` (hybrid when vectors exist)."""
    query = " ".join(text.split())[:500]
    if not query:
        return []
    try:
        hits = v.search(query, limit=limit + 1, type=page_type)
    except WikimemError as exc:
        log.info("similar pages: search unavailable (%s); scanning the folder", exc)
        return _folder_candidates(v, page_type, exclude, limit * 25)
    return [h.path for h in hits
            if h.path != exclude and h.status != "superseded" and not is_raw_path(h.path)][:limit]


def _folder_candidates(v, page_type: str, exclude: str, cap: int) -> list[str]:
    from ..model import FOLDER_TYPES
    folders = [f for f, t in FOLDER_TYPES.items() if t == page_type]
    notes = [f.path for f in v.files.scan().notes
             if f.path.split("/", 1)[0] in folders and f.path != exclude and not is_raw_path(f.path)]
    return notes[:cap]


def read_bodies(v, paths: Sequence[str]) -> dict[str, tuple[str, object]]:
    """path -> (body, page) for readable, active pages."""
    out = {}
    for p in paths:
        try:
            note = v.files.read_note(p)
        except WikimemError:
            continue
        page = parse_page(p, note.text, note.sha256)
        if page.status != "superseded":
            out[p] = (page.body.strip(), page)
    return out


def similar_pages(v, rel: str, text: str, page_type: str | None = None) -> tuple[list[Match], str | None]:
    """Matches of ``text`` (a whole note) against active pages of its type, and a notice when the
    embedder is uncalibrated."""
    page = parse_page(rel, text)
    page_type = page_type or page.type
    body = page.body.strip()
    embedder = v.cache.embedder()
    thresholds, notice = thresholds_for(embedder)
    bodies = read_bodies(v, candidate_paths(v, body or page.title, page_type, rel))
    bodies = {p: b for p, (b, pg) in bodies.items() if pg.type == page_type}
    return compare(embedder, thresholds, body, bodies), notice


def supersede_candidates(v, rel: str, text: str) -> list[tuple[str, float]]:
    """The writer's conflict check: active same-type pages that ``text`` duplicates or updates."""
    matches, notice = similar_pages(v, rel, text)
    if notice:
        log.info(notice)
    return [(m.path, round(m.similarity, 4)) for m in matches if m.label != "different"]

