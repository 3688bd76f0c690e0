"""Obsidian's search operators read from a query (docs/search-syntax.md), and a pure matcher.

``parse_query`` splits a query into the free text that is ranked and the conditions a hit must
meet, and never raises: what is not an operator (``http://x``, ``10:30``, ``foo:bar``) or is not
well formed (an unclosed quote, bracket or parenthesis) is searched as text. Unlike Obsidian,
plain words are ranked, not required; ``OR`` joins the two terms beside it (``x a OR b`` requires
a or b), text with text or filters with filters. Words, phrases and excludes match as
case-insensitive substrings, as in Obsidian, which suits Chinese (no spaces between words).
"""
from __future__ import annotations

import datetime as dt
import re
import unicodedata
from dataclasses import dataclass, field, replace
from typing import Any, Collection, Mapping

OPERATORS = frozenset({"tag", "path", "file", "content", "line", "section"})
PAGE_KINDS = frozenset({"tag", "path", "file", "property"})
_OP = re.compile(r"([A-Za-z]+):")
_SPACE, _WORD = re.compile(r"\s*"), re.compile(r"\S+")
_DATE = re.compile(r"\d{4}-\d{2}-\d{2}")
_NUMBER = re.compile(r"[+-]?(?:\d+(?:\.\d*)?|\.\d+)")
_MAX_DEPTH = 8  # parentheses nested deeper are text (so no query can exhaust the recursion)
CNF = tuple[tuple[str, ...], ...]  # every inner tuple needs one of its strings
Piece = tuple[int, int, str]  # ranked text and its span in the query


@dataclass(frozen=True)
class Clause:
    """One condition: a text kind (word phrase line section all) or a page kind (PAGE_KINDS)."""

    kind: str
    value: str = ""
    negated: bool = False
    key: str = ""  # property name
    op: str = ""  # property: "" (has it), "=", ">", "<", ">=", "<="
    terms: CNF = ()  # line, section, all

    def describe(self) -> str:
        terms = " and ".join(" or ".join(f'"{t}"' for t in alts) for alts in self.terms)
        kind = " (as a date)" if _as_date(self.value) else \
            " (as a number)" if _as_number(self.value) is not None else ""
        text = {"word": f'contains "{self.value}"', "phrase": f'contains the phrase "{self.value}"',
                "tag": f"tagged #{self.value} or a tag nested under it", "path": f'path contains "{self.value}"',
                "file": f'file name contains "{self.value}"', "line": f"one line contains {terms}",
                "section": f"one heading section contains {terms}", "all": f"contains {terms}",
                "property": f'property "{self.key}" {self.op} "{self.value}"{kind}' if self.op else
                f'has property "{self.key}"'}[self.kind]
        return f"not ({text})" if self.negated else text


Group = tuple[tuple[Clause, ...], ...]  # holds when every clause of one of its members holds


@dataclass(frozen=True)
class PageFacts:
    """What ``page_matches`` looks at. Tags as in ``Page.tag_names`` (a leading '#' is dropped)."""

    path: str
    title: str = ""
    tags: tuple[str, ...] = ()
    frontmatter: Mapping[str, Any] = field(default_factory=dict)

    @classmethod
    def from_page(cls, page: Any) -> PageFacts:
        return cls(page.path, page.title, page.tag_names, page.frontmatter.data)


@dataclass(frozen=True)
class ParsedQuery:
    raw: str
    text: str  # ranked: the query's words as typed, without operators, quotes and OR
    groups: tuple[Group, ...] = ()  # all must hold
    notes: tuple[str, ...] = ()  # how odd input was read

    def required_phrases(self) -> tuple[str, ...]:
        """The phrases of groups that are nothing but phrases to find (``"a b"``, ``"a b" OR "c d"``):
        what ``without_phrases`` may relax. Excluded phrases and page conditions are never relaxed."""
        return tuple(c.value for g in self.groups if _phrases_only(g) for member in g for c in member)

    def without_phrases(self, absent: Collection[str]) -> "ParsedQuery":
        """This query with the phrase-only groups that name an ``absent`` phrase dropped, their words
        still ranked (``text`` keeps them), and a note saying so."""
        kept = tuple(g for g in self.groups
                     if not (_phrases_only(g) and any(c.value in absent for m in g for c in m)))
        said = ", ".join(f'"{p}"' for p in absent)
        return replace(self, groups=kept, notes=(*self.notes, f"no note has {said}: ranked as words instead"))

    @property
    def only_filters(self) -> bool:
        """No ranked text: the caller lists the pages that match, most recent first."""
        return not self.text

    def _singles(self, kinds: tuple[str, ...], negated: bool = False) -> tuple[str, ...]:
        return tuple(g[0][0].value for g in self.groups if len(g) == 1 and len(g[0]) == 1
                     and g[0][0].kind in kinds and g[0][0].negated == negated)

    @property
    def tags(self) -> tuple[str, ...]:
        """Required tags (lower case, no '#'), as ``search(tags=)``, but each admits nested tags."""
        return self._singles(("tag",))

    @property
    def paths(self) -> tuple[str, ...]:
        """Required parts of the vault-relative path (case-insensitive substrings, as Obsidian)."""
        return self._singles(("path",))

    @property
    def excludes(self) -> tuple[str, ...]:
        """``-word`` and ``-"a phrase"``: a hit whose text holds one is dropped (``text_matches``)."""
        return self._singles(("word", "phrase"), True)

    @property
    def on_pages(self) -> bool:
        """Some condition is about pages (tag, path, file, property): ``page_matches`` checks them."""
        return any(_on_page(g) for g in self.groups)

    @property
    def on_text(self) -> bool:
        """Some condition is about text (phrase, exclude, OR of words, line, section): ``text_matches``."""
        return any(not _on_page(g) for g in self.groups)

    @property
    def needs_properties(self) -> bool:
        """Some page condition reads the frontmatter (``[property]``)."""
        return any(c.kind == "property" for g in self.groups for m in g for c in m)

    def page_matches(self, facts: PageFacts) -> bool:
        """Every tag, path, file and property condition holds for this page."""
        return all(any(all(_page_holds(c, facts) for c in m) for m in g) for g in self.groups if _on_page(g))

    def text_matches(self, text: str, heading: str = "", excludes: bool = True) -> bool:
        """Every phrase, exclude, OR group, line: and section: condition holds for this text (a
        chunk's or a page body); ``heading`` (say the heading path) counts as one more line.
        ``excludes=False`` leaves out the lone ``-word``/``-"phrase"`` conditions, which are about
        the whole note (``note_excluded``)."""
        full = f"{heading}\n{text}" if heading else text
        hay, lines = _norm(full), [_norm(line) for line in full.splitlines()]
        return all(any(all(_text_holds(c, hay, lines) for c in m) for m in g)
                   for g in self.groups if not _on_page(g) and (excludes or not _exclude(g)))

    @property
    def has_excludes(self) -> bool:
        return any(_exclude(g) for g in self.groups)

    def note_excluded(self, body: str, title: str = "") -> bool:
        """A lone ``-word`` or ``-"phrase"`` holds for the note as a whole, as in Obsidian: a note
        that holds the word anywhere (its title too) is left out, not only its chunks that do."""
        full = f"{title}\n{body}" if title else body
        hay = _norm(full)
        return not all(_text_holds(g[0][0], hay, []) for g in self.groups if _exclude(g))

    def explain(self) -> list[str]:
        """How the query was read, a line each: the ranked text, each condition, then notes."""
        lines = [f"ranked text: {self.text}" if self.text else
                 "no ranked text: the pages that match the filters, most recent first"]
        lines += [("page: " if _on_page(g) else "text: ") + " OR ".join(" and ".join(c.describe() for c in m)
                                                                       for m in g) for g in self.groups]
        return lines + list(self.notes)


def _phrases_only(group: Group) -> bool:
    return all(c.kind == "phrase" and not c.negated for member in group for c in member)


def parse_query(text: str) -> ParsedQuery:
    reader = _Reader(text)
    groups: list[Group] = []
    pieces: list[Piece] = []
    reader.combine(reader.items(0, len(text), 0), groups, pieces)
    pieces.sort()  # joined by the space typed between two ranked words, else by one space
    gaps = [text[a[1]:b[0]] for a, b in zip(pieces, pieces[1:])] + [""]
    ranked = "".join(p[2] + (gap if gap.isspace() else " ") for p, gap in zip(pieces, gaps))
    return ParsedQuery(text, ranked.strip(), tuple(groups), tuple(dict.fromkeys(reader.notes)))


# -- reading --------------------------------------------------------------------------------------
@dataclass
class _Item:
    kind: str  # word (ranked; required inside OR) | term (a clause) | or | group
    start: int
    end: int
    clause: Clause | None = None
    pieces: tuple[Piece, ...] = ()
    inner: list[_Item] = field(default_factory=list)  # a group's items
    broken: bool = False  # a word read from syntax that was not well formed


class _Reader:
    def __init__(self, text: str):
        self.s, self.notes, self.match, opened = text, [], {}, []  # match: '(' -> its ')'
        for i, ch in enumerate(text):
            if ch == "(":
                opened.append(i)
            elif ch == ")" and opened:
                self.match[opened.pop()] = i

    def edge(self, j: int, end: int) -> bool:
        return j >= end or self.s[j].isspace()

    def word(self, i: int, end: int, broken: bool = False) -> tuple[_Item, int]:
        """A word up to a space; a broken construct's word keeps a closed (), [] or "" whole."""
        j = i if broken else _WORD.match(self.s, i, end).end()
        while j < end and not self.s[j].isspace():
            close = self.match.get(j, end) if self.s[j] == "(" else \
                self.s.find("]" if self.s[j] == "[" else '"', j + 1, end) if self.s[j] in '["' else j
            j = (close if 0 <= close < end else j) + 1
        return _Item("word", i, j, Clause("word", self.s[i:j]), ((i, j, self.s[i:j]),), broken=broken), j

    def items(self, i: int, end: int, depth: int) -> list[_Item]:
        out = []
        while (i := _SPACE.match(self.s, i, end).end()) < end:
            item, i = self.item(i, end, depth)
            out.append(item)
        return out

    def paren(self, i: int, end: int, depth: int) -> tuple[list[_Item], int] | None:
        """The items inside the parenthesis at ``i`` and the end of the group, if well formed."""
        close = self.match.get(i, end)
        if close >= end:
            self.notes.append("an unclosed parenthesis: searched as text")
        elif depth < _MAX_DEPTH and self.edge(close + 1, end):
            inner = self.items(i + 1, close, depth + 1)
            return (inner, close + 1) if inner else None
        return None

    def quoted(self, i: int, end: int) -> tuple[str, int] | None:
        close = self.s.find('"', i + 1, end)
        if close < 0:
            self.notes.append("an unclosed quote: searched as text")
        elif self.edge(close + 1, end) and self.s[i + 1:close].strip():
            return self.s[i + 1:close].strip(), close + 1
        return None

    def item(self, i: int, end: int, depth: int) -> tuple[_Item, int]:
        s, ch = self.s, self.s[i]
        if ch == "-" and i + 1 < end and not s[i + 1].isspace() and s[i + 1] != "-":
            inner, j = self.item(i + 1, end, depth)
            clause = inner.clause if inner.kind in ("word", "term") and not inner.broken else None
            terms = _text_cnf(inner.inner) if inner.kind == "group" else None  # -(a b): not both
            clause = Clause("all", terms=terms) if terms else clause if clause and not clause.negated else None
            found = (_Item("term", i, j, replace(clause, negated=True)), j) if clause else None
        elif ch == '"':
            phrase = self.quoted(i, end)
            found = (_Item("term", i, phrase[1], Clause("phrase", phrase[0]), ((i, phrase[1], phrase[0]),)),
                     phrase[1]) if phrase else None
        elif ch == "[" and not s.startswith("[[", i):
            found = self.property(i, end)
        elif ch == "(":
            group = self.paren(i, end, depth)
            found = (_Item("group", i, group[1], inner=group[0]), group[1]) if group else None
        elif (m := _OP.match(s, i, end)) and m.group(1).lower() in OPERATORS:
            found = self.operator(m.group(1).lower(), m.end(), i, end, depth)
        elif s.startswith("OR", i) and self.edge(i + 2, end):
            return _Item("or", i, i + 2, Clause("word", "OR"), ((i, i + 2, "OR"),)), i + 2
        elif m and not s.startswith("//", m.end()) and not self.edge(m.end(), end):
            self.notes.append(f'"{m.group(1)}:" is not an operator: read as a word')
            return self.word(i, end)
        else:
            return self.word(i, end)
        return found or self.word(i, end, True)

    def operator(self, name: str, j: int, i: int, end: int, depth: int) -> tuple[_Item, int] | None:
        """``name:`` then a word, a quoted phrase or a parenthesised group."""
        if self.edge(j, end):
            return None
        if self.s[j] == "(":
            found = self.paren(j, end, depth)
        else:
            first, k = self.item(j, end, depth)
            found = ([first], k) if first.kind != "or" else None
        if not found:
            return None
        inner, k = found
        if name == "content":  # just text
            return (inner[0] if len(inner) == 1 else _Item("group", i, k, inner=inner)), k
        if name in ("line", "section"):
            terms = _text_cnf(inner)
            return (_Item("term", i, k, Clause(name, terms=terms), _pieces(inner)), k) if terms else None
        converted = []  # tag:(a OR b): each word or phrase a filter of this kind
        for it in inner:
            text = it.clause and it.clause.kind in ("word", "phrase") and not it.clause.negated and not it.broken
            value = it.clause.value.strip() if text and it.clause else ""
            value = value.lstrip("#").strip().rstrip("/").lower() if name == "tag" else \
                value.replace("\\", "/").lstrip("/") if name == "path" else value
            if it.kind != "or" and not value:
                return None
            converted.append(it if it.kind == "or" else _Item("term", it.start, it.end, Clause(name, value)))
        return (converted[0] if len(converted) == 1 else _Item("group", i, k, inner=converted)), k

    def property(self, i: int, end: int) -> tuple[_Item, int] | None:
        close = self.s.find("]", i + 1, end)
        if close < 0:
            self.notes.append("an unclosed [: searched as text")
            return None
        key, colon, value = self.s[i + 1:close].partition(":")
        key, value = key.strip(), value.strip()
        if not key or '"' in key or "[" in key + value or not self.edge(close + 1, end):
            return None
        if key.startswith("!"):  # [!warning]: a callout's type (no property is named "!...": YAML reads a tag)
            self.notes.append(f"{self.s[i:close + 1]} is a callout type, not a property: searched as text")
            return None
        op = next((c for c in (">=", "<=", ">", "<") if value.startswith(c)), "=")
        value = value if op == "=" else value[len(op):]
        values = [v.strip().strip('"').strip() for v in (value.split(" OR ") if op == "=" else [value])]
        values = [v for v in values if v]
        if not colon or not values:
            return _Item("term", i, close + 1, Clause("property", key=key)), close + 1
        inner: list[_Item] = []
        for v in values:  # [status:draft OR done]: one property clause each, OR between
            inner += [_Item("or", i, i)] if inner else []
            inner.append(_Item("term", i, close + 1, Clause("property", v, key=key, op=op)))
        return (inner[0] if len(inner) == 1 else _Item("group", i, close + 1, inner=inner)), close + 1

    def combine(self, items: list[_Item], groups: list[Group], pieces: list[Piece]) -> None:
        for chain in _chains(items):
            if len(chain) == 1 and chain[0].kind == "group":
                self.combine(chain[0].inner, groups, pieces)  # parentheses alone change nothing
            elif len(chain) == 1:
                pieces.extend(chain[0].pieces)
                if chain[0].kind == "term" and chain[0].clause:
                    groups.append(((chain[0].clause,),))
            elif (members := _members(chain)) and len({c.kind in PAGE_KINDS for m in members for c in m}) == 1:
                groups.append(tuple(members))
                pieces.extend(_pieces(chain))
            else:
                self.notes.append("OR between a filter and text, or around a nested group: read as AND")
                for item in chain:
                    self.combine([item], groups, pieces)


def _pieces(items: list[_Item]) -> tuple[Piece, ...]:
    return tuple(p for it in items if it.kind != "or" for p in it.pieces + _pieces(it.inner))


def _chains(items: list[_Item]) -> list[list[_Item]]:
    """Split on OR: ``a OR b c`` -> [[a, b], [c]]. An OR with nothing on one side is a word."""
    def joins(n: int) -> bool:  # items[n] is an OR between two terms
        return 0 < n < len(items) - 1 and [it.kind == "or" for it in items[n - 1:n + 2]] == [False, True, False]

    chains: list[list[_Item]] = []
    for n, item in enumerate(items):
        if joins(n - 1):
            chains[-1].append(item)
        elif not joins(n):
            chains.append([replace(item, kind="word") if item.kind == "or" else item])
    return chains


def _members(chain: list[_Item]) -> list[tuple[Clause, ...]] | None:
    """An OR chain's alternatives: ``(a b)`` is one (a and b), ``(a OR b)`` two."""
    members: list[tuple[Clause, ...]] = []
    for item in chain:
        inner = _chains(item.inner) if item.kind == "group" else [[item]]
        clauses = [[it.clause for it in c] for c in inner]
        if any(it.kind == "group" or it.clause is None for c in inner for it in c):
            return None
        if len(inner) == 1:
            members.extend((c,) for c in clauses[0] if c)
        elif all(len(c) == 1 for c in clauses):
            members.append(tuple(c[0] for c in clauses if c[0]))
        else:
            return None
    return members


def _text_cnf(items: list[_Item]) -> CNF | None:
    """Words and phrases, with OR between some, as a CNF (for line:, section: and -( ))."""
    terms = []
    for chain in _chains(items):
        if any(it.kind == "group" or not it.clause or it.clause.kind not in ("word", "phrase")
               or it.clause.negated for it in chain):
            return None
        terms.append(tuple(it.clause.value for it in chain if it.clause))
    return tuple(terms) or None


# -- matching -------------------------------------------------------------------------------------
def _norm(text: str) -> str:
    """Spaces collapsed, case folded, composed form (NFC): ``café`` typed either way matches."""
    if not text.isascii():
        text = unicodedata.normalize("NFC", text)
    return " ".join(text.split()).casefold()


def _on_page(group: Group) -> bool:
    return any(c.kind in PAGE_KINDS for m in group for c in m)


def _exclude(group: Group) -> bool:
    """A group that is one negated word or phrase: ``-word``, ``-"a phrase"``."""
    return len(group) == 1 and len(group[0]) == 1 and group[0][0].kind in ("word", "phrase") \
        and group[0][0].negated and not group[0][0].terms


def _text_holds(clause: Clause, hay: str, lines: list[str]) -> bool:
    held = any(_cnf_holds(clause.terms, line) for line in lines) if clause.kind == "line" else \
        _cnf_holds(clause.terms, hay) if clause.terms else _norm(clause.value) in hay
    return held != clause.negated


def _cnf_holds(terms: CNF, hay: str) -> bool:
    return all(any(_norm(t) in hay for t in alts) for alts in terms)


def _page_holds(clause: Clause, facts: PageFacts) -> bool:
    name = facts.path if clause.kind == "path" else facts.path.rsplit("/", 1)[-1]
    if clause.kind == "tag":  # both lower case, as the index keeps them
        held = any(t == clause.value or t.startswith(clause.value + "/")
                   for t in (t.lstrip("#").lower() for t in facts.tags))
    elif clause.kind in ("path", "file"):
        held = clause.value.casefold() in name.casefold()
    else:
        keys = [k for k in facts.frontmatter if str(k).casefold() == clause.key.casefold()]
        values = [v for k in keys for v in (facts.frontmatter[k] if isinstance(facts.frontmatter[k], (
            list, tuple, set, frozenset)) else [facts.frontmatter[k]])]  # a list matches by any element
        held = bool(keys) and (not clause.op or any(_value_holds(clause, v) for v in values))
    return held != clause.negated


def _value_holds(clause: Clause, element: Any) -> bool:
    """One frontmatter value against ``[key:value]``: as dates, else numbers, else text (``=`` only)."""
    want: Any = _as_date(clause.value)
    have: Any = _as_date(element, want) if want is not None else None
    if want is None or have is None:
        want, have = _as_number(clause.value), _as_number(element)
    if want is not None and have is not None:
        return {"=": have == want, ">": have > want, "<": have < want, ">=": have >= want,
                "<=": have <= want}[clause.op]
    if clause.op != "=" or element is None or isinstance(element, (dict, list)):
        return False
    text, want = str(element).strip().casefold(), clause.value.casefold()
    if text.startswith("[[") and text.endswith("]]"):  # a link: its target counts too
        return want in (text, text[2:-2].split("|")[0].split("#")[0].strip())
    return text == want


def _as_date(value: Any, like: Any = None) -> dt.date | None:
    """A date or a (naive) datetime; with ``like``, of the same kind as it (dates compare as dates)."""
    found: dt.date | None = value if isinstance(value, dt.date) else None
    if isinstance(value, str) and _DATE.match(value.strip()):
        try:
            text = value.strip()
            found = dt.date.fromisoformat(text) if len(text) == 10 else dt.datetime.fromisoformat(text)
        except ValueError:
            return None
    if isinstance(found, dt.datetime):
        found = found.replace(tzinfo=None)
    if found is None or like is None or isinstance(found, dt.datetime) == isinstance(like, dt.datetime):
        return found
    return found.date() if isinstance(found, dt.datetime) else dt.datetime.combine(found, dt.time())


def _as_number(value: Any) -> float | None:
    number = isinstance(value, str) and _NUMBER.fullmatch(value.strip()) or isinstance(value, (int, float))
    return float(value) if number and not isinstance(value, bool) else None
