"""The session-start briefing (``prime_context``): what an agent should know before its first step.

Contents, in this order, within a token budget:
1. the vault's domain (SCHEMA.md ``## Domain``);
2. ``persona`` and ``instruction`` memories (notes under ``memories/`` whose frontmatter says
   ``kind: persona`` / ``kind: instruction``), always included: they are standing orders;
3. the pages most relevant to the working directory's project name and to the first prompt,
   highest relevance first, each with its wikilink.

Relevance bar: search ranks candidates, but its fused scores are relative to each query, so a
page is kept only if its own text (title, heading, chunk, path) contains at least half of the
query's content words (Snowball stems; CJK by character bigram) — the project name must appear
in full. A prompt about something the vault does not hold yields no pages, and the briefing says
so instead of padding itself with noise. The briefing never raises: a problem becomes a notice.
"""
from __future__ import annotations

import logging
import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .pages import excerpt, manifest, wikilink

log = logging.getLogger(__name__)

MEMORY_KINDS = ("persona", "instruction")
MIN_COVERAGE = 0.5  # share of the prompt's content words a page must contain
PROMPT_HITS = 8
PROJECT_HITS = 5
ITEM_CHARS = 400
MIN_ITEM_TOKENS = 24  # an item that cannot get this many tokens is left out rather than mangled
DOMAIN_TOKENS = 120
VAULT_FILES = frozenset({"SCHEMA.md", "index.md", "log.md"})  # the domain is briefed already; catalogues are not topics

_CJK = re.compile(r"[\u2e80-\u2fdf\u3000-\u303f\u3040-\u30ff\u3100-\u31ff\u3400-\u4dbf\u4e00-\u9fff"
                  r"\uac00-\ud7af\uf900-\ufaff\uff00-\uffef]")
_HAN_RUN = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]+")
_WORD = re.compile(r"[^\W_]+", re.UNICODE)
_STOP = frozenset("""a an and are as at be but by can could did do does for from had has have how i if in into is it
its me my no not of on or our please should so that the their them then there these this those to us was we
were what when where which who why will with would you your let lets make need want help use using get about
just also new fix add code""".split())


def count_tokens(text: str) -> int:
    """A tokenizer-free estimate: one token per CJK character, one per four other characters."""
    cjk = len(_CJK.findall(text))
    return cjk + math.ceil((len(text) - cjk) / 4)


def fit(text: str, tokens: int) -> str:
    """The longest prefix of ``text`` (cut at a space when one is near, with an ellipsis) that
    costs at most ``tokens``."""
    if count_tokens(text) <= tokens:
        return text
    lo, hi = 0, len(text)
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if count_tokens(text[:mid]) + 1 <= tokens:
            lo = mid
        else:
            hi = mid - 1
    cut = text[:lo]
    space = cut.rfind(" ")
    if space > lo * 0.7:
        cut = cut[:space]
    return cut.rstrip(" ,;:") + "…" if cut else ""


_STEMMER = None


def _stem(word: str) -> str:
    global _STEMMER
    if _STEMMER is None:
        import snowballstemmer
        _STEMMER = snowballstemmer.stemmer("english")
    return _STEMMER.stemWord(word)


_HAN_STOP = frozenset("""什么 时候 怎么 怎样 如何 为什么 哪些 哪个 哪里 是否 可以 需要 应该 一个 这个 那个 我们 你们 他们
关于 使用 进行 还是 或者 以及 如果 因为 所以 但是 已经 没有 请问""".split())


def terms(text: str) -> set[str]:
    """Content words of ``text``: Latin words stemmed (stop words and single letters dropped), Han
    runs segmented by rjieba (words of two or more characters, question words dropped; a run
    rjieba leaves whole or in single characters counts as itself)."""
    out: set[str] = set()
    runs = _HAN_RUN.findall(text)
    if runs:
        from rjieba import cut
        for run in runs:
            words = [w for w in cut(run) if len(w) > 1 and w not in _HAN_STOP]
            out.update(words or ({run} if run not in _HAN_STOP else set()))
    for word in _WORD.findall(_HAN_RUN.sub(" ", text).lower()):
        if len(word) > 1 and word not in _STOP:
            out.add(_stem(word))
    return out


def _found(wanted: set[str], text: str) -> set[str]:
    """Which of ``wanted`` occur in ``text``: Han words as substrings (segmentation of a page and of
    a question may differ), Latin words as stems."""
    han = {t for t in wanted if _HAN_RUN.fullmatch(t)}
    latin = wanted - han
    return {t for t in han if t in text} | (latin & terms(_HAN_RUN.sub(" ", text)) if latin else set())


def project_name(cwd: str | None) -> str | None:
    if not cwd:
        return None
    name = Path(cwd).expanduser().name.strip()
    return name or None


@dataclass(frozen=True)
class BriefItem:
    kind: str  # persona | instruction | page
    path: str
    title: str
    text: str
    relevance: float | None = None  # pages: share of query words found (memories: None, always in)
    matched: tuple[str, ...] = ()  # which query the page answered: project and/or prompt

    @property
    def wikilink(self) -> str:
        return wikilink(self.path)

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "path": self.path, "title": self.title, "wikilink": self.wikilink,
                "text": self.text, "relevance": self.relevance, "matched": list(self.matched)}


@dataclass(frozen=True)
class Briefing:
    domain: str
    items: tuple[BriefItem, ...]
    project: str | None
    prompt: str | None
    budget_tokens: int
    text: str
    notices: tuple[str, ...] = field(default_factory=tuple)

    @property
    def tokens(self) -> int:
        return count_tokens(self.text)

    @property
    def pages(self) -> tuple[BriefItem, ...]:
        return tuple(i for i in self.items if i.kind == "page")

    @property
    def empty(self) -> bool:
        """No page cleared the relevance bar."""
        return not self.pages

    def to_dict(self) -> dict[str, Any]:
        return {"domain": self.domain, "project": self.project, "prompt": self.prompt, "empty": self.empty,
                "budget_tokens": self.budget_tokens, "tokens": self.tokens, "notices": list(self.notices),
                "items": [i.to_dict() for i in self.items], "text": self.to_text()}

    def to_text(self) -> str:
        return self.text

    def to_claude_hook(self) -> dict[str, Any]:
        """What a Claude Code SessionStart hook prints on stdout (JSON with additionalContext)."""
        return {"hookSpecificOutput": {"hookEventName": "SessionStart", "additionalContext": self.to_text()}}


def _empty_line(project: str | None, prompt: str | None) -> str:
    about = " and ".join(x for x in (f"project {project!r}" if project else "",
                                     "this prompt" if prompt else "") if x) or "this session"
    return f"No vault page clears the relevance bar for {about}; nothing else to brief."


def render(domain: str, items, project: str | None, prompt: str | None, notices=()) -> str:
    lines = ["# Vault briefing (wikimem)"]
    if domain:
        lines.append(f"Domain: {domain}")
    for kind, heading in (("persona", "Persona"), ("instruction", "Instructions"), ("page", "Relevant pages")):
        chosen = [i for i in items if i.kind == kind]
        if not chosen:
            continue
        lines.append(f"## {heading}")
        for item in chosen:
            link = wikilink(item.path)
            named = link if item.title == link[2:-2] else f"{link} ({item.title})"
            lines.append(f"- {named}: {item.text}".rstrip(": "))
    if not any(i.kind == "page" for i in items):
        lines.append(_empty_line(project, prompt))
    lines.extend(f"(note: {n})" for n in notices)
    return "\n".join(lines) + "\n"


# -- gathering --------------------------------------------------------------------------------
def _memory_paths(vault) -> list[str]:
    db = manifest(vault)
    if db is not None:
        return [p for (p,) in db.execute(
            "SELECT path FROM files WHERE note=1 AND path LIKE 'memories/%' ORDER BY path")]
    return [f.path for f in vault.files.scan().notes if f.path.startswith("memories/")]


def standing_memories(vault) -> list[BriefItem]:
    """Persona memories first, then instructions, each sorted by path."""
    from ..parse import parse_page
    found: list[BriefItem] = []
    for path in _memory_paths(vault):
        try:
            note = vault.files.read_note(path)
        except Exception as exc:  # noqa: BLE001 - one unreadable memory must not sink the briefing
            log.warning("skipping memory %s: %s", path, exc)
            continue
        page = parse_page(path, note.text, note.sha256)
        kind = str(page.frontmatter.get("kind") or "").strip().lower()
        if kind in MEMORY_KINDS and page.status != "superseded":
            found.append(BriefItem(kind, path, page.title, " ".join(page.body.split())))
    return sorted(found, key=lambda i: (MEMORY_KINDS.index(i.kind), i.path))


def _coverage(wanted: set[str], hit) -> tuple[float, int]:
    found = len(_found(wanted, " ".join((hit.title, " ".join(hit.heading_path), hit.text, hit.path.replace("/", " ")))))
    return (found / len(wanted) if wanted else 0.0), found


def _prose(text: str) -> str:
    """Chunk text without its heading lines (the wikilink and title already say where it is)."""
    return "\n".join(line for line in text.split("\n") if not line.lstrip().startswith("#")) or text


def relevant_pages(vault, project: str | None, prompt: str | None, skip: set[str]) -> list[BriefItem]:
    """Pages clearing the relevance bar for the project name or the prompt, best first."""
    best: dict[str, tuple[float, int, Any, set[str]]] = {}
    queries = [("project", project, PROJECT_HITS, 1.0), ("prompt", prompt, PROMPT_HITS, MIN_COVERAGE)]
    for label, query, limit, bar in queries:
        wanted = terms(query or "")
        if not wanted:
            continue
        result = vault.search(query, limit=limit)
        for rank, hit in enumerate(result.hits):
            if hit.path in skip or hit.path in VAULT_FILES:
                continue
            share, found = _coverage(wanted, hit)
            if found == 0 or share < bar:
                continue
            seen = best.get(hit.path)
            matched = (seen[3] if seen else set()) | {label}
            if seen is None or (share, -rank) > (seen[0], -seen[1]):
                best[hit.path] = (share, rank, hit, matched)
            else:
                best[hit.path] = (*seen[:3], matched)

    def weight(share: float, matched: set[str]) -> float:  # the prompt is today's task: it outranks the project
        return share * (1.0 if "prompt" in matched else 0.9) + 0.25 * (len(matched) - 1)
    ordered = sorted(best.values(), key=lambda v: (-weight(v[0], v[3]), v[1], v[2].path))
    return [BriefItem("page", hit.path, hit.title, excerpt(_prose(hit.text), ITEM_CHARS), round(share, 3),
                      tuple(sorted(matched))) for share, _rank, hit, matched in ordered]


def _budgeted(domain: str, items: list[BriefItem], project, prompt, notices, budget: int) -> tuple[str, list[BriefItem]]:
    """Items in order while they fit; the first that does not fit is shortened, and the rest dropped."""
    domain = fit(domain, min(DOMAIN_TOKENS, max(budget // 4, 0)))
    kept: list[BriefItem] = []
    for item in items:
        trial = kept + [item]
        over = count_tokens(render(domain, trial, project, prompt, notices)) - budget
        if over > 0:
            room = count_tokens(item.text) - over
            if room < MIN_ITEM_TOKENS:
                break  # the budget is spent: lower-ranked items do not jump the queue
            item = BriefItem(item.kind, item.path, item.title, fit(item.text, room), item.relevance, item.matched)
            if count_tokens(render(domain, kept + [item], project, prompt, notices)) > budget:
                break
        kept.append(item)
    return domain, kept


def prime_context(vault, cwd: str | None = None, prompt: str | None = None, budget_tokens: int = 1500) -> Briefing:
    """The briefing for a new agent session. Never raises: problems become notices."""
    project = project_name(cwd)
    prompt = (prompt or "").strip() or None
    budget = max(int(budget_tokens or 0), 0)
    notices: list[str] = []
    domain, memories, pages = "", [], []
    try:
        domain = " ".join(vault.schema().domain.split())
    except Exception as exc:  # noqa: BLE001 - the briefing never raises
        notices.append(f"SCHEMA.md unreadable: {exc}")
    try:
        memories = standing_memories(vault)
    except Exception as exc:  # noqa: BLE001
        log.debug("memories unavailable", exc_info=True)
        notices.append(f"memories unavailable: {exc}")
    try:
        pages = relevant_pages(vault, project, prompt, {m.path for m in memories})
    except Exception as exc:  # noqa: BLE001
        log.debug("search unavailable", exc_info=True)
        notices.append(f"search unavailable: {exc}")
    domain, kept = _budgeted(domain, memories + pages, project, prompt, notices, budget)
    text = fit(render(domain, kept, project, prompt, notices), budget)  # only a tiny budget cuts here
    return Briefing(domain, tuple(kept), project, prompt, budget, text, tuple(notices))


def failed_briefing(problem: str, cwd: str | None = None, prompt: str | None = None,
                    budget_tokens: int = 1500) -> Briefing:
    """The briefing when the vault itself cannot be opened (the hook must still print something)."""
    notices = (problem,)
    project = project_name(cwd)
    text = fit(render("", (), project, prompt, notices), budget_tokens)
    return Briefing("", (), project, (prompt or None), budget_tokens, text, notices)
