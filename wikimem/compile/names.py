"""What a compile writes pages about: the entity and concept pages there are (matched by title and
alias), and new names the sources use often enough to deserve a page.

A new page needs a name that stands for one thing: a proper name written with capitals inside a
sentence ("Create an empty Git repository", "Stephen Robertson"), or a name in capitals ("GNU",
"JSON") or with a capital inside it ("GitHub"). A capitalised word that opens a sentence is no name
by itself (any sentence opens so), nor is a stop word, a weekday or month, a number, a word of one
letter or one a person uses for notes ("Example", "Note"). A name must be named in at least
SCHEMA.md's ``entity_min_references`` sources (else ``create_page_after_mentions``, default 2).
Code spans are not read for names (``git commit`` is an example, not a claim). Chinese has no
capitals: a Chinese name is one the writing marks (《》, 「」, short “”, 中文（English）), names_zh.py.
"""
from __future__ import annotations

import re
from collections import Counter, defaultdict
from dataclasses import dataclass
from functools import lru_cache

from ..ingest.mentions import COMMON_NAMES, _capitals, _pattern, _weak
from ..model import Page
from ..stores.analysis import STOP_WORDS
from ..vault.files import fit_name
from . import names_zh
from .acronyms import pairs as acronym_pairs
from .sources import Source

DEFAULT_MIN_REFERENCES = 2
KINDS = ("entity", "concept")
FOLDERS = {"entity": "entities", "concept": "concepts"}
_MONTHS_DAYS = frozenset("""january february march april may june july august september october november
december monday tuesday wednesday thursday friday saturday sunday""".split())
NOT_NAMES = COMMON_NAMES | _MONTHS_DAYS | frozenset("""note notes example examples warning tip see also
usage usages option options default defaults true false null none yes no ok todo fixme caution important
info information more less first last next previous new old other see step steps section chapter figure
table part page pages version versions kb mb gb tb pb kib mib gib tib""".split())
_LABEL = re.compile(r"^\W*(?:\[[^\]]*\]\s*|\([^)]*\)\s*)+")  # "[Interactive] Upload ...": the label is no start
_CODE = re.compile(r"`[^`\n]*`|\{\{[^}]*\}\}|<[^>\s]+>|\b(?:https?|ftp)://\S+")
_WORD = r"[A-Z][A-Za-z0-9]*(?:['’-][A-Z0-9][A-Za-z0-9]*)*"  # "Wi-Fi", "O'Neil"; not "Debian-based"
_LETTER = re.compile(r"[A-Za-z]")
_OPENER = re.compile(r"\W*(" + _WORD + r")(?![\w\[\]])")
_RUN = re.compile(rf"(?<![\w\[\]/.@-])({_WORD}(?:\s+(?:of|de|van|von|der|du|la|le)?\s*{_WORD})*)(?![\w\[\]/@]|\.\w)")
LOWER_CASE_RATIO = 3  # written in lower case this many times as often as capitalised inside a sentence: a word
# (Node.js's docs: request 200 : 3, testing 25 : 2, current 43 : 12; a tool named in prose stays: git 22 : 9)
_LOWER_WORD = re.compile(r"(?<![\w'’-])[a-z][a-z0-9]*(?![\w'’-])")
_UNSAFE = re.compile(r'[\\/:*?"<>|#^\[\]\x00-\x1f]+')


@dataclass(frozen=True)
class Subject:
    """A page a compile writes a section on: one there is, or one it would create."""

    title: str
    kind: str  # entity | concept
    path: str
    names: tuple[str, ...]  # title and aliases: what a sentence must name
    existing: bool
    references: int = 0  # sources naming it (new candidates)

    def to_dict(self) -> dict:
        return {"title": self.title, "kind": self.kind, "path": self.path, "existing": self.existing,
                "references": self.references}


def min_references(thresholds: dict) -> int:
    for key in ("entity_min_references", "create_page_after_mentions"):
        value = thresholds.get(key)
        if isinstance(value, int) and not isinstance(value, bool) and value >= 1:
            return value
    return DEFAULT_MIN_REFERENCES


def _usable(name: str) -> bool:
    """A title or alias a sentence can be matched on without matching everything."""
    if not name.strip():
        return False
    if not _weak(name) or _capitals(name):
        return True
    # a short name written with a capital ("Git", "Go") is matched as written, unless it is an everyday word
    words = re.findall(r"\w+", name.casefold())
    return any(c.isupper() for c in name) and sum(c.isalpha() for c in name) >= 2 \
        and not all(w in STOP_WORDS or w in NOT_NAMES for w in words)


@lru_cache(maxsize=1 << 16)  # each sentence is read for every page's names
def prose(text: str) -> str:
    """A sentence without its code spans, placeholders and addresses: what names are read in
    (``https://github.com/x`` does not name GitHub, `git commit` is an example, not a claim)."""
    return _CODE.sub(" , ", text)


def matcher(names: tuple[str, ...], kind: str = "entity"):
    """name -> a compiled pattern: whole words; a short or everyday name, and a one-word entity name
    ("Git", "Node"), only as written, since "git" and "node" are also ordinary words; a concept
    ("Chunking") or a name of several words in any case. Existing pages' names were chosen by
    ``_usable`` already; a new name is a name."""
    return [_pattern(n, 0 if _weak(n) or (kind == "entity" and len(n.split()) == 1 and n != n.casefold())
                     else re.I) for n in names if n.strip()]


def existing_subjects(pages: dict[str, Page]) -> list[Subject]:
    out = []
    for path in sorted(pages):
        page = pages[path]
        if page.type not in KINDS or path.startswith("raw/") or page.status == "superseded":
            continue
        names = tuple(dict.fromkeys(n for n in (page.title, *page.aliases) if isinstance(n, str) and _usable(n)))
        if names:
            out.append(Subject(page.title, page.type, path, names, True))
    return out


def _strip_opener(words: list[str], at_start: bool) -> list[str]:
    """The words of a run that opens a sentence, without the stop words and note words before it."""
    while words and words[0].casefold() in STOP_WORDS | NOT_NAMES:
        words = words[1:]
    return words


def _strong_word(word: str) -> bool:
    """A word that is a name wherever it stands: in capitals ("GNU") or with a capital inside ("GitHub")."""
    return _capitals(word) or any(c.isupper() for c in word[1:])


def _is_name(name: str, mid_sentence: bool) -> bool:
    words = name.split()
    low = [w.casefold().strip("'’") for w in words]
    if any(w in STOP_WORDS for w in (low[0], low[-1])) or all(w in NOT_NAMES for w in low):
        return False
    letters = sum(c.isalpha() for c in name)
    if letters < 2 or not name[0].isalpha():
        return False
    strong = len(words) > 1 or _capitals(name) or any(c.isupper() for c in name[1:])
    if len(words) == 1 and len(name) < 3 and not _capitals(name):
        return False
    return strong or mid_sentence


_AUX = frozenset("""is are was were has have had can could will would should may might must does did provides
uses supports runs makes allows lets offers includes contains describes defines requires maintains creates builds
says means works""".split())


def _subject(text: str, end: int) -> bool:
    """The run that opens a sentence is its subject, not a verb and its object: a verb follows it
    ("Secure Shell is a protocol", "Stephen Robertson developed BM25", "Apache Kafka provides ...").
    "Install GRUB on ..." and "Manage Docker containers" go on otherwise. Without this the first word
    was cut as a verb, and a compile made pages "Shell", "Robertson", "Studio Code"."""
    nxt = re.match(r"\s+([a-z]+)\b", text[end:])
    return nxt is not None and (nxt.group(1) in _AUX or (nxt.group(1).endswith("ed") and len(nxt.group(1)) > 3))


def _candidates_in(text: str) -> list[tuple[str, bool]]:
    """(name, whether it stands inside the sentence) of each name-like run of ``text``."""
    text = prose(text)
    out = []
    label = _LABEL.match(text)
    first = _LETTER.search(text, label.end() if label else 0)
    start = first.start() if first else 0
    for m in _RUN.finditer(text):
        words = re.sub(r"['’]s$", "", m.group(1)).split()
        at_start = m.start() <= start or bool(re.search(r"[.!?:;]\s*$", text[:m.start()]))
        if at_start:
            opened = len(words)
            words = _strip_opener(words, True)
            if len(words) == opened > 1 and not _strong_word(words[0]) and not _subject(text, m.end()):
                words = words[1:]  # "Install GRUB", "Manage Docker": the verb that opens the sentence is no name
            at_start = len(words) == len(m.group(1).split())  # the opener itself went: what is left is inside
        name = " ".join(words)
        if name and _is_name(name, not at_start):
            out.append((name, not at_start))
    return out


def opener(text: str) -> str | None:
    """The capitalised word a sentence opens with (casefolded), if any."""
    text = prose(text)
    label = _LABEL.match(text)
    m = _OPENER.match(text, label.end() if label else 0)
    return m.group(1).casefold() if m else None


def page_path(kind: str, title: str) -> str:
    name = fit_name(" ".join(_UNSAFE.sub(" ", title).split())[:100]).strip(" .") or "untitled"
    return f"{FOLDERS[kind]}/{name}.md"


def new_subjects(sources: list[Source], existing: list[Subject], pages: dict[str, Page], need: int) -> list[Subject]:
    """Names named in at least ``need`` sources that no page has yet (see the module docstring)."""
    taken = {n.casefold() for s in existing for n in s.names}
    for path, page in pages.items():  # any page of that name: never a second one beside it
        if not path.startswith("raw/") and page.type != "source":
            taken.update(n.casefold() for n in (page.title, *page.aliases) if isinstance(n, str))
    forms: dict[str, Counter] = defaultdict(Counter)
    inside: Counter = Counter()  # times a name stands inside a sentence
    opens: Counter = Counter()  # times a word opens one: "Delete" opens many, so it is a verb, not a name
    lower: Counter = Counter()  # times a word is written in lower case: "current", "tier" are words, not names
    seen_in: dict[str, set[str]] = defaultdict(set)
    defined: dict[str, tuple[str, str]] = {}  # acronym key -> (expansion, acronym) as a source defines them
    zh_defined: dict[str, list[tuple[str, str]]] = defaultdict(list)  # other name's key -> (Chinese term, other name)
    zh_strong: set[str] = set()  # Chinese names of a 《》 or a definition: named wherever they are written
    zh_marked: set[str] = set()  # Chinese names a 《》 marks: a title, never a verb
    for source in sources:
        for sentence in source.sentences:
            for expansion, acronym in acronym_pairs(prose(sentence.text)):
                defined.setdefault(acronym.casefold(), (expansion, acronym))
            if names_zh.han(sentence.text):
                _chinese(prose(sentence.text), source.path, forms, seen_in, zh_defined, zh_strong, zh_marked)
            first = opener(sentence.text)
            if first:
                opens[first] += 1
            lower.update(_LOWER_WORD.findall(prose(sentence.text)))
            for name, mid in _candidates_in(sentence.text):
                key = name.casefold()
                forms[key][name] += 1
                seen_in[key].add(source.path)
                if mid:
                    inside[key] += 1
    for key in sorted(forms):  # "URLs" is "URL" (not "HTTPS" "HTTP"): a plural counts for its singular
        if not all(f.endswith("s") and not f[:-1].islower() for f in forms[key]):
            continue
        if key[:-1] in taken:  # the page of the singular is there, and speaks for both
            del forms[key]
        elif key[:-1] in forms:
            forms[key[:-1]].update(forms.pop(key))
            seen_in[key[:-1]] |= seen_in.pop(key)
            inside[key[:-1]] += inside.pop(key, 0)
    _written_in(zh_strong & set(forms), sources, seen_in, forms, zh_marked)
    for key in [k for k, pairs in zh_defined.items() if not all(t.casefold() in forms for t, _ in pairs)]:
        del zh_defined[key]  # a verb's gloss ("移动（move）") pairs nothing
    _one_meaning(zh_defined)
    alias = _one_page_per_definition(defined, forms, seen_in, inside, taken)
    alias.update(_one_page_per_definition(zh_defined, forms, seen_in, inside, taken))
    out = []
    for key in sorted(forms):
        best = sorted(forms[key].items(), key=lambda kv: (-kv[1], kv[0]))[0][0]
        strong = _strong_word(best) or " " in best or names_zh.han(best) or key in zh_marked  # marked as a name
        if key in taken or not strong and inside[key] <= opens[key]:
            continue  # a plain capitalised word must stand inside sentences more often than it opens them
        if not strong and lower[key] >= LOWER_CASE_RATIO * inside[key]:
            continue  # a word the sources mostly write in lower case is a word ("current", "request"), not a name
        if len(seen_in[key]) < need:
            continue
        path = page_path("entity", best)
        if path in pages or any(p.casefold() == path.casefold() for p in pages):
            continue
        names = (best, alias[key]) if key in alias and alias[key].casefold() not in taken \
            and _usable(alias[key]) else (best,)
        out.append(Subject(best, "entity", path, names, False, len(seen_in[key])))
    return out


def _one_page_per_definition(defined: dict[str, tuple[str, str]], forms: dict[str, Counter],
                             seen_in: dict[str, set[str]], inside: Counter, taken: set[str]) -> dict[str, str]:
    """A name and its acronym that a source defines as one ("Technical Steering Committee (TSC)",
    acronyms.py) make one candidate, titled by the expansion with the acronym as its alias; where a
    page already stands for either, neither makes a new one. Returns expansion key -> acronym."""
    alias: dict[str, str] = {}
    for acr_key, (expansion, acronym) in sorted(defined.items()):
        exp_key = expansion.casefold()
        if exp_key in taken or acr_key in taken:
            forms.pop(exp_key, None)
            forms.pop(acr_key, None)
            continue
        if exp_key not in forms:
            if acr_key not in forms:
                continue
            forms[exp_key][expansion] += 0  # named only in the definition: the acronym's page takes its title
        if acr_key in forms:
            forms.pop(acr_key)
            seen_in[exp_key] |= seen_in.pop(acr_key, set())
            inside[exp_key] += inside.pop(acr_key, 0)
        alias[exp_key] = acronym
    return alias


def _chinese(text: str, path: str, forms: dict[str, Counter], seen_in: dict[str, set[str]],
             defined: dict[str, list[tuple[str, str]]], strong: set[str], titles: set[str]) -> None:
    """The Chinese names one sentence marks (names_zh.py), counted as the English ones are."""
    for name in names_zh.marked(text):
        key = name.casefold()
        forms[key][name] += 1
        seen_in[key].add(path)
        if f"《{name}》" in text:
            strong.add(key)
            titles.add(key)
    for term, other in names_zh.definitions(text):
        forms[term.casefold()][term] += 1
        seen_in[term.casefold()].add(path)
        strong.add(term.casefold())
        if (term, other) not in defined[other.casefold()]:
            defined[other.casefold()].append((term, other))


def _one_meaning(defined: dict[str, list[tuple[str, str]]]) -> None:
    """Each other name glossing one Chinese term, as ``_one_page_per_definition`` takes them; one
    glossing several ("包（crate）", "二进制包（crate）", "模块依赖项（crates）") pairs none of them: it is
    a word the writer translates as the sentence needs, not a term's other name."""
    by_word: dict[str, set[str]] = defaultdict(set)
    for key, pairs in defined.items():
        by_word[key.removesuffix("s")].update(term for term, _ in pairs)
    for key in list(defined):
        pairs = defined.pop(key)
        if len(by_word[key.removesuffix("s")]) == 1:
            defined[key] = pairs[0]


def _written_in(keys: set[str], sources: list[Source], seen_in: dict[str, set[str]], forms: dict[str, Counter],
                titles: set[str]) -> None:
    """A name a 《》 or a definition marks is named by every source that writes it, marked or not
    (《红楼梦》 once, 红楼梦 after); a name only quoted (“继承”) counts where it is quoted. A name the
    sources write as a verb (names_zh.verbal) is no candidate, unless a 《》 marks it."""
    texts = []
    for source in sources:
        text = "\n".join(prose(s.text) for s in source.sentences if names_zh.han(s.text)).casefold()
        if text:
            texts.append(text)
            for key in keys:
                if key in text:
                    seen_in[key].add(source.path)
    every = "\n".join(texts)
    for key in [k for k in forms if names_zh.han(k) and k not in titles]:
        if names_zh.verbal(key, every):
            del forms[key]
