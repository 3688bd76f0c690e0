"""``remember``: small atomic facts as notes under ``memories/``, without piling up duplicates.

A new fact is compared with the active memories of the same kind (similarity.py): an exact or
near duplicate is not written again (the existing note is named); a fact that updates one about
the same subject is written and supersedes it (versions.py); anything else is a new note. Every
write goes through the writer path, so the secret scan refuses keys before anything is written.

``propose_from_transcript`` finds candidate memories in an imported conversation extractively
(stated preferences, decisions, instructions, facts about people and projects) and runs each one
through the same logic, citing the turn it came from.
"""
from __future__ import annotations

import contextlib
import logging
import re
import threading
import unicodedata
from dataclasses import dataclass, field, replace
from typing import Any, Iterator

import yaml

from ..errors import ConflictError, UsageError, WikimemError
from ..index.update import update
from ..parse import parse_page
from . import secrets
from ..vault.files import ensure_cache_folder
from .factslots import judge
from .similarity import FACT_CHARS, candidate_paths, compare, read_bodies, same_slot, same_words, thresholds_for
from . import versions
from .versions import supersede
from .writer import add_to_index, write_page

log = logging.getLogger(__name__)

KINDS = ("persona", "episodic", "instruction", "decision")
DEFAULT_KIND = "episodic"
FOLDER = "memories"
MAX_FACT_CHARS = 2000  # a memory is one sentence or a short paragraph; a longer text is a page


@dataclass(frozen=True)
class RememberResult:
    action: str  # written | duplicate | superseded (this exact fact was replaced before) | would-write (dry run)
    path: str  # the new note, or the existing duplicate
    fact: str
    kind: str
    supersedes: str | None = None
    similar: list[tuple[str, float]] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    source: str | None = None
    # earlier memories this fact may update, where the rule was not sure: both stay active, and
    # one `supersede` call (by the agent or a person) settles it
    possible_update: list[str] = field(default_factory=list)
    judge: str = "rule"  # rule | llm: what decided

    def to_dict(self) -> dict[str, Any]:
        return {"action": self.action, "path": self.path, "fact": self.fact, "kind": self.kind,
                "supersedes": self.supersedes, "possible_update": list(self.possible_update),
                "judge": self.judge, "source": self.source,
                "similar": [{"path": p, "similarity": round(s, 4)} for p, s in self.similar],
                "warnings": list(self.warnings)}


def _link_key(link: str | None) -> str | None:
    if not link:
        return None
    target = str(link).strip().strip("[]").split("|", 1)[0].split("#", 1)[0].strip()
    return target.rsplit(".md", 1)[0].casefold() or None


def _about_link(about: str | None) -> str | None:
    if about is None or not about.strip():
        return None
    about = about.strip()
    return about if about.startswith("[[") else f"[[{about.strip('[]')}]]"


_SLUG_DROP = re.compile(r"[^\w\u3400-\u9fff]+")


def slug(fact: str, words: int = 8, max_len: int = 60) -> str:
    """A file name from the fact's words: stop words left out when the fact has enough others (so the
    words that name it fit), whole words only (a word cut in half named nothing), at most ``words``
    words and ``max_len`` characters."""
    from ..stores.analysis import STOP_WORDS
    text = unicodedata.normalize("NFKC", fact).casefold()
    parts = [p for p in _SLUG_DROP.split(text) if p]
    content = [p for p in parts if p not in STOP_WORDS]
    if len(content) >= 3:
        parts = content
    out = ""
    for part in parts[:words]:
        joined = f"{out}-{part}" if out else part
        if len(joined) > max_len:
            if not out:  # one long word (a Chinese sentence has no spaces): its first characters
                out = part[:max_len]
            break
        out = joined
    return out.strip("-_") or "memory"


def _free_path(ctx, fact: str) -> str:
    base = f"{FOLDER}/{slug(fact)}"
    rel, n = f"{base}.md", 2
    while ctx.files.abspath(rel).exists():
        rel, n = f"{base}-{n}.md", n + 1
    return rel


def _same_name(ctx, fact: str) -> list[str]:
    """The notes already named after ``fact`` (``x.md``, ``x-2.md`` ...)."""
    base = f"{FOLDER}/{slug(fact)}"
    out, rel, n = [], f"{base}.md", 2
    while ctx.files.abspath(rel).exists():
        out.append(rel)
        rel, n = f"{base}-{n}.md", n + 1
    return out


def _title(fact: str, limit: int = 80) -> str:
    one = " ".join(fact.split())
    if len(one) <= limit:
        return one
    cut = one[:limit].rsplit(" ", 1)[0] if " " in one[:limit] else one[:limit]
    return cut + "…"


def memory_note(fact: str, kind: str, about: str | None, source: str | None, created: str,
                possible_update: list[str] | None = None) -> str:
    front: dict[str, Any] = {"title": _title(fact), "type": "memory", "kind": kind}
    if about:
        front["about"] = about
    front["created"] = created
    front["source"] = source or "wikimem remember"
    if possible_update:  # read by memory_view: the pair is a conflict until one supersede settles it
        front["possible_update"] = [f"[[{p.rsplit('.md', 1)[0]}]]" for p in possible_update]
    head = yaml.safe_dump(front, sort_keys=False, allow_unicode=True, default_flow_style=False, width=10_000)
    return f"---\n{head}---\n{fact.strip()}\n"


def _memories_like(ctx, fact: str, kind: str):
    """Active memories of ``kind`` that search finds for ``fact``: path -> (body, page)."""
    bodies = read_bodies(ctx, candidate_paths(ctx, fact, "memory", exclude=""))
    return {p: (b, pg) for p, (b, pg) in bodies.items()
            if pg.type == "memory" and str(pg.frontmatter.get("kind") or DEFAULT_KIND).strip().lower() == kind}


_LOCK = threading.RLock()
_HELD = threading.local()  # vault root -> (file handle, depth) held by this thread
LOCK_FILE = "remember.lock"


@contextlib.contextmanager
def remember_lock(ctx) -> Iterator[None]:
    """Serialise ``remember`` between threads and processes: the lock is held across "look for
    duplicates -> write -> supersede", so two servers remembering one fact at once write one note
    (the second sees the first's note). Re-entrant in a thread. It is its own file
    (``.wikimem/remember.lock``), not the writer's ``notes.lock``, which the write itself takes:
    an flock is per open file, so taking that one here would deadlock the write."""
    with _LOCK:
        held = getattr(_HELD, "locks", None)
        if held is None:
            held = _HELD.locks = {}
        key = str(ctx.root)
        if key in held:  # nested (remember_from_transcript -> remember): already ours
            held[key][1] += 1
            try:
                yield
            finally:
                held[key][1] -= 1
            return
        fh = None
        try:
            import fcntl
            folder = ctx.root / ".wikimem"
            ensure_cache_folder(folder)
            fh = open(folder / LOCK_FILE, "a+b")
            fcntl.flock(fh.fileno(), fcntl.LOCK_EX)
        except (ImportError, OSError) as exc:  # Windows, a read-only cache: the create race check remains
            log.warning("remember without the cross-process lock (%s)", exc)
            if fh is not None:
                fh.close()
            fh = None
        held[key] = [fh, 1]
        try:
            _index_unseen_memories(ctx)
            yield
        finally:
            del held[key]
            if fh is not None:
                fh.close()  # closing the file releases the flock


def _index_unseen_memories(ctx) -> None:
    """Memory notes on disk that this process's cache does not hold (another process wrote them and
    did not get as far as its index commit, or wrote them without wikimem): index them before the
    duplicate check, so it sees every note the lock's previous holders wrote."""
    try:
        folder = ctx.files.abspath(FOLDER)
        if not folder.is_dir():
            return
        on_disk = {f"{FOLDER}/{p.name}" for p in folder.glob("*.md")}
        if not on_disk:
            return
        known = set(ctx.cache.manifest.paths_like(f"{FOLDER}/"))
        unseen = sorted(on_disk - known)
        if unseen:
            update(ctx, paths=unseen, wait=10.0)
    except Exception as exc:  # noqa: BLE001 - a cache problem must not stop the fact being remembered
        log.info("could not check memories/ against the cache: %s", exc)


def remember(ctx, fact: str, *, kind: str = DEFAULT_KIND, about: str | None = None, source: str | None = None,
             dry_run: bool = False, supersede_old: bool = True, llm: dict | None = None) -> RememberResult:
    """``supersede_old`` False (``--no-supersede``): a fact that updates an earlier one is written
    beside it and the earlier one stays active (``similar`` names it). ``llm``: the model judging
    (``choose_llm``'s dict; memory_judge.py), None or kind None: the structural rule alone."""
    fact = (fact or "").strip()
    if not re.search(r"\w", fact):  # "---" was written, and named as a possible update of every memory
        raise UsageError("nothing to remember: the fact is empty" if not fact else
                         f"nothing to remember: {fact[:40]!r} has no words")
    if len(fact) > MAX_FACT_CHARS:
        raise UsageError(f"a memory is one sentence or a short paragraph (at most {MAX_FACT_CHARS:,} characters); "
                         f"this one has {len(fact):,}: write it as a page (write_page / wikimem write) instead")
    kind = (kind or DEFAULT_KIND).strip().lower()
    if kind not in KINDS:
        raise UsageError(f"unknown memory kind {kind!r} (choose one of {', '.join(KINDS)})")
    secrets.check(fact, "memory")  # before anything else: a key must not even be compared or logged
    if dry_run:
        return _remember(ctx, fact, kind, _about_link(about), source, True, supersede_old, llm)
    with remember_lock(ctx):
        return _remember(ctx, fact, kind, _about_link(about), source, False, supersede_old, llm)


def _superseded_copy(ctx, fact: str) -> tuple[str, str] | None:
    """(path, superseded_by) of a superseded memory that says exactly ``fact``: remembering it again
    says so rather than writing a ``-2`` copy of it."""
    from .similarity import normalise
    for rel in _same_name(ctx, fact):
        try:
            page = parse_page(rel, ctx.files.read_note(rel).text)
        except WikimemError:
            continue
        if str(page.frontmatter.get("status") or "") == "superseded" and normalise(page.body.strip()) == normalise(fact):
            return rel, str(page.frontmatter.get("superseded_by") or "a newer memory")
    return None


def _remember(ctx, fact: str, kind: str, about: str | None, source: str | None, dry_run: bool,
              supersede_old: bool = True, llm: dict | None = None) -> RememberResult:
    warnings: list[str] = []
    decided_by = "rule"
    verdict = None
    embedder = ctx.cache.embedder()
    thresholds, notice = thresholds_for(embedder)
    if notice:
        warnings.append(notice)
    for attempt in (1, 2):
        existing = _memories_like(ctx, fact, kind)
        given = {p for p, (_b, pg) in existing.items() if _declared_same_subject(about, pg)}
        matches = compare(embedder, thresholds, fact, {p: b for p, (b, _pg) in existing.items()}, given)
        matches = [replace(m, label=fact_label(m.label, fact, existing[m.path][0], m.path in given)) for m in matches]
        similar = [(m.path, m.similarity) for m in matches if m.label != "different"]
        same = [m for m in matches if _same_subject(about, existing[m.path][1])]
        dup = next((m.path for m in same if m.label == "duplicate"), None)
        old = next((m.path for m in same if m.label == "update"), None)
        possible = [m.path for m in same if m.label == "possible_update"]
        if llm and llm.get("kind") and attempt == 1 and same:
            from .memory_judge import judge as llm_judge
            verdict, notice = llm_judge(ctx, fact, kind, [m.path for m in same], llm=llm["kind"],
                                        model=llm.get("model") or "", url=llm.get("url") or "",
                                        api_key=llm.get("api_key") or "", timeout=llm.get("timeout") or 60.0)
            if notice:
                warnings.append(notice)
        if verdict is not None and verdict.event == "DUPLICATE" and verdict.path in existing:
            from .memory_judge import not_a_duplicate
            why = not_a_duplicate(fact, existing[verdict.path][0], {m.path: m.label for m in matches}.get(verdict.path))
            if why:  # "DUPLICATE" would leave the new fact unwritten: a changed value must not be hidden
                warnings.append(f"the memory judge called it a duplicate of {verdict.path}, but {why}; "
                                "the rule decided instead")
                verdict = None
        if verdict is not None:  # the model's answer, checked (memory_judge); kept for a second attempt
            decided_by = "llm"
            dup = verdict.path if verdict.event == "DUPLICATE" else None
            old = verdict.path if verdict.event == "UPDATE" else None
            possible = [p for p in possible if p != old] if verdict.event != "ADD" else []
        if dup is not None:
            return RememberResult("duplicate", dup, fact, kind, similar=similar, warnings=warnings, source=source,
                                  judge=decided_by)
        if not supersede_old:
            old = None
        copy = _superseded_copy(ctx, fact)
        if copy is not None:
            return RememberResult("superseded", copy[0], fact, kind, similar=similar, source=source,
                                  warnings=warnings + [f"this fact was remembered before ({copy[0]}) and was superseded by "
                                                       f"{copy[1]}; `wikimem restore {copy[0]}` makes it active again"])
        rel = _free_path(ctx, fact)
        unseen = [p for p in _same_name(ctx, fact) if p not in existing]
        if unseen and attempt == 1:
            # a note of this fact's name that the check above did not see: another `remember` of it
            # may have just written it, before the cache had it. Look again with it indexed.
            update(ctx, paths=unseen, wait=10.0)
            continue
        if dry_run:
            return RememberResult("would-write", rel, fact, kind, old, similar, warnings, source, possible, decided_by)
        created = versions.now()  # one clock with supersede's superseded_on
        try:
            res = write_page(ctx, rel, memory_note(fact, kind, about, source, created, possible), reason="remember",
                               check_similar=False)
            break
        except ConflictError:
            # another process created that name first (four `remember`s of one fact at once): look
            # again, with its note in the cache, and the same fact is then a duplicate, not an error
            if attempt == 2:
                raise
            update(ctx, paths=[rel], embed=True, wait=10.0)
    warnings.extend(res.warnings)
    if old is not None:
        try:
            warnings.extend(supersede(ctx, old, rel).warnings)
        except WikimemError as exc:  # the memory stands; the link to the old one is reported
            warnings.append(f"written, but not linked as superseding {old}: {exc}")
            old = None
    try:
        add_to_index(ctx, rel)
    except WikimemError as exc:
        warnings.append(f"index.md not updated: {exc}")
    return RememberResult("written", rel, fact, kind, old, similar, warnings, source, possible, decided_by)


def update_label(embedder, thresholds, fact: str, other: str, declared_same: bool = False) -> str:
    """What ``remember`` calls ``fact`` against one earlier ``other``: "duplicate", "update" (it
    replaces ``other``) or "different". The benchmark (benchmarks/memory_updates.py) measures this."""
    [match] = compare(embedder, thresholds, fact, {"other": other}, {"other"} if declared_same else set())
    return fact_label(match.label, fact, other, declared_same)


def fact_label(label: str, fact: str, other: str, declared_same: bool = False) -> str:
    """What ``fact`` is to the earlier ``other``: "duplicate", "update", "possible_update" or
    "different" (issue 53). Facts are judged by their structure (factslots.judge: same subject and
    attribute, only the value changed; word order kept); where the structure does not settle it,
    (one place changed, the subject kept, but whether it is the value is not clear) the pair is a
    ``possible_update``: written, the earlier one named, nothing hidden. Pages (longer than a fact) keep the similarity label (issue 35 item 9)."""
    if len(fact) <= FACT_CHARS and len(other) <= FACT_CHARS:
        said = judge(other, fact)
        if said == "duplicate":
            return "duplicate"
        if said == "update":
            return "update"
        if said == "distinct":
            return "different"
        return "possible_update"  # one place changed, the subject kept, which slot it is unsure
    if label == "duplicate" and not same_words(other, fact):
        label = "update"
    if label == "update" and not declared_same and not same_slot(other, fact):
        return "different"
    return label


def _same_subject(about: str | None, page) -> bool:
    """A duplicate or an update needs the same subject: the same ``about`` when both name one
    ("prefers vim" about [[Alice]] is not a duplicate of the same words about [[Bob]]); when
    either names none, the similarity label alone decides."""
    theirs = _link_key(page.frontmatter.get("about"))
    mine = _link_key(about)
    return mine is None or theirs is None or mine == theirs


def _declared_same_subject(about: str | None, page) -> bool:
    """Both memories name one ``about``: the subject is given, so names in the fact may change."""
    mine = _link_key(about)
    return mine is not None and mine == _link_key(page.frontmatter.get("about"))


# the proposals from a conversation (remember --from) live in memory_proposals.py; their names stay here
from .memory_proposals import (  # noqa: E402,F401  (after remember: it imports it)
    ASSISTANT_NAMES, CUES, LLM_SYSTEM, Proposal, _SENTENCE, classify_sentence, propose_from_transcript,
    propose_with_llm, remember_from_transcript)
