"""A source sentence that disagrees with a sentence a page already holds: the same subject with
another value (a number, a date, a version, a name). Such a sentence is never written over the
page's text: it is held back from the compiled section and put in front of a person
(``wikimem review``, lint WM509, MCP ``review``).

The test is the one ``remember`` uses to tell an update from another fact (knowledge/similarity.py
``same_slot``: the two differ only in their value slot, the subject kept), held to what a
contradiction needs: most words shared, and every word that differs on both sides a value or a name
(a labelled number such as "Docker 20.10" is a value here, not another subject), so a sentence that
merely says more ("Git is very fast") or says something else is no contradiction. Each finding
is checked to quote both texts exactly before it is shown.
"""
from __future__ import annotations

import difflib
import re
import unicodedata
from dataclasses import dataclass

from ..knowledge.similarity import numbers, same_slot
from .sources import plain_links, words_pattern

MIN_OVERLAP = 0.5  # share of their words (values aside) two sentences must have to be about one thing
MAX_CHARS = 400
_TOKEN = re.compile(r"[\w.:/%+-]+")
_VALUE = re.compile(r"^(?:v?\d[\w.:/%+-]*|\d+(?:st|nd|rd|th))$", re.I)
_MONTHS = frozenset("""january february march april may june july august september october november december
jan feb mar apr jun jul aug sep sept oct nov dec monday tuesday wednesday thursday friday saturday sunday""".split())


@dataclass(frozen=True)
class Contradiction:
    page: str
    page_line: int
    page_sentence: str
    source: str
    source_line: int
    source_sentence: str
    source_link: str  # the citation the source sentence would have had
    found_by: str = "extractive"  # or the llm kind

    def to_dict(self) -> dict:
        return {"page": self.page, "page_line": self.page_line, "page_sentence": self.page_sentence,
                "page_link": f"[[{self.page.removesuffix('.md')}]]", "source": self.source,
                "source_line": self.source_line, "source_sentence": self.source_sentence,
                "source_link": self.source_link, "found_by": self.found_by}


def _tokens(text: str) -> list[str]:
    return [t.strip(".:,;") for t in _TOKEN.findall(unicodedata.normalize("NFKC", text)) if t.strip(".:,;")]


def _value_or_name(token: str) -> bool:
    return bool(_VALUE.match(token)) or token.casefold() in _MONTHS or token[:1].isupper()


def disagree(page_sentence: str, source_sentence: str) -> bool:
    a, b = page_sentence, source_sentence
    if len(a) > MAX_CHARS or len(b) > MAX_CHARS:
        return False
    ta, tb = _tokens(a), _tokens(b)
    if [t.casefold() for t in ta] == [t.casefold() for t in tb]:
        return False
    wa = {t.casefold() for t in ta if not _VALUE.match(t)}
    wb = {t.casefold() for t in tb if not _VALUE.match(t)}
    if not wa or len(wa & wb) / len(wa | wb) < MIN_OVERLAP or not same_slot(a, b):
        return False
    replaced = False
    for op, i1, i2, j1, j2 in difflib.SequenceMatcher(None, [t.casefold() for t in ta], [t.casefold() for t in tb],
                                                        autojunk=False).get_opcodes():
        if op == "equal":
            continue
        if op != "replace":
            return False  # said more or less, not otherwise
        if not all(_value_or_name(t) for t in ta[i1:i2] + tb[j1:j2]):
            return False
        replaced = True
    return replaced and (numbers(a) != numbers(b) or any(t[:1].isupper() for t in ta + tb))


def quoted_in(text: str, quote: str) -> int | None:
    """The 1-based line of ``text`` where ``quote``'s words stand in order, or None."""
    if not quote.split():
        return None
    m = words_pattern(quote).search(text)
    return None if m is None else text.count("\n", 0, m.start()) + 1


def verified(found: list[Contradiction], read) -> tuple[list[Contradiction], int]:
    """The findings whose two quotes stand where they say (``read(path)`` -> the file's text),
    with their lines taken from the files; and how many were dropped for a quote that does not."""
    out, dropped = [], 0
    texts: dict[str, str | None] = {}
    for c in found:
        for path in (c.page, c.source):
            if path not in texts:
                try:
                    texts[path] = read(path)
                except Exception:  # noqa: BLE001 - a file gone: its quote cannot be checked
                    texts[path] = None
        page_text, source_text = texts[c.page], texts[c.source]
        pl = quoted_in(plain_links(page_text), c.page_sentence) if page_text is not None else None
        sl = quoted_in(source_text, c.source_sentence) if source_text is not None else None
        if pl is None or sl is None:
            dropped += 1
            continue
        out.append(Contradiction(c.page, pl, c.page_sentence, c.source, sl, c.source_sentence, c.source_link,
                                 c.found_by))
    return out, dropped
