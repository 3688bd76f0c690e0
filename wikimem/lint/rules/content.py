"""WM5xx: what the pages say: concepts that deserve a page, mentions that should be links,
near-duplicates, stubs, raw/ sources changed after ingest, secrets."""
from __future__ import annotations

import json
import logging
import re
from pathlib import Path

from ...vault.files import is_raw_path
from ..context import SPECIAL_PAGES, is_note_target
from ..options import number
from ..registry import rule
from ..text import NOT_PROSE as _NOT_PROSE
from ..text import WORD as _WORD

log = logging.getLogger(__name__)

_HAN = re.compile(r"[\u3040-\u30ff\u3400-\u9fff\uf900-\ufaff]")
_HEADING_LINE = re.compile(r"^ {0,3}#{1,6}(?:[ \t].*)?$", re.M)
_HAN_RUN = re.compile(r"[\u3040-\u30ff\u3400-\u9fff\uf900-\ufaff]+")


@rule("WM501", "missing-concept-page", severity="info")
def missing_concept_page(ctx):
    """A name linked from several pages (option ``min_pages``, default 3) that no page has as its
    title, file name or alias: a concept the wiki talks about but never explains. Example:
    ``[[Query Expansion]]`` in three pages and no such page. Reported once, at the first mention."""
    need = number(ctx.rule_options(), "min_pages", 3, f"SCHEMA.md lint.rules.{ctx.code}")
    mentions: dict[str, dict[str, int]] = {}
    shown: dict[str, str] = {}
    for page in ctx.wiki_pages():
        for link in page.links:
            if link.resolved or not link.target or not is_note_target(link.target) or link.key:
                continue
            key = link.target.strip().lower()
            shown.setdefault(key, link.target.strip())
            mentions.setdefault(key, {}).setdefault(page.path, ctx.link_line(page, link))
    for key, where in sorted(mentions.items()):
        if len(where) >= need:
            first = min(where)
            yield ctx.finding(first, where[first], f"[[{shown[key]}]] is linked from {len(where)} pages "
                                                   f"({', '.join(sorted(where)[:3])}{'...' if len(where) > 3 else ''}) "
                                                   "but has no page")




def _mention_line(page, name: str) -> int:
    pattern = re.compile(rf"(?<!\w){re.escape(name)}(?!\w)", re.I)
    for i, line in enumerate(page.body.split("\n")):
        if not _HEADING_LINE.match(line) and pattern.search(_NOT_PROSE.sub(" ", line)):
            return page.body_line + i + 1
    return page.body_line + 1


def _positions(tokens: list[str], first_words) -> list[int]:
    """Indexes of tokens that start some name, found with list.index (C speed) per word present."""
    found: list[int] = []
    for word in first_words & set(tokens):
        i = -1
        while True:
            try:
                i = tokens.index(word, i + 1)
            except ValueError:
                break
            found.append(i)
    return sorted(found)


def _fingerprint(items) -> str:
    import hashlib
    return hashlib.sha256("\n".join(map(str, items)).encode("utf-8", "surrogatepass")).hexdigest()[:16]


def _names_in(ctx, page, names, lengths, han) -> list[str]:
    """Every name (its lower-case words joined by spaces, or a Han name) the page's prose says.
    Headings are not prose: ``## Outline`` names a section, it does not mention [[Outline]]."""
    prose = ctx.prose(page)
    if "#" in prose:
        prose = _HEADING_LINE.sub(" ", prose)
        tokens = _WORD.findall(prose.lower())
    else:
        tokens = ctx.words(page)
    said: list[str] = []
    written = None
    for i in _positions(tokens, lengths.keys()):
        for size in lengths[tokens[i]]:
            words = tuple(tokens[i:i + size])
            hit = names.get(words)
            if hit is None:
                continue
            if size == 1:  # one word: only as written ("Empty", not "an empty page")
                if written is None:
                    written = set(_WORD.findall(prose))
                if hit[0] not in written:
                    continue
            said.append(" ".join(words))
    if han:
        low_prose = prose.lower()
        said += [low for low, _, _ in han if low in low_prose]
    return sorted(set(said))


@rule("WM502", "unlinked-mention", severity="info")
def unlinked_mention(ctx):
    """A page names another page (its title or an alias, whole words, option ``min_length`` chars,
    default 4; a one-word name only in the case it is written; in prose, not in headings) without
    linking to it anywhere: a missing cross-reference. Example: "ranked with
    Reciprocal Rank Fusion" in a page with no ``[[Reciprocal Rank Fusion]]``. Reported once per
    page and target."""
    min_length = number(ctx.rule_options(), "min_length", 4, f"SCHEMA.md lint.rules.{ctx.code}")
    names: dict[tuple[str, ...], tuple[str, str]] = {}  # words -> (name as written, page)
    lengths: dict[str, set[int]] = {}  # first word -> word counts of the names starting with it
    han: list[tuple[str, str, str]] = []
    for page in ctx.wiki_pages():
        if ctx.is_superseded(page.path):
            continue
        for name in dict.fromkeys((page.title, *page.aliases)):
            name = name.strip()
            if len(name) < min_length:
                continue
            if _HAN.search(name):
                han.append((name.lower(), name, page.path))
                continue
            words = tuple(_WORD.findall(name.lower()))
            if words and words not in names:
                names[words] = (name, page.path)
                lengths.setdefault(words[0], set()).add(len(words))
    # "no-headings": results memoised before headings were left out are not reused
    fingerprint = "mentions:" + _fingerprint(sorted(names) + sorted(h[0] for h in han) + [str(min_length), "no-headings"])
    for page in ctx.wiki_pages():
        if ctx.is_superseded(page.path):
            continue  # an old version naming its successor is history, not a missing link
        linked = {l.resolved for l in page.links if l.resolved} | {page.path}
        said = ctx.memo.get(page.sha256, fingerprint, lambda: _names_in(ctx, page, names, lengths, han),
                            family="mentions:")
        found: dict[str, str] = {}
        for key in said:
            hit = names.get(tuple(key.split(" "))) or next(((n, t) for low, n, t in han if low == key), None)
            if hit is not None and hit[1] not in linked and hit[1] not in found:
                found[hit[1]] = hit[0]
        for target, name in sorted(found.items()):
            yield ctx.finding(page.path, _mention_line(page, name),
                              f"mentions '{name}' without linking [[{ctx.pages[target].title}]]")


@rule("WM503", "near-duplicate", severity="warning")
def near_duplicate(ctx):
    """Two current pages of the same type whose embeddings are nearly the same and whose words
    largely overlap: merge candidates or contradicting versions of one subject. Thresholds: options
    ``threshold`` (cosine) and ``min_overlap``, default the embedder's calibrated near-duplicate
    page bar (templated sibling pages such as "Import from Notion" / "Import from Craft" are
    labelled not duplicates there; see rules/near_duplicates.py). Needs vectors in the cache
    (``wikimem index``); skipped with a notice otherwise. Example: two concept pages that say the
    same thing in the same words."""
    from .near_duplicates import near_duplicate_pairs
    for a, b, cos in near_duplicate_pairs(ctx):
        yield ctx.finding(a, 1, f"near-duplicate of [[{ctx.pages[b].title}]] ({b}), cosine {cos:.3f}: merge, or "
                                "supersede one")


def word_count(prose: str, words: list[str]) -> int:
    """Words of prose (``words``: its word tokens); each Han or kana character counts as a word,
    as word processors count CJK."""
    if prose.isascii():
        return len(words)
    return len(words) - len(_HAN_RUN.findall(prose)) + len(_HAN.findall(prose))


@rule("WM504", "stub-page", severity="warning")
def stub_page(ctx):
    """An empty page, or one shorter than SCHEMA.md's ``min_words`` threshold (info severity then).
    Example: a page with a heading and nothing else."""
    minimum = ctx.schema.thresholds.get("min_words")
    minimum = minimum if isinstance(minimum, int) and not isinstance(minimum, bool) else 0
    for page in ctx.wiki_pages():
        if ctx.is_superseded(page.path):
            continue
        words = ctx.memo.get(page.sha256, "words", lambda: word_count(ctx.prose(page), ctx.words(page)))
        if words < 64 and not _WORD.search(_HEADING_LINE.sub("", ctx.prose(page))):  # only headings: empty
            yield ctx.finding(page.path, 1, f"[[{page.title}]] is empty")
        elif words < minimum:
            yield ctx.finding(page.path, 1, f"[[{page.title}]] is a stub: {words} words (min_words is {minimum})",
                              severity="info")


@rule("WM505", "long-page", severity="info")
def long_page(ctx):
    """A page longer than SCHEMA.md's ``max_words`` threshold: split it so links and search can
    point at the right part. Example: ``- max_words: 1500`` and a 3,000-word page."""
    maximum = ctx.schema.thresholds.get("max_words")
    if not isinstance(maximum, int) or isinstance(maximum, bool):
        return
    for page in ctx.wiki_pages():
        words = ctx.memo.get(page.sha256, "words", lambda: word_count(ctx.prose(page), ctx.words(page)))
        if words > maximum:
            yield ctx.finding(page.path, 1, f"[[{page.title}]] has {words} words (max_words is {maximum})")


LEDGER = "lint-raw-ledger.json"


@rule("WM506", "raw-changed", severity="error")
def raw_changed(ctx):
    """A file in raw/ changed after it was ingested: sources are immutable, pages citing them may
    now misquote them. Compared with the ``sha256`` a page records for it (``sources`` with a
    ``sha256`` field) and with the hash lint recorded the first time it saw the file
    (``.wikimem/lint-raw-ledger.json``). Example: editing raw/articles/x.md after ingest."""
    raw = {p: v[0] for p, v in ctx.files.items() if is_raw_path(p)}
    recorded: dict[str, str] = {}
    for page in ctx.pages.values():
        sha = page.frontmatter.data.get("sha256")
        if isinstance(sha, str) and len(sha) >= 8:
            for link in page.links:
                if link.key == "sources" and link.resolved in raw:
                    recorded.setdefault(link.resolved, sha.lower())
    ledger_path = Path(ctx.cache.dir) / LEDGER
    ledger = _read_json(ledger_path)
    for path in sorted(raw):
        want = recorded.get(path) or ledger.get(path)
        want = want if isinstance(want, str) else None
        if want and not raw[path].startswith(want) and not want.startswith(raw[path]):
            yield ctx.finding(path, 1, f"raw source {path} changed since it was ingested "
                                       f"(sha256 {raw[path][:12]}, recorded {want[:12]})")
    new = {p: s for p, s in raw.items() if not ledger.get(p) and s}  # "": not read yet, nothing to record
    if new and ctx.cache.writable():
        _write_json(ledger_path, {**ledger, **new})


def _read_json(path: Path) -> dict:
    if not path.is_file():
        return {}
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        return data if isinstance(data, dict) else {}
    except (OSError, ValueError):
        return {}


def _write_json(path: Path, data: dict) -> None:
    """The raw/ ledger, written atomically."""
    import os
    try:
        tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
        tmp.write_text(json.dumps(dict(sorted(data.items())), separators=(",", ":")), encoding="utf-8")
        os.replace(tmp, path)
    except OSError as exc:
        log.warning("%s not written: %s", path.name, exc)


@rule("WM507", "secret", severity="error")
def secret(ctx):
    """A secret in a note (API key, token, private key, bearer token: error; phone- or ID-number-
    like strings: info), found by wikimem.knowledge.secrets.scan, the scan every write goes
    through. Example: ``OPENAI_API_KEY=sk-...`` pasted into a page."""
    from ...knowledge.secrets import scan

    def secrets_in(page) -> list:
        found = []
        parts = [(page.body, page.body_line)]
        if page.frontmatter.raw:
            parts.append((page.frontmatter.raw, 1))
        for text, offset in parts:
            found += [[f.line + offset, f.column, f.severity, f"{f.message} (rule {f.rule})"] for f in scan(text)]
        return found

    for path in sorted(ctx.pages):
        page = ctx.pages[path]
        for line, column, severity, message in ctx.memo.get(page.sha256, "secrets", lambda: secrets_in(page)):
            yield ctx.finding(path, line, message, column=column, severity=severity)


@rule("WM508", "stale-page", severity="info")
def stale_page(ctx):
    """A current page not updated for longer than SCHEMA.md's ``stale_after_days`` (by ``updated``,
    else ``created``). Example: ``- stale_after_days: 365`` and ``updated: 2020-01-01``."""
    from .graph import _date, today
    limit = ctx.schema.thresholds.get("stale_after_days")
    if not isinstance(limit, int) or isinstance(limit, bool):
        return
    now = today(ctx)
    for page in ctx.wiki_pages():
        when = _date(page.updated or page.created)
        if when and page.type not in ("memory", "source") and not ctx.is_superseded(page.path) \
                and (now - when).days > limit:
            yield ctx.finding(page.path, 1, f"[[{page.title}]] not updated for {(now - when).days} days "
                                            f"(stale_after_days is {limit})")
