"""Filing an answer back as ``queries/<question>.md`` so knowledge accumulates.

The page's frontmatter says what was asked and when, how it was answered, and which chunks it
cites, each with the sha256 of the chunk's text at the time (``"[[page#heading]] sha256:<hex>"``),
so a later change to a cited chunk shows. The same question in other words updates the earlier
page instead of adding another (``find_same``): most of its terms shared with an earlier wording;
or mostly the same citations and a fair share of its terms (a page's title and aliases count as
one name, so "RRF" and "reciprocal rank fusion" match); or near in meaning by the embedder's
calibrated thresholds (``question_calibration.json``) with the answers standing on mostly the
same chunks. Either way the two answers must lead with the same page and, when both are
extractive, one must quote nothing the other does not: a look-alike about another line of the same
chunk ("How do I empty the trash?" after "How do I restore a file from the trash?") cites the same
chunk but quotes other sentences of it (benchmarks/query_rewordings.py). A page that was
superseded is followed to the page that replaced it. The first wording stays the title, later
ones are kept in ``also_asked``.

The answer and its sources are a marked section (parse/generated.py): re-asking rewrites only that
section, so what a person added to the page, above or below it, and unknown frontmatter keys are
kept; a section a person edited is kept too, with the new answer written above it, and so is a page
whose markers a person removed or changed (or one an older version wrote without markers): its
lines are all kept and the new marked answer is written below its title.
"""
from __future__ import annotations

import datetime as _dt
import json
import logging
import re
from dataclasses import replace
from pathlib import Path
from typing import Any

import yaml

from ..errors import ConflictError, NoteReadError, WikimemError
from ..stores.analysis import terms
from ..knowledge.writer import add_to_index, write_page
from ..parse import frontmatter as fm
from ..parse import generated
from .extractive import FRAMING
from ..vault.files import fit_name
from .answer import QUERY_FOLDER, Answer, chunk_hash

log = logging.getLogger(__name__)

SAME_QUESTION = 0.6  # term overlap (Jaccard) above which two questions are one
SAME_SOURCES_QUESTION = 0.25  # ...or this much when the two answers cite mostly the same chunks
SAME_SOURCES = 0.5  # "mostly": Jaccard of the two sets of cited chunks
SOME_SOURCES = 0.25  # ...and "some", for questions the embedder puts nearer than any two different ones
SECTION = "answer"  # the name of the generated section (parse/generated.py)
QUESTION_CALIBRATION = Path(__file__).with_name("question_calibration.json")
_UNSAFE = re.compile(r'[\\/:*?"<>|#^\[\]\x00-\x1f]+')
_HASHED = re.compile(r"^\s*(\[\[[^\]]+\]\])(?:\s+sha256:([0-9a-f]+))?\s*$")


def slug(question: str) -> str:
    name = " ".join(_UNSAFE.sub(" ", question).split()).strip(" .!?？。")
    if len(name) > 80:
        name = name[:80].rsplit(" ", 1)[0] if " " in name[:80] else name[:80]
    return fit_name(name).strip(" .") or "query"


def _words(question: str) -> str:
    return " ".join(re.findall(r"\w+", question.casefold()))


def _jaccard(a: set[str], b: set[str]) -> float:
    return len(a & b) / len(a | b) if a and b else 0.0


def source_entries(answer: Answer) -> list[str]:
    return [f"{c.link} sha256:{c.chunk_sha256}" for c in answer.citations]


def parse_source(entry: Any) -> tuple[str, str | None] | None:
    """``"[[page#h]] sha256:<hex>"`` -> (link, hex); the form the linter reads back."""
    m = _HASHED.match(str(entry)) if isinstance(entry, str) else None
    return (m.group(1), m.group(2)) if m else None


def _existing(ctx) -> list[tuple[str, Any, dict]]:
    """(path, note, frontmatter) of every query page."""
    folder = ctx.root / QUERY_FOLDER
    if not folder.is_dir():
        return []
    out = []
    for path in sorted(folder.rglob("*.md")):
        rel = path.relative_to(ctx.root).as_posix()
        try:
            note = ctx.files.read_note(rel)
        except (NoteReadError, WikimemError):
            continue
        front, _ = fm.parse(note.text.replace("\r\n", "\n"))
        if front.error or front.data.get("type", "query") != "query":
            continue
        out.append((rel, note, dict(front.data)))
    return out


def _names(ctx) -> list[tuple[str, set[str]]]:
    """(a page's title or alias, the terms of all its names): the vault's own synonyms."""
    try:
        rows = ctx.cache.manifest.titles_with_aliases()
    except Exception:  # noqa: BLE001 - no cache: no synonyms
        return []
    out = []
    for title, aliases in rows:
        try:
            names = [str(title)] + [str(a) for a in json.loads(aliases or "[]")]
        except (ValueError, TypeError):
            continue
        every = set().union(*(terms(n) for n in names))
        out.extend((n, every) for n in names if n.strip())
    return out


def question_terms(question: str, names: list[tuple[str, set[str]]]) -> set[str]:
    """The question's content terms, with every name of a page it mentions ("RRF" brings in
    "reciprocal rank fusion" when a page has that alias), framing words left out."""
    found = set(terms(question))
    low = question.casefold()
    for name, every in names:
        if re.search(rf"(?<!\w){re.escape(name.casefold())}(?!\w)", low):
            found |= every
    return (found - FRAMING) or found


def _listed(value) -> list:
    """A frontmatter list as a list; a hand-edited value of another shape (``also_asked: 5``) as
    none, rather than a crash of every later query (lint reports the shape)."""
    return value if isinstance(value, list) else []


def question_thresholds(identity) -> tuple[float, float] | None:
    """(same, related) cosine thresholds for two questions, calibrated for this embedder
    (benchmarks/calibrate_questions.py): by its identity key, else the same model, else the model
    it is a runtime of (``multilingual-e5-small-q4-onnx-int8`` of ``multilingual-e5-small-q4``: the
    weights decide the cosines), else None (meaning is not used)."""
    if identity is None:
        return None
    try:
        table = json.loads(QUESTION_CALIBRATION.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    entries = [e for e in table.values() if isinstance(e, dict) and isinstance(e.get("model"), str)]
    entry = table.get(identity.key) or next((e for e in entries if e["model"] == identity.model), None) \
        or next((e for e in entries if identity.model.startswith(e["model"] + "-")), None)  # another runtime
    try:
        return float(entry["same_question_cos"]), float(entry["related_question_cos"])
    except (TypeError, KeyError, ValueError):
        return None


class _Meaning:
    """Cosines between the new question and earlier wordings, embedded as queries on demand
    (a query page's questions are few; most pages never get this far)."""

    def __init__(self, ctx, question: str):
        self.embedder, self.mine, self.thresholds = None, None, None
        try:
            embedder = ctx.cache.embedder()
        except Exception:  # noqa: BLE001 - no embedder: words and citations decide
            embedder = None
        if embedder is None:
            return
        self.thresholds = question_thresholds(embedder.identity)
        if self.thresholds is not None:
            self.embedder = embedder
            self._memo: dict[str, float] = {}
            self.mine = embedder.embed_query(question)

    def cosine(self, other: str) -> float | None:
        if self.embedder is None:
            return None
        if other not in self._memo:
            self._memo[other] = float(self.embedder.embed_query(other) @ self.mine)
        return self._memo[other]


def _newest(rel: str, data: dict, pages: dict[str, tuple]) -> str | None:
    """The query page that replaced ``rel`` (``superseded_by``, or a page that ``supersedes`` it),
    followed to the end of the chain; None when the chain leaves the query pages."""
    seen = {rel}
    while True:
        target = None
        by = data.get("superseded_by")
        if isinstance(by, str) and by.strip():
            name = by.strip().removeprefix("[[").removesuffix("]]").split("|")[0].split("#")[0]
            target = next((p for p in (name, name + ".md", f"{QUERY_FOLDER}/{name}.md") if p in pages), None)
        if target is None:
            stem = rel[:-3]
            target = next((p for p, (_, d) in sorted(pages.items())
                           if any(str(x).strip().removeprefix("[[").removesuffix("]]").split("|")[0] in (stem, stem.rsplit("/", 1)[-1], rel)
                                  for x in (d.get("supersedes") if isinstance(d.get("supersedes"), list) else [d.get("supersedes")])
                                  if x)), None)
        if target is None or target in seen:
            return None if str(data.get("status")) == "superseded" else rel
        seen.add(target)
        rel, data = target, pages[target][1]
        if str(data.get("status")) != "superseded":
            return rel


def _page_of(link: str) -> str:
    """``[[concepts/a#Heading]]`` -> ``concepts/a``."""
    return link.strip().removeprefix("[[").removesuffix("]]").split("|", 1)[0].split("#", 1)[0]


_QUOTED = re.compile(r"(.*?)(\[\[[^\]]+\]\])", re.DOTALL)


def quotes(text: str) -> set[tuple[str, str]]:
    """What an answer says, as (citation, the words before it): an extractive answer is its
    quoted sentences, each followed by the chunk it came from."""
    out = set()
    for m in _QUOTED.finditer(text):
        said = _words(re.sub(r"^\s*(?:\d+\.|[-*>])\s+", "", m.group(1), flags=re.MULTILINE))
        if said:
            out.add((m.group(2), said))
    return out


def page_quotes(text: str) -> set[tuple[str, str]] | None:
    """The quotes of the answer a query page holds (its marked section, without the warning and
    the Sources list); None when the page has no such section or a person edited it."""
    _, body = fm.parse(text.replace("\r\n", "\n"))
    found = generated.find(body, SECTION)
    if found is None or found.edited:
        return None
    said = found.content.split("\n## Sources", 1)[0]
    return quotes("\n".join(line for line in said.split("\n") if not line.startswith(">")))


def _say_other_things(answer: Answer, mine: set[tuple[str, str]], note, data: dict) -> bool:
    """Two extractive answers that quote different sentences, neither holding all of the other's:
    a look-alike asked about another part of the same chunk ("How do I empty the trash?" after
    "How do I restore a file from the trash?" on a page listing both). Quotes of a chunk that
    changed since the page was written are left out (the old answer could not quote the new text);
    False when either side has nothing left to compare, or either answer is not extractive (a
    model words every answer anew)."""
    if not mine or data.get("answer_mode") != "extractive":
        return False
    theirs = page_quotes(note.text)
    if not theirs:
        return False
    now = {c.link: c.chunk_sha256 for c in answer.citations}
    changed = {p[0] for p in map(parse_source, _listed(data.get("sources")))
               if p and p[1] and p[0] in now and now[p[0]] != p[1]}
    mine = {q for q in mine if q[0] not in changed}
    theirs = {q for q in theirs if q[0] not in changed}
    return bool(mine and theirs) and not (mine <= theirs or theirs <= mine)


def find_same(ctx, answer: Answer):
    """(path, note, frontmatter, why) of the query page this question repeats, or None."""
    names = _names(ctx)
    mine = question_terms(answer.question, names)
    links = {c.link for c in answer.citations}
    meaning = _Meaning(ctx, answer.question)
    said = quotes(answer.text) if answer.mode == "extractive" else set()
    existing = _existing(ctx)
    pages = {rel: (note, data) for rel, note, data in existing}
    best, best_score, best_why = None, 0.0, None
    for rel, note, data in existing:
        asked = [data.get("question")] + _listed(data.get("also_asked"))
        overlap = max((_jaccard(mine, question_terms(str(q), names)) for q in asked if q), default=0.0)
        cited = [p[0] for p in map(parse_source, _listed(data.get("sources"))) if p]
        theirs = set(cited)
        shared = _jaccard(links, theirs)
        # the answers stand first on the same page (or one of them cites nothing): rewordings
        # do; a look-alike ("How do I delete a note?" after "How do I recover a note I deleted?")
        # leads with another page even where it shares most words and some sources
        lead = not links or not cited or _page_of(answer.citations[0].link) == _page_of(cited[0])
        why = None
        if _words(answer.question) in {_words(str(q)) for q in asked if q}:
            why = "the same question"
            overlap = 1.0
        elif not lead:
            pass
        elif _say_other_things(answer, said, note, data):
            pass  # the same page, other sentences of it quoted: another question about the same thing
        elif overlap >= SAME_QUESTION:
            why = f"the same words ({overlap:.0%} of its terms)"
        elif shared >= SAME_SOURCES and overlap >= SAME_SOURCES_QUESTION:
            why = f"the same sources ({shared:.0%}) and {overlap:.0%} of its terms"
        elif meaning.thresholds is not None and shared >= SOME_SOURCES:
            same_cos, related_cos = meaning.thresholds
            near = max((c for q in asked if q and (c := meaning.cosine(str(q))) is not None), default=-1.0)
            if near >= same_cos or (near >= related_cos and shared >= SAME_SOURCES):
                why = f"the same question in other words (meaning {near:.2f}, same sources {shared:.0%})"
                overlap = max(overlap, near)
        if why is not None:
            score = overlap + shared
            if score > best_score:
                best, best_score, best_why = rel, score, why
    if best is None:
        return None
    newest = _newest(best, pages[best][1], pages)
    if newest is None:
        return None  # replaced by a page that is not a query page: the question gets a page of its own
    if newest != best:
        best_why += f"; {best} was superseded by {newest}"
    note, data = pages[newest]
    return newest, note, data, best_why


def _section(answer: Answer) -> str:
    """The generated part of a query page: the answer and its sources."""
    lines = []
    if answer.flags:
        lines += ["> [!warning] Unverified parts of this answer"] + [f"> - {f}" for f in answer.flags] + [""]
    lines += [answer.text, "", "## Sources", ""]
    for c in answer.citations:
        where = " › ".join(x for x in (c.title, c.heading or (f"^{c.block}" if c.block else None)) if x)
        lines.append(f"- {c.link} — {where}")
    return "\n".join(lines)


def _body(answer: Answer, title: str) -> str:
    return f"# {title}\n\n" + generated.render(SECTION, _section(answer))


def write_back(ctx, answer: Answer, supersede: bool = False) -> Answer:
    """Create or update the query page. Two processes filing the same question at once: the
    loser's conflict-checked write is refused, and it retries once as an update of the winner's page.
    An answer quoting a secret from a note is still given, but not filed (the writer refuses it)."""
    from ..knowledge.secrets import SecretError

    from ..knowledge.writer import created_notice, missing_scaffold

    missing = missing_scaffold(ctx, QUERY_FOLDER + "/")
    try:
        try:
            written = _write_back(ctx, answer)
        except ConflictError:
            log.info("query page changed while being written; retrying once")
            written = _write_back(ctx, answer)
    except SecretError as exc:
        return replace(answer, notices=answer.notices + (f"no query page was written: {exc}",))
    if supersede and written.page:
        from ..knowledge.versions import supersede_most_similar

        done = supersede_most_similar(ctx, written.page, written.similar)
        written = replace(written, notices=written.notices + (done,))
    made = created_notice(ctx, missing)
    if made:
        written = replace(written, notices=written.notices + (made,))
    return written


TITLE_CHARS = 200  # a query page's title (and # heading): a pasted paragraph as a question stays whole in `question`


def page_title(question: str) -> str:
    """The question as a page title: whole up to ``TITLE_CHARS``, else cut at a word and marked with
    an ellipsis (an 8,000-character question made an 8,000-character title, shown in every listing)."""
    text = " ".join(question.split())
    if len(text) <= TITLE_CHARS:
        return text
    cut = text[:TITLE_CHARS - 1]
    space = cut.rfind(" ")
    return (cut[:space] if space > TITLE_CHARS // 2 else cut).rstrip(" ,;:") + "…"


def _write_back(ctx, answer: Answer) -> Answer:
    now = _dt.datetime.now().astimezone().replace(microsecond=0).isoformat()
    same = find_same(ctx, answer)
    changes: dict[str, Any] = {"updated": now, "answer_mode": answer.mode, "sources": source_entries(answer)}
    if answer.flags:
        changes["flags"] = list(answer.flags)
    if same is None:
        rel = f"{QUERY_FOLDER}/{slug(answer.question)}.md"
        n = 2
        while ctx.files.abspath(rel).exists():  # a page of that name that is not this question
            rel = f"{QUERY_FOLDER}/{slug(answer.question)} {n}.md"
            n += 1
        title = page_title(answer.question)
        front = {"title": title, "type": "query", "question": answer.question, "asked": now, **changes,
                 "generated_by": "wikimem"}
        text = "---\n" + yaml.safe_dump(front, sort_keys=False, allow_unicode=True, width=10_000) + "---\n" \
            + _body(answer, title)
        result = write_page(ctx, rel, text, reason="query")
        status = "created"
    else:
        rel, note, data, matched = same
        asked = [str(data.get("question") or "")] + [str(q) for q in _listed(data.get("also_asked"))]
        if _words(answer.question) not in {_words(q) for q in asked}:  # a new wording, not a new spelling
            changes["also_asked"] = [q for q in asked[1:] if q] + [answer.question]
        if not answer.flags and "flags" in data:
            changes["flags"] = None
        front, body = fm.parse(note.text.replace("\r\n", "\n"))
        raw = fm.update(front.raw, front.data, changes)
        body, kept = generated.replace(body, SECTION, _section(answer))
        if kept:
            answer = replace(answer, notices=answer.notices + (f"{rel}: {kept}",))
        text = fm.compose(raw, body)  # LF: the writer gives it the note's own line endings
        result = write_page(ctx, rel, text, expected_sha256=note.sha256, reason="query (updated)")
        status = "updated"
    notices = list(answer.notices) + list(result.warnings)
    summary = re.sub(r"\s*\[\[[^\]]*\]\]", "", answer.text.split("\n")[0])
    summary = summary if len(summary) <= 100 else summary[:100].rsplit(" ", 1)[0] + "…"
    try:
        add_to_index(ctx, rel, summary)  # which brings the cache up to date for index.md too
    except WikimemError as exc:
        notices.append(f"index.md not updated: {exc}")
    return replace(answer, page=rel, page_status=status, notices=tuple(notices), similar=tuple(result.similar),
                   matched=None if same is None else same[3])


def check_sources(ctx, rel: str) -> list[tuple[str, str]]:
    """For each cited chunk of query page ``rel``: ``(link, status)`` with status ``ok`` (a chunk
    of the cited page still has that exact text), ``changed`` (the page is there, that text is
    not: the answer may be stale) or ``missing`` (the page is gone). For the linter."""

    front, _ = fm.parse(ctx.files.read_note(rel).text.replace("\r\n", "\n"))
    hashes_by_page: dict[str, set[str] | None] = {}
    out = []
    for entry in front.data.get("sources") or []:
        parsed = parse_source(entry)
        if parsed is None or parsed[1] is None:
            continue
        link, digest = parsed
        target = link[2:-2].split("|")[0].split("#")[0]
        path = target if target.lower().endswith(".md") else target + ".md"
        if path not in hashes_by_page:
            try:
                page = ctx.parse_file(path)
                hashes_by_page[path] = {chunk_hash(c.text) for c in ctx.chunks(page)}
            except WikimemError:
                hashes_by_page[path] = None
        known = hashes_by_page[path]
        out.append((link, "missing" if known is None else "ok" if digest in known else "changed"))
    return out
