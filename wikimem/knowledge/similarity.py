"""How close a new text is to an existing page: duplicate, update (a supersede candidate) or neither.

Two signals: the embedder's cosine and lexical overlap (Jaccard of the lexical analyzer's tokens,
so Chinese is segmented and English stemmed). Thresholds are never one hard-coded number: each
embedder compresses cosines differently (the default one scores unrelated passages ~0.74 and a
paraphrase ~0.92), so they are calibrated per embedder identity on a labelled pair set
(``benchmarks/similarity_pairs.json``, ``benchmarks/calibrate_similarity.py``) and stored in
``calibration.json`` beside this module, keyed by the identity key. An embedder without a
calibration uses that of another runtime of the same model (same model name but for a
quantisation or runtime suffix, same dimension), else the lexical-only thresholds, and says so.
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
from ..search import search
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

    def classify(self, cos: float | None, lex: float, same_numbers: bool = True, same_subject: bool = True,
                 may_be_same_subject: bool = True) -> str:
        """``same_numbers``: both texts state the same numbers. Embeddings barely move when only a
        value changes ("runs 5 km" -> "runs 10 km"), so different numbers are never a duplicate.
        ``same_subject`` / ``may_be_same_subject``: ``subjects_agree`` strictly / loosely: facts of
        one shape about another code or name are neither a duplicate nor an update."""
        c = 1.0 if cos is None else cos
        if c >= self.duplicate_cos and lex >= self.duplicate_lex and same_numbers and same_subject:
            return "duplicate"
        if c >= self.update_cos and lex >= self.update_lex and may_be_same_subject:
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
    """Case, width, whitespace and punctuation folded: "Vim over nano." == "vim over nano".
    Punctuation is found once per distinct character and replaced in C (``str.translate``): a
    character-by-character join took 0.8 s on a 1 MiB page."""
    text = unicodedata.normalize("NFKC", text).casefold()
    table = {ord(ch): " " for ch in set(text) if unicodedata.category(ch)[0] in _PUNCT_CATEGORIES}
    return _SPACE.sub(" ", text.translate(table)).strip()


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


def with_digits(text: str) -> str:
    """``text`` with its Chinese numerals written as digits ("跑步三十分钟" -> "跑步30分钟"), so one fact
    written both ways compares as the same text (it was read as an update of itself)."""
    return _NUMBER.sub(lambda m: m.group(0) if m.group(0)[0].isdigit() else _cn_value(m.group(0)), text)


def numbers(text: str) -> tuple[str, ...]:
    """The numbers a text states, sorted, Chinese numerals as digits: "6月1日" == "六月一日"."""
    out = []
    for m in _NUMBER.finditer(unicodedata.normalize("NFKC", text)):
        tok = m.group(0)
        out.append(tok.replace(",", "") if tok[0].isdigit() else _cn_value(tok))
    return tuple(sorted(out))


# -- the subject: names and codes that must agree ------------------------------------------------
# Facts of one shape about different things ("codename A1 uses the blue theme" / "codename A2 uses the
# green theme", "Alice prefers dark mode" / "Bob prefers dark mode") score like an update or even a
# duplicate on both signals: embeddings and word overlap see the shape, not the subject. What tells
# them apart is the distinguishing tokens, so those must agree:
#   codes   letters with digits (A1, S-3, X200; not 10am, 5km, v2 which are values) and labelled
#           numbers (room 12, Gate 4, #12, No. 5, 12号楼, 第14个): both texts naming codes must name
#           the same (for a duplicate, neither may name one the other does not);
#   names   capitalised words (not a weekday, month or common sentence opener), Chinese person, place
#           and organisation names (rjieba tags), quoted strings: for an update the two texts must
#           share one ("Bob replaced Alice as lead" updates "Alice is the lead"; "Bob ..." does not
#           update "Alice ..."); for a duplicate each text's names must all occur in the other.
# A value that changes (100 -> 500 requests, Tuesday -> Thursday, 六月一日 -> 七月十五日) is no code or
# name, so updates of values are unaffected. When both memories name the same ``about`` the subject
# is given and this check is not made (memory.py).
FACT_CHARS = 400  # longer texts are pages, not atomic facts: the names/codes check is for facts
_WEEKDAYS_MONTHS = frozenset("""monday tuesday wednesday thursday friday saturday sunday mon tue tues wed thu thur
thurs fri sat sun january february march april may june july august september october november december jan feb
mar apr jun jul aug sep sept oct nov dec""".split())
_OPENERS = frozenset("""always never use keep run please make do don't dont remember note prefer avoid add write
answer reply ask check start stop put set send call read try let only every each all some most many our my your
their his her its this that these those there here today tomorrow yesterday now then also when while if after
before since because yes no not new old next last first in on at by for from to with of as and or but so
""".split())
_LABEL_WORDS = frozenset("""room floor building ticket issue order gate platform table flat apartment unit suite
server node host team group line bus route level zone sprint case lot bay desk seat box lab ward bed terminal
block sector rack cluster region shard queue channel store branch office station track stage phase step""".split())
_CODE = re.compile(r"(?<![\w.])([A-Za-z]+[-_]?\d+[A-Za-z\d]*)(?!\w|[.,]\d)")
_VERSION = re.compile(r"[vV]\d+")
_LABELLED = re.compile(r"(?<![\w])([A-Za-z]+)\s+(\d+[A-Za-z]?)(?!\w|[.,:]\d)|(?:#|\bNo\.\s?)(\d+)|"
                       r"(?<!月)(?<!\d)(\d+)号(?!\d)|第\s*(\d+|[一二三四五六七八九十百]+)")
_CAPITAL = re.compile(r"(?<![A-Za-z0-9'])([A-Z][A-Za-z0-9'-]*)")
_QUOTED = re.compile(r'"([^"]{1,60})"|“([^”]{1,60})”|「([^」]{1,60})」|『([^』]{1,60})』|《([^》]{1,60})》|`([^`]{1,60})`')
_SENTENCE_START = re.compile(r"(?:\A|[.!?。！？:;\n]|(?:\A|\n)\s*[-*#>]+)\s*\Z")
_ZH_NAME_TAGS = frozenset({"nr", "nrt", "nrfg", "ns", "nt"})


def subject_tokens(text: str) -> tuple[frozenset[str], frozenset[str]]:
    """(codes, names) that distinguish what ``text`` is about, casefolded (see the note above)."""
    text = unicodedata.normalize("NFKC", text)
    codes = {m.group(1).casefold().replace("-", "").replace("_", "") for m in _CODE.finditer(text)
             if not _VERSION.fullmatch(m.group(1)) and not re.fullmatch(r"\d+[a-z]+", m.group(1))}
    for m in _LABELLED.finditer(text):
        if m.group(1):
            word = m.group(1).casefold()
            if word in _LABEL_WORDS or (m.group(1)[0].isupper() and word not in _WEEKDAYS_MONTHS
                                        and word not in _OPENERS):
                codes.add(f"{word} {m.group(2).casefold()}")
        else:
            codes.add(f"#{m.group(3) or m.group(4) or m.group(5)}")
    names = set()
    for m in _CAPITAL.finditer(text):
        word = m.group(1).strip("'-")
        low = word.casefold()
        if not word or low in _WEEKDAYS_MONTHS or low in codes or _CODE.fullmatch(word):
            continue
        if _SENTENCE_START.search(text[:m.start()]) and (low in _OPENERS or low in _stop_words()):
            continue
        names.add(low)
    for m in _QUOTED.finditer(text):
        names.add(" ".join(next(g for g in m.groups() if g).casefold().split()))
    if re.search(r"[\u3400-\u9fff]", text):
        from rjieba import tag
        names.update(w.casefold() for w, t in tag(text) if t in _ZH_NAME_TAGS and len(w) > 1)
    return frozenset(codes), frozenset(names)


@lru_cache(maxsize=1)
def _stop_words() -> frozenset[str]:
    from ..stores.analysis import STOP_WORDS
    return STOP_WORDS


def _mentions(name: str, text: str) -> bool:
    """``name`` occurs in the casefolded ``text`` (as a whole word when it is Latin)."""
    if re.search(r"[\u3400-\u9fff]", name):
        return name in text
    return re.search(rf"(?<![a-z0-9]){re.escape(name)}(?![a-z0-9])", text) is not None


def subjects_agree(a: str, b: str, strict: bool = False) -> bool:
    """Whether ``a`` and ``b`` can be about the same subject: their codes agree and their names
    overlap (``strict``, for duplicates: every name of each occurs in the other). Only facts are
    judged so: a text longer than FACT_CHARS (a page) names many things besides its subject, and
    two pages always agree here."""
    if len(a) > FACT_CHARS or len(b) > FACT_CHARS:
        return True
    (ca, na), (cb, nb) = subject_tokens(a), subject_tokens(b)
    if ca and cb and ca != cb:
        return False
    if strict and (ca or cb) and ca != cb:
        return False
    fa, fb = unicodedata.normalize("NFKC", a).casefold(), unicodedata.normalize("NFKC", b).casefold()
    if strict:
        return all(_mentions(n, fb) for n in na) and all(_mentions(n, fa) for n in nb)
    if na and nb:
        return bool(na & nb) or any(_mentions(n, fb) for n in na) or any(_mentions(n, fa) for n in nb)
    return True


# -- the slot that changed ----------------------------------------------------------------------
# Two facts of one shape differ in one or more places ("slots"). An update keeps the subject and
# changes the value: "Service auth uses port 8001" -> "... port 8002" changes a value, "Alice prefers
# tabs" -> "Alice prefers spaces" changes the end of the fact. Facts about another subject change
# the start ("Alice lives in Paris" / "Bob lives in Paris") or a middle word as well as the value
# ("Service auth uses port 8001" / "Service search uses port 8003"). So an update is allowed when
# every slot that changed is a value (numbers, dates, times, weekdays, amounts, addresses), or when
# one slot changed and it ends the fact with the subject's words before it. Anything else is kept as
# a fact of its own: a missed update leaves two facts, a wrong one hides a fact (issue 35 item 9).
_SLOT_LATIN = re.compile(r"[a-z0-9]+(?:[.@:/_-][a-z0-9]+)*")
_CJK_RUN = re.compile(r"[\u3400-\u9fff]+")
_ZH_VALUE = re.compile(r"^[零〇一二三四五六七八九十百千万亿两半几每第周星期天日月年号点分秒时元块个次顿倍]+$")
_VALUE_NUMBER = re.compile(r"^[\d.,:/%+-]+[a-z]{0,3}$|^\d+(?:st|nd|rd|th)$")


# Words that say when or how a fact holds, not what it is about ("now uses", "现在每天", "still"):
# inserted or removed, they change no slot.
_ASPECT = frozenset("""now currently still also already usually always nowadays recently today anymore
instead longer""".split())
_ZH_ASPECT = re.compile("现在|目前|已经|仍然|依然|一直|最近|如今|还|都|也")
# A fact that says it changed something ("switched from oat milk to soy milk", "从五公里改为十公里")
# and names most of the earlier fact is an update of it, however reworded.
_CHANGE = re.compile(r"\b(?:switched|changed|moved|migrated|upgraded|downgraded|went)\b.{0,40}?\bfrom\b"
                     r"|\binstead of\b|\bno longer\b|\breplaced\b|从.{1,20}?(?:改|换|迁|升级|切换)|不再|改为|改成|换成|改用")


def _slot_tokens(text: str) -> list[str]:
    """The fact's words in order, stop words left out: Latin words as written (an address, a version,
    a time kept whole), Chinese character by character (a word cut differs between two facts:
    "生产 环境" but "测试环境"; characters align whatever the cut)."""
    text = unicodedata.normalize("NFKC", text).casefold()
    out: list[str] = []
    pos = 0
    for m in _CJK_RUN.finditer(text):
        out.extend(_SLOT_LATIN.findall(text[pos:m.start()]))
        out.extend(_ZH_ASPECT.sub("", m.group(0)))
        pos = m.end()
    out.extend(_SLOT_LATIN.findall(text[pos:]))
    stop = _stop_words()
    return [t for t in out if t not in stop and t not in _ASPECT and (len(t) > 1 or t.isdigit() or _CJK_RUN.fullmatch(t))]


def _is_value(token: str) -> bool:
    low = token.rstrip("s") if token.endswith("days") else token
    return bool(_VALUE_NUMBER.match(token) or "@" in token or "://" in token or low in _WEEKDAYS_MONTHS
                or (_CJK_RUN.fullmatch(token) and _ZH_VALUE.match(token)))


def same_words(a: str, b: str) -> bool:
    """The two facts say the same words, in any order, stop words and aspect words ("now", "都")
    aside: what a duplicate needs. A fact that changes one word ("身份团队" -> "平台团队") or one
    value is never a duplicate, however near the embedding puts it: written, it may update the
    other; dropped as a duplicate, it would be lost."""
    if len(a) > FACT_CHARS or len(b) > FACT_CHARS:
        return True
    return sorted(_slot_tokens(a)) == sorted(_slot_tokens(b))


def same_slot(a: str, b: str) -> bool:
    """Whether ``b`` can be an update of ``a`` by where they differ (see the note above). Texts
    longer than a fact (pages) are not judged here."""
    if len(a) > FACT_CHARS or len(b) > FACT_CHARS:
        return True
    from difflib import SequenceMatcher
    ta, tb = _slot_tokens(a), _slot_tokens(b)
    if _CHANGE.search(unicodedata.normalize("NFKC", b).casefold()):  # it says it changes something
        named = set(tb) | set("".join(t for t in tb if _CJK_RUN.fullmatch(t)))
        return bool(ta) and sum(t in named for t in ta) >= 0.6 * len(ta)
    changed = [op for op in SequenceMatcher(None, ta, tb, autojunk=False).get_opcodes() if op[0] != "equal"]
    if not changed:
        return True
    words = [(i1, i2, j1, j2) for _, i1, i2, j1, j2 in changed
             if not all(_is_value(t) for t in ta[i1:i2] + tb[j1:j2])]
    if not words:
        return True  # only values changed
    if len(changed) > 1:
        return False  # a word and something else changed: another subject (or another attribute)
    i1, i2, j1, j2 = words[0]
    if i1 == 0:
        return False  # the start of the fact, its subject, changed
    rest = ta[i2:]
    if not rest:
        return True  # the end of the fact changed, its start kept
    # one word after it, the noun the changed word describes ("the red theme" -> "the orange
    # theme"); a value there (a day, a number) or a Chinese character is a slot of its own
    return len(rest) == 1 and not _is_value(rest[0]) and not _CJK_RUN.fullmatch(rest[0]) and i1 >= 2


def lexical_overlap(a: str, b: str, ta: set[str] | None = None) -> float:
    """Jaccard overlap of analyzer tokens (stop words kept out, stems in). ``ta``: ``a``'s tokens,
    when the caller compares one text with many (a 1 MiB page was tokenized once per candidate)."""
    from ..stores.analysis import tokens
    ta, tb = (set(tokens(a)) if ta is None else ta), set(tokens(b))
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


_MODEL_SUFFIX = re.compile(r"(?:[-_.](?:q\d+(?:_[a-z0-9]+)?|u?int\d+(?:row|tok)?|fp\d+|f\d+|bf16|onnx|gguf|quantized|quant))+$",
                           re.I)


def _model_family(model: str) -> str:
    """The model a file or runtime implements: "multilingual-e5-small-q4" and
    "multilingual-e5-small-onnx" are both "multilingual-e5-small"."""
    return _MODEL_SUFFIX.sub("", model.strip().rsplit("/", 1)[-1]).casefold()


def _same_model_entry(data: dict, identity) -> tuple[str, dict] | None:
    """The calibration of another runtime of the same model (same model family and dimension):
    the cosines of one model barely move between runtimes, so its thresholds hold (the newest
    calibration wins when several do)."""
    family, dim = _model_family(identity.model), str(identity.dim)
    found = []
    for key, entry in data.items():
        parts = key.split(":")
        if len(parts) >= 4 and "thresholds" in entry and parts[-1] == dim and _model_family(parts[1]) == family:
            found.append((str(entry.get("calibrated", "")), key, entry))
    if not found:
        return None
    _, key, entry = max(found)
    return key, entry


def thresholds_for(embedder) -> tuple[Thresholds, str | None]:
    """(thresholds, notice): the embedder's calibration, else that of another runtime of the same
    model, else the lexical-only one with a notice."""
    data = _calibrations()
    key = embedder.identity.key if embedder is not None else LEXICAL
    entry = data.get(key)
    if entry is None and embedder is not None:
        same = _same_model_entry(data, embedder.identity)
        if same is not None:
            log.info("similarity: no calibration for %s; using that of the same model, %s", key, same[0])
            return Thresholds(same[0], **same[1]["thresholds"]), None
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
COMPARED_CHARS = 64 * 1024  # of each text, for the lexical and vector signals (duplicates compare whole texts)

def compare(embedder, thresholds: Thresholds, text: str, others: dict[str, str],
            same_subject: frozenset[str] | set[str] = frozenset()) -> list[Match]:
    """Classify ``text`` against each of ``others`` (path -> text), most similar first. Texts
    equal after ``normalise`` are duplicates whatever the signals say. Both labels need a minimum
    lexical overlap, so only the texts that reach it are embedded (an embedding costs ~0.1-0.5 s
    with the default embedder; a lexical overlap microseconds). ``same_subject``: paths known to be
    about the same subject as ``text`` (the same ``about``), so their names and codes may change in
    an update."""
    from ..stores.analysis import tokens
    norm = normalise(with_digits(text))
    floor = min(thresholds.duplicate_lex, thresholds.update_lex)
    # duplicates: the whole texts, exactly (numbers compared by value: 三十 is 30)
    exact = {p for p, t in others.items() if normalise(with_digits(t)) == norm}
    # the signals read each text's first COMPARED_CHARS (a 1 MiB page was tokenized whole for an
    # overlap its first 64 KB decide as well; the model reads 512 tokens of it in any case)
    cut = {p for p, t in others.items() if len(t) > COMPARED_CHARS or len(text) > COMPARED_CHARS}
    text = text[:COMPARED_CHARS]
    others = {p: t[:COMPARED_CHARS] for p, t in others.items()}
    digits = with_digits(text)  # numbers by value, once: not again for every text compared
    mine = set(tokens(digits))
    lex = {p: lexical_overlap(digits, with_digits(t), mine) for p, t in others.items()}
    embed = sorted(p for p in others if p not in exact and lex[p] >= floor)
    use = embedder if thresholds.key != LEXICAL else None
    cos = dict(zip(embed, cosines(use, text, [others[p] for p in embed]) or [])) if use is not None else {}
    out = []
    for p in sorted(others):
        c = cos.get(p)
        if p in exact:
            label = "duplicate"
        elif p in embed:
            label = thresholds.classify(c, lex[p], numbers(text) == numbers(others[p]),
                                        subjects_agree(text, others[p], strict=True),
                                        p in same_subject or subjects_agree(text, others[p]))
            if label == "duplicate" and p in cut:  # alike in what was compared, not the same as a whole
                label = "update"
        else:
            label = "different"
        out.append(Match(p, label, c, lex[p]))
    return sorted(out, key=lambda m: (-m.similarity, m.path))


def body_of(text: str, rel: str = "note.md") -> str:
    return parse_page(rel, text).body.strip()


def candidate_paths(ctx, text: str, page_type: str, exclude: str, limit: int = CANDIDATES) -> list[str]:
    """Active pages of ``page_type`` that search finds for ``text`` (hybrid when vectors exist)."""
    query = " ".join(text.split())[:500]
    if not query:
        return []
    try:
        hits = search(ctx, query, limit=limit + 1, type=page_type, literal=True)  # a note body: no operators
    except WikimemError as exc:
        log.info("similar pages: search unavailable (%s); scanning the folder", exc)
        return _folder_candidates(ctx, page_type, exclude, limit * 25)
    return [h.path for h in hits
            if h.path != exclude and h.status != "superseded" and not is_raw_path(h.path)][:limit]


def _folder_candidates(ctx, page_type: str, exclude: str, cap: int) -> list[str]:
    from ..model import FOLDER_TYPES
    folders = [f for f, t in FOLDER_TYPES.items() if t == page_type]
    notes = [f.path for f in ctx.files.scan().notes
             if f.path.split("/", 1)[0] in folders and f.path != exclude and not is_raw_path(f.path)]
    return notes[:cap]


def read_bodies(ctx, paths: Sequence[str]) -> dict[str, tuple[str, object]]:
    """path -> (body, page) for readable, active pages."""
    out = {}
    for p in paths:
        try:
            note = ctx.files.read_note(p)
        except WikimemError:
            continue
        page = parse_page(p, note.text, note.sha256)
        if page.status != "superseded":
            out[p] = (page.body.strip(), page)
    return out


def similar_pages(ctx, rel: str, text: str, page_type: str | None = None) -> tuple[list[Match], str | None]:
    """Matches of ``text`` (a whole note) against active pages of its type, and a notice when the
    embedder is uncalibrated."""
    page = parse_page(rel, text)
    page_type = page_type or page.type
    body = page.body.strip()
    embedder = ctx.cache.embedder()
    thresholds, notice = thresholds_for(embedder)
    bodies = read_bodies(ctx, candidate_paths(ctx, body or page.title, page_type, rel))
    bodies = {p: b for p, (b, pg) in bodies.items() if pg.type == page_type}
    return compare(embedder, thresholds, body, bodies), notice


def supersede_candidates(ctx, rel: str, text: str) -> list[tuple[str, float]]:
    """The writer's conflict check: active same-type pages that ``text`` duplicates or updates."""
    matches, notice = similar_pages(ctx, rel, text)
    if notice:
        log.info(notice)
    return [(m.path, round(m.similarity, 4)) for m in matches if m.label != "different"]

