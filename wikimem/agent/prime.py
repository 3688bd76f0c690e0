"""The session-start briefing (``prime_context``): what an agent should know before its first step.

A layered wake-up within a token budget, in this order:
1. the vault's domain (SCHEMA.md ``## Domain``);
2. identity: ``persona`` memories (notes under ``memories/`` whose frontmatter says ``kind: persona``);
3. instructions: ``instruction`` memories -- standing orders;
4. decisions: ``decision`` memories, then recent facts: other memories, each layer by
   importance (frontmatter ``importance: high | normal | low`` or a number) and then newest first
   (``created`` / ``updated`` / ``date``);
5. the pages most relevant to the working directory's project name and to the first prompt,
   highest relevance first, each with its wikilink.

Each memory is printed once, as its text (its note name repeats the fact, its title too). The
budget is filled greedily, layer by layer: an item that does not fit is skipped and smaller ones
after it still go in, so a lower layer never displaces a higher one and no room is left that a
skipped item would have fitted; page excerpts may be shortened to fit, memories never are (a cut
instruction can say the opposite of the whole one). What did not fit is said ("3 more facts did
not fit in 300 tokens").

Relevance bar: search ranks candidates, but its fused scores are relative to each query, so a
page is kept only if its own text (title, heading, chunk, path) contains at least half of the
query's content words (Snowball stems; CJK by character bigram) -- the project name must appear
in full. Turns of an imported session that are tool calls, tool results or boilerplate ("The file
has been updated") are never briefed. A prompt about something the vault does not hold yields no
pages, and the briefing says so instead of padding itself with noise. The briefing never raises:
a problem becomes a notice.
"""
from __future__ import annotations

import logging
import math
import re
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from ..search import search
from .pages import excerpt, manifest, wikilink

log = logging.getLogger(__name__)

MEMORY_KINDS = ("persona", "instruction")  # the standing layers
LAYERS = ("persona", "instruction", "decision", "fact", "page", "used")
HEADINGS = {"persona": "Identity", "instruction": "Instructions", "decision": "Decisions", "fact": "Recent facts",
            "page": "Relevant pages", "used": "Used most"}
NOUNS = {"persona": ("identity line", "identity lines"), "instruction": ("instruction", "instructions"),
         "decision": ("decision", "decisions"), "fact": ("fact", "facts"), "page": ("page", "pages"),
         "used": ("page used most", "pages used most")}
USED_MOST = 3  # pages briefed for being opened and cited most (stores/usage.py), after the relevant ones
USED_AT_LEAST = 3  # ...when used at least this much (Use.weight: an open or a citation counts 3)
MIN_LINE_TOKENS = 6  # no briefing line is shorter ("- 2026-01-01: x"): below this room the budget is full
IMPORTANCE = {"critical": 3, "high": 2, "important": 2, "normal": 1, "medium": 1, "low": 0}
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


def _stem(word: str) -> str:
    from ..stores.analysis import _stem_word  # a stemmer per thread (one is not safe to share)
    return _stem_word(word)


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


# A folder name that says nothing about the project (issue 36: `prime --cwd src` matched pages about
# "src" with relevance 1.0, before those matching the prompt).
GENERIC_FOLDERS = frozenset("""src source sources lib libs app apps code docs doc test tests bin build dist
pkg packages package cmd internal scripts script tmp temp home work workspace projects project repo repos dev
git main master desktop documents downloads notes vault wiki""".split())
PROJECT_MARKERS = (".git", "pyproject.toml", "package.json", "Cargo.toml", "go.mod", "pom.xml", "setup.py",
                   "Gemfile", "composer.json", "CMakeLists.txt", "Makefile")


def project_name(cwd: str | None, vault_root: Path | None = None) -> str | None:
    """The project a session works on, named from ``cwd``: the nearest folder upwards that is a
    project root (a .git, pyproject.toml, package.json ...), else ``cwd``'s own name unless it is a
    generic one (src, docs, tests ...). None inside the vault itself: its folders are the vault's."""
    if not cwd:
        return None
    here = Path(cwd).expanduser()
    try:
        here = here.resolve()
        if vault_root is not None and (here == vault_root or vault_root in here.parents):
            return None
    except OSError:
        pass
    for folder in (here, *here.parents):
        try:
            if any((folder / marker).exists() for marker in PROJECT_MARKERS):
                name = folder.name.strip()
                return name if name and name.casefold() not in GENERIC_FOLDERS else None
        except OSError:
            break
    name = here.name.strip()
    return name if name and name.casefold() not in GENERIC_FOLDERS else None


def placeholder_domain(domain: str) -> bool:
    """The Domain paragraph of SCHEMA.md is still `wikimem init`'s placeholder: a briefing that
    starts with "Replace this paragraph" tells an agent nothing."""
    return "replace this paragraph" in domain.casefold()


@dataclass(frozen=True)
class BriefItem:
    kind: str  # persona | instruction | decision | fact | page
    path: str
    title: str
    text: str
    relevance: float | None = None  # pages: share of query words found (memories: None)
    matched: tuple[str, ...] = ()  # which query the page answered: project and/or prompt
    date: str | None = None  # memories: the day it was written (YYYY-MM-DD)
    importance: float = 1.0
    link: str | None = None  # the wikilink to write, the path form when another note has the name
    # memories: the other side of an open possible_update pair ("date: text"), briefed as a conflict
    conflicts: tuple[str, ...] = ()

    @property
    def wikilink(self) -> str:
        return self.link or wikilink(self.path)

    @property
    def memory(self) -> bool:
        return self.path.startswith("memories/")

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "path": self.path, "title": self.title, "wikilink": self.wikilink,
                "text": self.text, "relevance": self.relevance, "matched": list(self.matched), "date": self.date,
                "importance": self.importance, **({"conflicts_with": list(self.conflicts)} if self.conflicts else {})}


@dataclass(frozen=True)
class Briefing:
    domain: str
    items: tuple[BriefItem, ...]
    project: str | None
    prompt: str | None
    budget_tokens: int
    text: str
    notices: tuple[str, ...] = field(default_factory=tuple)
    omitted: tuple[tuple[str, int], ...] = ()  # (kind, how many) left out for the budget
    pages_found: int | None = None  # pages that cleared the relevance bar (briefed or not)

    @property
    def tokens(self) -> int:
        return count_tokens(self.text)

    @property
    def pages(self) -> tuple[BriefItem, ...]:
        return tuple(i for i in self.items if i.kind == "page")

    @property
    def empty(self) -> bool:
        """No page cleared the relevance bar (pages left out for the budget did clear it)."""
        return not self.pages and not self.pages_found

    def to_dict(self) -> dict[str, Any]:
        return {"domain": self.domain, "project": self.project, "prompt": self.prompt, "empty": self.empty,
                "budget_tokens": self.budget_tokens, "tokens": self.tokens, "notices": list(self.notices),
                "omitted": dict(self.omitted), "items": [i.to_dict() for i in self.items], "text": self.to_text()}

    def to_text(self) -> str:
        return self.text

    def to_claude_hook(self) -> dict[str, Any]:
        """What a Claude Code SessionStart hook prints on stdout (JSON with additionalContext)."""
        return {"hookSpecificOutput": {"hookEventName": "SessionStart", "additionalContext": self.to_text()}}


def _empty_line(project: str | None, prompt: str | None) -> str:
    about = " and ".join(x for x in (f"project {project!r}" if project else "",
                                     "this prompt" if prompt else "") if x) or "this session"
    return f"No vault page clears the relevance bar for {about}."


def omitted_line(omitted, budget: int) -> str:
    """"3 more facts and 1 more page did not fit in 300 tokens (a larger budget briefs them).\""""
    parts = [f"{n} more {NOUNS[k][n != 1]}" for k, n in omitted if n]
    if not parts:
        return ""
    said = parts[0] if len(parts) == 1 else ", ".join(parts[:-1]) + " and " + parts[-1]
    return f"({said} did not fit in {budget} tokens; a larger budget briefs them.)"


def _line(item: BriefItem) -> str:
    if item.memory:  # the fact itself, once: its note name and title only repeat it
        line = f"- {item.date}: {item.text}" if item.date and item.kind in ("decision", "fact") else f"- {item.text}"
        if item.conflicts:  # a possible_update pair, both active: not two truths
            line += " [CONFLICT, unsure which is current: " + "; ".join(item.conflicts) + "]"
        return line
    link = item.wikilink
    named = link if item.title == link[2:-2] else f"{link} ({item.title})"
    return f"- {named}: {item.text}".rstrip(": ")


def render(domain: str, items, project: str | None, prompt: str | None, notices=(), omitted=(), budget: int = 0,
           pages_found: int | None = None) -> str:
    lines = ["# Vault briefing (wikimem)"]
    if domain:
        lines.append(f"Domain: {domain}")
    for kind in LAYERS:
        chosen = [i for i in items if i.kind == kind]
        if chosen:
            lines.append(f"## {HEADINGS[kind]}")
            lines.extend(_line(i) for i in chosen)
    if not any(i.kind == "page" for i in items) and not pages_found:
        lines.append(_empty_line(project, prompt))
    said = omitted_line(omitted, budget)
    if said:
        lines.append(said)
    lines.extend(f"(note: {n})" for n in notices)
    return "\n".join(lines) + "\n"


# -- gathering --------------------------------------------------------------------------------
def _memory_paths(ctx) -> list[str]:
    found = manifest(ctx)
    if found is not None:
        return found.paths_like("memories/", notes_only=True)
    return [f.path for f in ctx.files.scan().notes if f.path.startswith("memories/")]


def _importance(value) -> float:
    if isinstance(value, bool) or value is None:
        return 1.0
    if isinstance(value, (int, float)):
        return float(value)
    return float(IMPORTANCE.get(str(value).strip().lower(), 1.0))


def _date(front) -> str | None:
    for key in ("created", "updated", "date"):
        value = front.get(key)
        if value:
            text = value.isoformat() if hasattr(value, "isoformat") else str(value)
            return text[:10]
    return None


def memory_layers(ctx, as_of: str | None = None) -> list[BriefItem]:
    """Active memories as briefing items, in layer order: identity, instructions, decisions, facts;
    within a layer most important first, then newest first (then by path). The budget decides how many
    are briefed, and the briefing counts the rest as not fitting. ``as_of`` (a timeline moment): the
    memories valid then instead, superseded since or not. A memory in an open possible_update pair
    (knowledge/memory_view.py) carries the other side in ``conflicts``."""
    from ..parse import parse_page
    found: list[BriefItem] = []
    valid = None
    if as_of:
        from ..search.timeline import timeline
        valid = timeline(ctx.cache).valid_on(as_of)
    for path in _memory_paths(ctx):
        if valid is not None and path not in valid:
            continue
        try:
            note = ctx.files.read_note(path)
        except Exception as exc:  # noqa: BLE001 - one unreadable memory must not sink the briefing
            log.warning("skipping memory %s: %s", path, exc)
            continue
        page = parse_page(path, note.text, note.sha256)
        if page.status == "superseded" and valid is None:
            continue
        kind = str(page.frontmatter.get("kind") or "").strip().lower()
        kind = kind if kind in ("persona", "instruction", "decision") else "fact"
        text = " ".join(page.body.split())
        if text:
            found.append(BriefItem(kind, path, page.title, text, date=_date(page.frontmatter),
                                   importance=_importance(page.frontmatter.get("importance",
                                                                               page.frontmatter.get("priority")))))
    found = _with_conflicts(ctx, found)
    found.sort(key=lambda i: i.path)
    found.sort(key=lambda i: i.date or "", reverse=True)
    found.sort(key=lambda i: (LAYERS.index(i.kind), -i.importance))
    return found


def _with_conflicts(ctx, items: list[BriefItem]) -> list[BriefItem]:
    try:
        from ..knowledge.memory_view import conflicts, load
        infos = load(ctx)
        clash = conflicts(infos)
    except Exception:  # noqa: BLE001 - the briefing never raises; conflicts are then not marked
        log.debug("memory conflicts unavailable", exc_info=True)
        return items
    out = []
    for item in items:
        others = [infos[o] for o in clash.get(item.path, ()) if o in infos]
        if others:
            item = replace(item, conflicts=tuple(f"{(o.created or '?')[:10]}: {' '.join(o.fact.split())}"
                                                 for o in others))
        out.append(item)
    return out


def standing_memories(ctx) -> list[BriefItem]:
    """Persona memories first, then instructions."""
    return [i for i in memory_layers(ctx) if i.kind in MEMORY_KINDS]


def _coverage(wanted: set[str], hit) -> tuple[float, int]:
    found = len(_found(wanted, " ".join((hit.title, " ".join(hit.heading_path), hit.text, hit.path.replace("/", " ")))))
    return (found / len(wanted) if wanted else 0.0), found


_TURN_HEAD = re.compile(r"^\s*\*\*([^*\n]{1,60})\*\*(?:\s*\([^)\n]*\))?\s*:\s*")
_BLOCK_ID = re.compile(r"\s\^[A-Za-z0-9-]+\s*$")
_TOOLISH = re.compile(r"^\[(?:tool[ _](?:result|call|use|output)|function[ _](?:call|result))\b|^<(?:system-reminder|"
                      r"command-|local-command|tool_)", re.I)
_BOILERPLATE = re.compile(r"^(?:the file .{0,300}? has been (?:updated|created|modified|written|saved)\b|"
                          r"(?:file|changes?) (?:created|updated|saved|applied) successfully|ok|okay|done|"
                          r"\(no (?:output|content)\)|command (?:ran|completed|finished)(?: successfully)?|"
                          r"(?:i'll|let me) (?:read|look at|check|open|run) .{0,80}|tool ran without output.*)[.!]?$",
                          re.I | re.S)
TOOL_SPEAKERS = frozenset({"tool", "system", "function", "tool result", "tool use"})


def useful_text(text: str) -> str:
    """``text`` without the turns of an imported session that brief nothing: tool calls and tool
    results, system turns and boilerplate ("The file has been updated", "Done."); "" when nothing
    is left."""
    kept = []
    for para in re.split(r"\n\s*\n", text):
        m = _TURN_HEAD.match(para)
        said = _BLOCK_ID.sub("", para[m.end():] if m else para).strip()
        if m and m.group(1).strip().casefold() in TOOL_SPEAKERS:
            continue
        if not said or _TOOLISH.match(said) or _BOILERPLATE.match(said):
            continue
        kept.append(_BLOCK_ID.sub("", para).strip())
    return "\n\n".join(kept)


def _prose(text: str) -> str:
    """Chunk text without its heading lines (the wikilink and title already say where it is)."""
    return "\n".join(line for line in text.split("\n") if not line.lstrip().startswith("#")) or text


def relevant_pages(ctx, project: str | None, prompt: str | None, skip: set[str],
                   as_of: str | None = None) -> list[BriefItem]:
    """Pages clearing the relevance bar for the project name or the prompt, best first (``as_of``:
    among the pages valid then)."""
    best: dict[str, tuple[float, int, Any, set[str], str]] = {}
    queries = [("project", project, PROJECT_HITS, 1.0), ("prompt", prompt, PROMPT_HITS, MIN_COVERAGE)]
    for label, query, limit, bar in queries:
        wanted = terms(query or "")
        if not wanted:
            continue
        result = search(ctx, query, limit=limit, literal=True, as_of=as_of)  # a prompt, not a search: no operators
        for rank, hit in enumerate(result.hits):
            if hit.path in skip or hit.path in VAULT_FILES:
                continue
            prose = useful_text(_prose(hit.text))
            if not prose.strip():
                continue  # a tool result or boilerplate turn: never briefed
            share, found = _coverage(wanted, hit)
            if found == 0 or share < bar:
                continue
            seen = best.get(hit.path)
            matched = (seen[3] if seen else set()) | {label}
            if seen is None or (share, -rank) > (seen[0], -seen[1]):
                best[hit.path] = (share, rank, hit, matched, prose)
            else:
                best[hit.path] = (*seen[:3], matched, seen[4])

    def weight(share: float, matched: set[str]) -> float:  # the prompt is today's task: it outranks the project
        return share * (1.0 if "prompt" in matched else 0.9) + 0.25 * (len(matched) - 1)
    ordered = sorted(best.values(), key=lambda v: (-weight(v[0], v[3]), v[1], v[2].path))
    return [BriefItem("page", hit.path, hit.title, excerpt(prose, ITEM_CHARS), round(share, 3),
                      tuple(sorted(matched))) for share, _rank, hit, matched, prose in ordered]


def used_most(ctx, skip: set[str]) -> list[BriefItem]:
    """The pages people and agents used most (opened, cited, returned: stores/usage.py), current
    ones only, that the briefing does not hold already; the last layer, so the budget drops it first."""
    found = manifest(ctx)
    if found is None:
        return []
    out = []
    for use in ctx.cache.usage.most_used(USED_MOST * 3, exclude=skip | VAULT_FILES):
        if len(out) >= USED_MOST or use.weight < USED_AT_LEAST:
            break
        known = found.title_and_status(use.path)
        if known is None or known[1] == "superseded" or _superseded_now(ctx, use.path):
            continue  # gone, or replaced, since it was used (the note says so even before the cache does)
        texts = found.chunk_texts(use.path)
        prose = useful_text(_prose(texts[0])) if texts else ""
        if prose.strip():
            out.append(BriefItem("used", use.path, known[0] or use.path, excerpt(prose, ITEM_CHARS)))
    return out


def _superseded_now(ctx, path: str) -> bool:
    from ..parse import parse_page
    try:
        return parse_page(path, ctx.files.read_note(path).text).status == "superseded"
    except Exception:  # noqa: BLE001 - unreadable: not briefed either
        return True


def _budgeted(domain: str, items: list[BriefItem], project, prompt, notices, budget: int,
              pages_found: int) -> tuple[str, list[BriefItem], list[tuple[str, int]]]:
    """Greedy by layer, then by rank: each item goes in when it fits (a page excerpt may be
    shortened to fit, down to MIN_ITEM_TOKENS); one that does not is skipped and the next, perhaps
    smaller, is tried. Room for the line saying what was left out is kept while items are chosen.
    Returns (domain, kept items, [(kind, count left out)])."""
    domain = fit(domain, min(DOMAIN_TOKENS, max(budget // 4, 0)))

    def cost(chosen, left_out) -> int:
        return count_tokens(render(domain, chosen, project, prompt, notices, _tally(left_out), budget, pages_found))
    kept: list[BriefItem] = []
    skipped: list[BriefItem] = []
    if cost(items, []) <= budget:
        return domain, list(items), []
    for n, item in enumerate(items):
        rest = skipped + items[n + 1:]  # the omission line as long as it may still get
        over = cost(kept + [item], rest) - budget
        if over > 0 and item.kind == "page":
            room = count_tokens(item.text) - over
            if room >= MIN_ITEM_TOKENS:
                short = replace(item, text=fit(item.text, room))
                if cost(kept + [short], rest) <= budget:
                    item, over = short, 0
        if over > 0:
            skipped.append(item)
            if budget - cost(kept, rest) < MIN_LINE_TOKENS:  # full: nothing after fits (no render each)
                skipped.extend(items[n + 1:])
                break
        else:
            kept.append(item)
    return domain, kept, _tally(skipped)


def _tally(items) -> list[tuple[str, int]]:
    counts: dict[str, int] = {}
    for i in items:
        counts[i.kind] = counts.get(i.kind, 0) + 1
    return [(k, counts[k]) for k in LAYERS if k in counts]


def prime_context(ctx, cwd: str | None = None, prompt: str | None = None, budget_tokens: int = 1500,
                  as_of: str | None = None) -> Briefing:
    """The briefing for a new agent session. Never raises: problems become notices (a malformed
    ``as_of`` date is refused first: YYYY-MM-DD or YYYY-MM-DDTHH:MM, the vault as it was then)."""
    when = None
    if as_of:
        from ..search.timeline import as_of_moment
        when = as_of_moment(as_of)
    project = project_name(cwd, ctx.root)
    prompt = (prompt or "").strip() or None
    budget = max(int(budget_tokens or 0), 0)
    notices: list[str] = []
    domain, memories, pages = "", [], []
    try:
        domain = " ".join(ctx.schema().domain.split())
        if placeholder_domain(domain):
            domain = ""
    except Exception as exc:  # noqa: BLE001 - the briefing never raises
        notices.append(f"SCHEMA.md unreadable: {exc}")
    try:
        memories = memory_layers(ctx, when)
    except Exception as exc:  # noqa: BLE001
        log.debug("memories unavailable", exc_info=True)
        notices.append(f"memories unavailable: {exc}")
    try:
        pages = relevant_pages(ctx, project, prompt, {m.path for m in memories}, as_of)
    except Exception as exc:  # noqa: BLE001
        log.debug("search unavailable", exc_info=True)
        notices.append(f"search unavailable: {exc}")
    used: list[BriefItem] = []
    if not when:  # use counts are today's: an as-of briefing leaves them out
        try:
            used = used_most(ctx, {m.path for m in memories} | {p.path for p in pages})
        except Exception:  # noqa: BLE001 - the briefing never raises; counts are a nicety
            log.debug("use counts unavailable", exc_info=True)
    try:  # two pages of one name would both be briefed as [[Name]] (issue 36): the path form for those
        from .pages import name_clashes
        clashes = name_clashes(ctx)
        if clashes:
            memories = [replace(m, link=wikilink(m.path, clashes)) for m in memories]
            pages = [replace(p, link=wikilink(p.path, clashes)) for p in pages]
            used = [replace(u, link=wikilink(u.path, clashes)) for u in used]
    except Exception:  # noqa: BLE001 - the briefing never raises; the plain link is shown
        log.debug("name clashes unavailable", exc_info=True)
    domain, kept, omitted = _budgeted(domain, memories + pages + used, project, prompt, notices, budget, len(pages))
    text = render(domain, kept, project, prompt, notices, omitted, budget, len(pages))
    text = fit(text, budget)  # only a budget too small for the headings cuts here
    return Briefing(domain, tuple(kept), project, prompt, budget, text, tuple(notices), tuple(omitted), len(pages))


def failed_briefing(problem: str, cwd: str | None = None, prompt: str | None = None,
                    budget_tokens: int = 1500) -> Briefing:
    """The briefing when the vault itself cannot be opened (a hook must still print something, and
    say why, without claiming that nothing in the vault is relevant: nothing was looked at)."""
    project = project_name(cwd)
    text = fit(f"# Vault briefing (wikimem)\nNo briefing: {problem}. Point --vault or WIKIMEM_VAULT at the vault "
               "folder (`wikimem init` makes one).\n", budget_tokens)
    return Briefing("", (), project, (prompt or None), budget_tokens, text, (problem,), (), 0)
