"""Subject, attribute and value of a short fact, from the sentence's structure (issue 53).

A remembered fact replaces an earlier one only when both name the same subject and the same
attribute and only the value differs. Word shape is not enough ("Dana prefers Firefox as her
browser" has the shape of "Dana prefers zsh as her shell", and is another attribute), so the
sentence is read for where its value sits:

- a copula ("K is V", "K: V", "K moved to V", 是 / 改为 / 换成 / 升级到): the key K names subject and
  attribute ("the production database", "Omar's favourite font", 用户的默认编辑器), V is the value.
  Inverted forms put the key last: "Priya is the tech lead of the mobile team" (a bare name before
  a definite role), "Python 3.11 is used by the backend" (a passive: the by-phrase is the subject),
  "Hosted in eu-west-1 is the analytics cluster", 由刘洋维护的是计费库 (the key after the copula);
- a verb sentence: subject, verb (with its particle: "lives in", "reports to", "decided to use"),
  object, and an attribute phrase after it ("as her shell", "in her terminal", "for the billing
  service", "to manage Python dependencies"). A change in the object is an update when the
  attribute phrase is there and equal, or the verb holds one value at a time ("prefers", "lives
  in", "reports to", "chose"); a change in the subject, the verb or the attribute phrase is another fact;
- values alone (a port, a version, a time, an address, a day) changing in a sentence with one value;
- "from X to Y" / 从X改为Y naming the earlier value; swapped comparisons ("tabs over spaces" ->
  "spaces over tabs", 胜过) are an update, never a duplicate: word order matters.

``judge`` answers "duplicate" (the same words in the same order, or the same key and value),
"update", "distinct", or None when the structure does not settle it: the caller then writes the
fact and names the earlier one as a ``possible_update`` instead of hiding anything.
"""
from __future__ import annotations

import re
import unicodedata
from difflib import SequenceMatcher
from functools import lru_cache

_CJK = re.compile(r"[\u3400-\u9fff]")
_LATIN = re.compile(r"[A-Za-z0-9]+(?:[.@:/_'+-][A-Za-z0-9]+)*")
# When or how a fact holds, not what it says: dropped before comparing ("Dana now prefers").
ASPECT = frozenset("now currently still nowadays presently".split())
ZH_ASPECT = ("现在", "目前", "如今", "仍然", "依然", "一直", "已经", "还是")
DETS = frozenset("the a an his her their my our its your this that these those".split())
_WEEKDAYS_MONTHS = frozenset("""monday tuesday wednesday thursday friday saturday sunday january february march
april may june july august september october november december""".split())
_ZH_VALUE = re.compile(r"^[零〇一二三四五六七八九十百千万两半几周星期天日月年号点分秒时]+$")

# verbs that hold one value at a time: a new object replaces the old one
SINGLE = frozenset("""prefers prefer lives live works work reports report chose chooses choose decided decide
agreed agree settled picked picks ranks rank""".split())
VERBS = SINGLE | frozenset("""likes like loves love uses use used runs run listens listen writes write deploys deploy
hosts host speaks speak drinks drink eats eat starts start ends end requires require needs need wants want owns own
manages manage leads lead maintains maintain moved move switched switch keeps keep follows follow plays play drives
drive takes take release releases ships ship stores store sends send reads read calls call meets meet""".split())
USE_VERBS = frozenset("uses use prefers prefer runs run chose picked".split())  # one thing used for one purpose
PARTICLES = frozenset("in on at to from with against by for".split())
_COPULA_EN = ("is", "are", "was", "were", ":")
_CHANGE_EN = ("moved to", "changed to", "switched to", "upgraded to", "migrated to")
# the value was moved: 改到 / 推迟到 / 搬到 say the key now has another value, as 改为 does
_MOVED_ZH = ("改为", "改成", "改到", "换成了", "换成", "换到", "升级到了", "升级到", "迁移到", "迁到", "推迟到", "延期到",
             "延后到", "提前到", "调整为", "调整到", "调到", "搬到了", "搬到")
_COPULA_ZH = _MOVED_ZH + ("是", "为")
_AT_ZH = ("在", "定在", "定于", "位于")  # where or when something is: what a moved value replaces
_COMPARE = frozenset({"over", "above", "胜过", "而不是"})
_PREFER = {"likes": "prefers", "like": "prefer", "favours": "prefers", "favors": "prefers"}
GENERIC = frozenset("user users we i you he she they it team people 用户 我们 我 你 他 她 他们".split())
PARTICIPLES = frozenset("written built run made held kept led chosen taken given done known hidden".split())
_ZH_WORDS = ("胜过", "而不是")
_CHANGE_WORDS = frozenset("switched moved changed migrated upgraded went from to 从 改 换 迁".split())


def _is_value(tok: str) -> bool:
    if any(ch.isdigit() for ch in tok) or "@" in tok or "://" in tok or tok in _WEEKDAYS_MONTHS:
        return True
    if re.fullmatch(r"[a-z0-9-]+(?:\.[a-z0-9-]+)+", tok):  # an address: docs.example.internal
        return True
    return bool(_CJK.match(tok) and _ZH_VALUE.match(tok))


@lru_cache(maxsize=4096)
def tokens(text: str) -> tuple[tuple[str, ...], tuple[bool, ...]]:
    """(words casefolded, capitalised as written) in order: Latin words whole, Chinese character
    by character (two facts cut into words differently still align); aspect words dropped,
    "more than" / "rather than" read as "over" and, in a comparison, "likes" as "prefers"."""
    from .similarity import with_digits  # numbers by value: "跑步三十分钟" says what "跑步30分钟" says
    text = with_digits(unicodedata.normalize("NFKC", text).strip())
    for w in ZH_ASPECT:
        text = text.replace(w, "")
    text = re.sub(r"\b(?:more|rather) than\b", "over", text, flags=re.I)
    words: list[str] = []
    pos = 0
    for m in re.finditer(r"[\u3400-\u9fff]+|(?<!\d):|:(?!\d)", text):  # "6:30" is a time, not "K: V"
        for w in _LATIN.findall(text[pos:m.start()]):
            words.append(w)
        words.extend(m.group(0) if m.group(0) != ":" else [":"])
        pos = m.end()
    words.extend(_LATIN.findall(text[pos:]))
    out, cap = [], []
    for w in _ZH_WORDS:  # a comparison word is one token
        for i in range(len(words) - len(w), -1, -1):
            if tuple(words[i:i + len(w)]) == tuple(w):
                words[i:i + len(w)] = [w]
    for w in words:
        low = w.casefold()
        if low.endswith("'s"):
            low = low[:-2]
        if low in ASPECT:
            continue
        out.append(low)
        cap.append(w[:1].isupper())
    if any(t in _COMPARE for t in out):  # "likes spaces more than tabs" is "prefers spaces over tabs"
        out = [_PREFER.get(t, t) for t in out]
    if "prefers" in out or "prefer" in out:  # "prefers cats to dogs": a comparison
        i = out.index("prefers") if "prefers" in out else out.index("prefer")
        if "over" not in out and "to" in out[i + 2:]:
            out[out.index("to", i + 2)] = "over"
    return tuple(out), tuple(cap)


def _zh_names(text: str) -> set[str]:
    try:
        import rjieba
        return {w for w, tag in rjieba.tag(text) if tag in ("nr", "nrfg", "nrt", "ns", "nt", "eng")}
    except Exception:  # noqa: BLE001 - without the segmenter no Chinese names are known
        return set()


def _find(seq: tuple[str, ...], sub: tuple[str, ...], start: int = 1) -> int:
    for i in range(start, len(seq) - len(sub) + 1):
        if seq[i:i + len(sub)] == sub:
            return i
    return -1


# words that add no fact: "waters the plants" == "waters all the plants" (a duplicate); negations,
# prepositions and comparisons are kept, so "after noon" is not "before noon"
FILLER = frozenset("the a an all both each just really very also too 都 也".split())


def _bare(seq) -> tuple[str, ...]:
    return tuple(t for t in seq if t not in FILLER)


def _content(seq) -> tuple[str, ...]:
    return tuple(t for t in seq if t not in DETS and t not in ("of", "的"))


# -- copula: key and value ---------------------------------------------------------------------
def _leads_with_value(left: tuple[str, ...], zh: bool) -> bool:
    """The words before the copula open with a value ("9:30 is ...", 三月十五日是 ...). Chinese is read a
    character at a time, so a day or unit character opens a value only beside a numeral: 周一 is a
    day, 周报 (the weekly report) is not."""
    if not _is_value(left[0]):
        return False
    if not zh or _NUMERAL.search(left[0]):
        return True
    return len(left) > 1 and bool(_NUMERAL.search(left[1]))


_PHRASAL = frozenset("up out off down over back".split())


def _passive(value: tuple[str, ...]) -> tuple[str, ...] | None:
    """The verb of a passive value ("deployed on Fridays" -> (deployed, on), "backed up to S3" ->
    (backed, up, to)): a participle and its particle, followed by what it takes; else None."""
    if not value or not (value[0] in PARTICIPLES or (value[0].endswith("ed") and len(value[0]) > 3)):
        return None
    i = 1 + (len(value) > 2 and value[1] in _PHRASAL)
    if i < len(value) - 1 and value[i] in PARTICLES:
        return value[:i + 1]
    return None


def copula(text: str) -> tuple[tuple[str, ...], tuple[str, ...]] | None:
    """(key, value) of "K is V" and its inverted forms, or None (no copula, or a key that names no
    attribute: "Nina is allergic to peanuts" says something about Nina, which attribute is unsure)."""
    toks, caps = tokens(text)
    zh = bool(_CJK.search(text))
    hit = None
    for marker in (_CHANGE_EN + _COPULA_EN) if not zh else _COPULA_ZH:
        sub = tuple(marker.split()) if not zh else tuple(marker)
        i = _find(toks, sub)
        if i > 0 and (hit is None or i < hit[0]):
            hit = (i, len(sub))
    if hit is None:
        return None
    i, n = hit
    left, right, lcaps = toks[:i], toks[i + n:], caps[:i]
    if zh and right[:1] == ("了",):
        right = right[1:]
    if not left or not right:
        return None
    key, value = left, right
    if len(right) >= 2 and right[1] == "by" and not zh:
        return None  # a passive: "Python 3.11 is used by the backend" is about the backend, "Project
        # Falcon is led by Priya" about the project; which one the sentence does not say
    participle = (left[0] in PARTICIPLES or left[0].endswith(("ing", "ed"))) and left[1:2] != () \
        and left[1] in PARTICLES  # "Running on port 5432 is ...", not "Meeting room 12 is ..."
    if left[0] in ("by", "in", "on", "at", "every", "由", "被") or participle \
            or _leads_with_value(left, zh) or (zh and "的" == left[-1]):  # subject last
        key, value = right, left
    elif not zh and len(left) <= 2 and all(lcaps) and left[0] not in DETS and (
            right[0] == "the" or (caps[i + n] and "'s" in text)):
        key, value = right, left  # "Priya is the tech lead of the mobile team", "Hannah is Leo's manager"
    elif zh and "".join(left) in _zh_names(text) and "的" in right:
        key, value = right, left  # 张伟是移动团队的负责人
    attr = [t for t in _content(key) if t not in GENERIC and not _is_value(t)]
    if not zh and key is left and len(left) <= 2 and all(lcaps) and left[0] not in DETS:
        return None  # a bare name before "is": which attribute is not said
    if zh and "".join(key) in _zh_names(text):
        return None
    if not attr:
        return None
    return _content(key), _content(value)


# -- verb sentences ------------------------------------------------------------------------------
def _verb_at(toks: tuple[str, ...]) -> int:
    """The verb's place: after the subject, or first in an instruction ("Use black for ...": the
    subject is the one told)."""
    for i, t in enumerate(toks):
        if t in VERBS:
            return i
    return -1


def _context_start(toks: tuple[str, ...], caps: tuple[bool, ...], start: int) -> int:
    """Where the attribute phrase after the object begins ("as her shell", "for the billing
    service", "in her terminal", "to manage ..."), or len(toks)."""
    for i in range(start + 1, len(toks)):
        t, nxt = toks[i], toks[i + 1] if i + 1 < len(toks) else ""
        if t in ("as", "for"):
            return i
        if t in ("in", "on", "during") and nxt in DETS:
            return i
        if t == "to" and nxt and nxt not in DETS and not caps[i + 1] and not _is_value(nxt):
            return i
    return len(toks)


_NUMERAL = re.compile(r"[0-9零〇一二三四五六七八九十百千两半]")
_CODE = re.compile(r"[a-z]+[-_]?\d+[a-z0-9-]*")


def _is_code(tok: str) -> bool:
    """An identifier with a number in it (worker-3, eu-west-1): it names a thing, not a value."""
    return bool(_CODE.fullmatch(tok)) and not re.fullmatch(r"v\d+|\d+[a-z]+", tok)


def _value_runs(toks: tuple[str, ...]) -> int:
    """How many values the sentence states: consecutive value words are one ("12 december", 三十天);
    a run must hold a number or a day name (周 or 日 alone is part of a word)."""
    runs, cur = 0, []
    for t in list(toks) + [""]:
        if t and _is_value(t) and not _is_code(t):
            cur.append(t)
            continue
        if cur and any(_NUMERAL.search(c) or c in _WEEKDAYS_MONTHS for c in cur):
            runs += 1
        cur = []
    return runs


def _merged_ops(ta, tb) -> list[tuple[int, int, int, int]]:
    """The places where ``ta`` and ``tb`` differ; two places separated only by values are one
    (三月三十一日 -> 四月十五日 is one date)."""
    ops = [op[1:] for op in SequenceMatcher(None, ta, tb, autojunk=False).get_opcodes() if op[0] != "equal"]
    out: list[list[int]] = []
    for i1, i2, j1, j2 in ops:
        last = out[-1] if out else None
        if last and all(_is_value(t) for t in ta[last[1]:i1] + ta[last[0]:last[1]] + tb[last[2]:last[3]]
                                            + ta[i1:i2] + tb[j1:j2]):
            last[1], last[3] = i2, j2
        else:
            out.append([i1, i2, j1, j2])
    return [tuple(o) for o in out]


def _swap(ta, tb) -> bool:
    """old = P A cmp B C, new = P B cmp A C: the same comparison reversed."""
    ia = next((i for i, t in enumerate(ta) if t in _COMPARE), -1)
    ib = next((i for i, t in enumerate(tb) if t in _COMPARE), -1)
    if ia < 1 or ib < 1:
        return False
    pa, pb = ta[:ia], tb[:ib]
    k = 0
    while k < min(len(pa), len(pb)) and pa[k] == pb[k]:
        k += 1
    a, b = pa[k:], pb[k:]
    if not a or not b or k == 0:
        return False
    qa, qb = ta[ia + 1:], tb[ib + 1:]
    k = 0  # a word both sides share after the comparison (喝咖啡胜过喝茶)
    while k < min(len(qa), len(qb)) and qa[k] == qb[k]:
        k += 1
    qa, qb = qa[k:], qb[k:]
    if qa[:len(b)] == b and qb[:len(a)] == a and qa[len(b):] == qb[len(a):]:
        return True
    # "prefers vim over nano" -> "prefers emacs over vim": what was preferred is now the one passed over
    return qb[:len(a)] == a and qa[len(a):] == qb[len(a):] and a not in (b,)


def _from_to(ta, tb) -> bool:
    """The new fact says it changed the old value: "... switched from X to Y ...", 从X改为Y."""
    zh = any(_CJK.match(t) for t in tb)
    if not zh:
        if "from" not in tb or "to" not in tb[tb.index("from"):]:
            return False
        f = tb.index("from")
        t = tb.index("to", f)
        x, y = tb[f + 1:t], tb[t + 1:]
        marker = range(0)
        end = _context_start(tb, (False,) * len(tb), t) if y else t + 1
        y = tb[t + 1:end]
    else:
        # on the tokens, not their joined text: a Latin name (从 Maven 换成 Gradle) is one token
        f = tb.index("从") if "从" in tb else -1
        hits = [(i, len(w)) for w in ("改为", "改成", "换成", "换到", "迁到", "升级到")
                for i in [_find(tb, tuple(w), f + 1)] if f >= 0 and i > f + 1]
        if not hits:
            return False
        at, n = min(hits)
        x, y = tb[f + 1:at], tb[at + n:]
        marker = range(at, at + n)  # 换成's 成 is the marker's, not a word the fact says
    if not x or not y or x == y:
        return False
    i = _find(ta, x, 0)
    if i < 1:
        return False
    replaced = ta[:i] + y + ta[i + len(x):]
    said = [w for k, w in enumerate(tb) if w not in _CHANGE_WORDS and w not in x and k not in marker]
    return ta[0] == tb[0] and all(w in replaced for w in said)


def _moved(text: str) -> bool:
    """The fact says its value was moved to another ("moved to", 改为, 推迟到 ...)."""
    if _CJK.search(text):
        return any(m in text for m in _MOVED_ZH)
    toks = tokens(text)[0]
    return any(_find(toks, tuple(m.split()), 0) >= 0 for m in _CHANGE_EN)


# -- the decision -----------------------------------------------------------------------------------
def judge(old: str, new: str) -> str | None:
    """"duplicate", "update", "distinct" or None: one place changed and the subject kept, but the
    structure does not say whether that place is the value (a possible update)."""
    ta, ca = tokens(old)
    tb, cb = tokens(new)
    if not ta or not tb:
        return None
    if ta == tb or _bare(ta) == _bare(tb):
        return "duplicate"
    if _from_to(ta, tb):
        return "update"
    if _swap(ta, tb):
        return "update"
    ka, kb = copula(old), copula(new)
    if ka is not None and kb is not None:
        if ka[0] != kb[0]:
            return "distinct"
        if ka[1] == kb[1]:
            return "duplicate"
        pa, pb = _passive(ka[1]), _passive(kb[1])
        if pa is not None and pb is not None and pa != pb:
            return "distinct"  # "is deployed on Fridays" / "is tested on Fridays": another verb, another fact
        return "update"
    if kb is not None and ka is None and _moved(new) and _content(ta)[:len(kb[0])] == kb[0]:
        rest = "".join(_content(ta)[len(kb[0]):])
        if rest.startswith(_AT_ZH) and rest.rstrip("。.！!") not in "".join(_content(tb)):
            return "update"  # 办公室在三楼 -> 办公室搬到了六楼: 在 is where or when the key is, and it moved
        return None  # "周报改为每周一…" after "周报每周五…": the key moved, which attribute the old one held is unsure
    ops = _merged_ops(ta, tb)
    if len(ops) > 1:
        if len(ops) == 2 and any(_negation_only(ta, tb, op) for op in ops):
            return None  # 不加糖 -> 加两块糖: a negation dropped and a value given; named, never hidden
        return "distinct"  # more than one place changed: another subject or another attribute
    i1, i2, j1, j2 = ops[0]
    if all(t in DETS for t in ta[i1:i2] + tb[j1:j2]):
        return "duplicate"  # "in their coffee" / "in his coffee": the same subject, referred to otherwise
    if i1 == 0:
        return "distinct"  # the subject changed
    changed = ta[i1:i2] + tb[j1:j2]
    if any(t in _COMPARE for t in ta[:i1]):
        return None  # the other side of a comparison changed ("pnpm over npm" -> "pnpm over yarn")
    if changed and all(_is_value(t) and not _is_code(t) for t in changed):
        return "update" if _value_runs(ta) == 1 else None
    if any(_CJK.match(t) for t in ta + tb):
        return _judge_zh(old, new, ta, tb, i1, i2, j1, j2)
    va, vb = _verb_at(ta), _verb_at(tb)
    if va < 0 or va != vb or ta[va] != tb[vb] or i1 <= va:
        return "distinct" if 0 <= va and i1 <= va and va == vb else None  # subject or verb changed
    obj = va + 1
    while obj < len(ta) and ta[obj] in PARTICLES | {"use", "log"} and obj < i1:
        obj += 1  # "lives in", "reports to", "decided to use", "agreed to log"
    ctx = _context_start(ta, ca, obj)
    if i1 >= ctx:
        return "distinct"  # the attribute phrase changed: another attribute
    if i2 > ctx or j2 > _context_start(tb, cb, obj):
        return None
    if ctx < len(ta) or ta[va] in SINGLE:
        return "update"
    if "with" in ta[obj:i1]:  # "runs tests with pytest": the instrument slot
        return "update"
    if i2 - i1 == 1 and j2 - j1 == 1 and i2 < len(ta) and ta[i1 - 1] in ("the", "a", "an") \
            and ta[va] in USE_VERBS and ta[i2] not in PARTICLES | DETS | _COMPARE:
        return "update"  # one word before the same noun: "uses the red theme" -> "the orange theme"
    return None


NEGATIONS = frozenset(("不", "没", "没有", "不再", "别", "未", "not", "no", "never"))


def _negation_only(ta, tb, op: tuple[int, int, int, int]) -> bool:
    """The change ``op`` only adds or drops a negation ("不", "not")."""
    i1, i2, j1, j2 = op
    removed, added = "".join(ta[i1:i2]), "".join(tb[j1:j2])
    return (not removed and added in NEGATIONS) or (not added and removed in NEGATIONS)


def _judge_zh(old: str, new: str, ta, tb, i1, i2, j1, j2) -> str | None:
    """Chinese, no copula on both sides: a name (place, person, product) right after 在 / 用 / 到
    changed, and little follows it (the place or tool of the same action)."""
    anchor = ta[i1 - 1] if i1 else ""
    names = _zh_names(old) | _zh_names(new)
    a, b = "".join(ta[i1:i2]), "".join(tb[j1:j2])
    named = all(s in names or s.isascii() for s in (a, b) if s)
    if anchor in ("在", "用", "到", "于") and named and a and b and len(ta) - i2 <= 5:
        return "update"
    return None
