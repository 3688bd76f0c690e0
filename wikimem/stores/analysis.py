"""Tokenising mixed Chinese/Latin text for the lexical index.

Han runs are segmented with rjieba in search mode (long words plus their shorter parts, for
recall); everything else is split into runs of letters/digits and lower-cased. ASCII words are
reduced to their English Snowball stem ("painting", "paints" -> "paint"): questions and notes
rarely use the same inflection, and an exact-form index missed them. Stop words (English and the
commonest Chinese function words) are dropped before stemming. The lexical index receives the
tokens joined by spaces, so SQLite's tokenizer only has to split on spaces.

Changing anything here changes what is stored: bump ``ANALYZER`` so caches are rebuilt.
"""
from __future__ import annotations

import re
import threading
import unicodedata

import snowballstemmer

ANALYZER = "snowball-english-2-nfc"  # part of the cache schema: a different analyzer means a rebuild

_HAN_CLASS = "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
_RUN = re.compile(rf"[{_HAN_CLASS}]+|[^\W_{_HAN_CLASS}]+", re.UNICODE)
_HAN = re.compile(rf"[{_HAN_CLASS}]")

STOP_WORDS = frozenset("""a about above after again against all am an and any are as at be because been before
being below between both but by can could did do does doing down during each few for from further had has
have having he her here hers herself him himself his how i if in into is it its itself just me more most my
myself no nor not now of off on once only or other our ours ourselves out over own same she should so some
such than that the their theirs them themselves then there these they this those through to too under until
up very was we were what when where which while who whom why will with would you your yours yourself
yourselves s t don didn doesn isn wasn weren won wouldn couldn shouldn ll re ve d m o y
的 了 和 是 在 也 就 都 而 及 与 着 或 一个 没有 我们 你们 他们 她们 这个 那个 什么 吗 呢 吧 啊""".split())


_ASCII_WORD = re.compile(r"[a-z]+")
_STEMS: dict[str, str] = {}
_LOCAL = threading.local()


def _stem_word(word: str) -> str:
    """A Snowball stemmer per thread: one keeps the word it is working on in itself, and two threads
    sharing one (a server's requests, a watcher's build) got each other's letters: wrong stems,
    memoised for good, or an IndexError."""
    stemmer = getattr(_LOCAL, "stemmer", None)
    if stemmer is None:
        stemmer = _LOCAL.stemmer = snowballstemmer.stemmer("english")
    return stemmer.stemWord(word)


def stem(word: str) -> str:
    """English Snowball stem of a lower-case ASCII word; other words are returned as they are.
    Memoised: vocabularies are Zipfian, so the cache is small and nearly every call is a hit."""
    got = _STEMS.get(word)
    if got is None:
        got = _stem_word(word) if _ASCII_WORD.fullmatch(word) else word
        if len(_STEMS) < 500_000:
            _STEMS[word] = got
    return got


def tokens(text: str) -> list[str]:
    """Text -> index tokens in order (stop words removed). rjieba (whose dictionary takes ~0.1 s
    to load) is only imported once Han text is actually met. Text is read in Unicode's composed
    form (NFC) first: "café" typed with a combining accent (macOS file names, some keyboards) is the
    same word as the precomposed one, not "cafe" plus a dropped mark."""
    out: list[str] = []
    if not text.isascii() and not unicodedata.is_normalized("NFC", text):
        text = unicodedata.normalize("NFC", text)
    for m in _RUN.finditer(text):
        run = m.group(0)
        if _HAN.match(run):
            from rjieba import cut_for_search
            out.extend(t for t in cut_for_search(run) if t.strip() and t not in STOP_WORDS)
        else:
            low = run.lower()
            if low not in STOP_WORDS:
                out.append(stem(low))
    return out


def terms(text: str) -> list[str]:
    """Query text -> de-duplicated index terms, in order."""
    return list(dict.fromkeys(tokens(text)))
