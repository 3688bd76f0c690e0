"""``wikimem ingest``: copy sources into raw/ once, and give each a source page.

A source is stored unchanged under ``raw/<kind>/``. Storage is content-addressed: before copying,
the bytes' sha256 is looked up among the files already in raw/, and the same bytes ingested again
(under any name) are a no-op that says where they already are. A different file with a name that
is taken gets the hash's first 8 hex digits appended, so nothing in raw/ is ever replaced.

Each article or paper then gets a source page ``sources/<title>.md`` (outside raw/, written through
the one writer path): a link to the raw file, title, date, outline, first paragraph, key terms
(``extract.py``) and the existing pages it names (``mentions.py``), all extractive. HTML and PDF
sources also get their text as a Markdown note beside the original in raw/, so search can read
them (a web page without its site's navigation chrome, ``webpage.py``). Conversation exports
(``--kind transcript``) become one note per session (``conversations.py``). Every operation is
logged in log.md and listed in index.md.
"""
from __future__ import annotations

import datetime as _dt
import hashlib
import logging
import os
import re
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Iterable

import yaml

from ..errors import ConflictError, UsageError, WikimemError
from ..knowledge.writer import add_to_index, append_log, write_page
from ..vault.files import fit_name
from .conversations import Problem, read_export, write_sessions
from .extract import Extract, extract
from .mentions import named_pages
from .raw import add_raw

log = logging.getLogger(__name__)

KIND_FOLDERS = {"article": "raw/articles", "paper": "raw/papers", "transcript": "raw/transcripts",
                "asset": "raw/assets"}
TEXT_SUFFIXES = (".md", ".markdown", ".txt")
HTML_SUFFIXES = (".html", ".htm")
ASSET_SUFFIXES = (".png", ".jpg", ".jpeg", ".gif", ".webp", ".svg", ".bmp", ".tif", ".tiff", ".mp3", ".mp4",
                  ".wav", ".m4a", ".zip")
SOURCE_FOLDER = "sources"
_UNSAFE = re.compile(r'[\\/:*?"<>|#^\[\]\x00-\x1f]+')


@dataclass(frozen=True)
class IngestItem:
    """One input and what became of it. ``status``: added | unchanged | failed (sources), and for
    transcripts the counts of sessions added / already there, with ``problems`` for the rest."""

    source: str
    kind: str
    status: str
    raw: tuple[str, ...] = ()
    page: str | None = None
    message: str = ""
    problems: tuple[Problem, ...] = ()
    unchanged: tuple[str, ...] = ()
    similar: tuple[tuple[str, float], ...] = ()  # active source pages the new source page duplicates or updates

    def to_dict(self) -> dict[str, Any]:
        return {"source": self.source, "kind": self.kind, "status": self.status, "raw": list(self.raw),
                "page": self.page, "message": self.message, "unchanged": list(self.unchanged),
                "similar": [{"path": p, "similarity": s} for p, s in self.similar],
                "problems": [{"where": p.where, "reason": p.reason} for p in self.problems]}


@dataclass(frozen=True)
class IngestReport:
    items: tuple[IngestItem, ...] = field(default_factory=tuple)
    compiled: Any = None  # the CompileReport of ``ingest --compile`` (wikimem.compile)

    @property
    def ok(self) -> bool:
        return all(i.status != "failed" and not i.problems for i in self.items)

    def to_dict(self) -> dict[str, Any]:
        out = {"ok": self.ok, "items": [i.to_dict() for i in self.items]}
        if self.compiled is not None:
            out["compiled"] = self.compiled.to_dict()
        return out


def guess_kind(path: Path) -> str:
    suffix = path.suffix.lower()
    if suffix == ".pdf":
        return "paper"
    if suffix == ".jsonl":
        return "transcript"
    if suffix == ".json":
        head = path.read_bytes()[:65536]
        if b'"mapping"' in head:
            return "transcript"
        raise UsageError(f"{path.name}: a JSON file that is not a ChatGPT export; "
                         "say --kind asset to keep it as an asset")
    if suffix in TEXT_SUFFIXES + HTML_SUFFIXES:
        return "article"
    if suffix in ASSET_SUFFIXES:
        return "asset"
    raise UsageError(f"{path.name}: cannot tell what kind of source a '{suffix or 'no suffix'}' file is; "
                     "say --kind article|paper|transcript|asset")


def ingest(ctx, paths: Iterable[str | os.PathLike[str]], kind: str | None = None,
           llm: dict[str, Any] | None = None, supersede: bool = False) -> IngestReport:
    """``llm``: ``{"kind": "ollama"|"openai", "model", "url", "api_key", "timeout"}`` to add a
    summary and the names a source mentions to its page (``summary.py``); None: extractive only.
    ``supersede``: a new source page replaces the most similar active source page (the writer's
    conflict check reports them in ``IngestItem.similar`` either way)."""
    if kind is not None and kind not in KIND_FOLDERS:
        raise UsageError(f"unknown kind {kind!r} (known: {', '.join(KIND_FOLDERS)})")
    items = []
    for given in _expand(paths):
        path = Path(given).expanduser()
        problem = _not_a_source(path)
        if problem:
            items.append(IngestItem(str(given), kind or "?", "failed", message=problem))
            continue
        try:
            this_kind = kind or guess_kind(path)
            if this_kind == "transcript":
                items.append(_ingest_transcripts(ctx, path))
            else:
                item = _ingest_file(ctx, path, this_kind, llm)
                if supersede and item.page and item.similar:
                    from ..knowledge.versions import supersede_most_similar

                    item = replace(item, message=f"{item.message}; {supersede_most_similar(ctx, item.page, item.similar)}")
                items.append(item)
        except WikimemError as exc:
            items.append(IngestItem(str(given), kind or "?", "failed", message=str(exc)))
        except OSError as exc:
            items.append(IngestItem(str(given), kind or "?", "failed", message=exc.strerror or str(exc)))
    return IngestReport(tuple(items))


def _expand(paths: Iterable[str | os.PathLike[str]]) -> list[str | os.PathLike[str]]:
    """A folder stands for the files under it (sorted; hidden files and folders skipped)."""
    out: list[str | os.PathLike[str]] = []
    for given in paths:
        path = Path(given).expanduser()
        if path.is_dir():
            out.extend(str(p) for p in sorted(path.rglob("*"))
                       if p.is_file() and not any(part.startswith(".") for part in p.relative_to(path).parts))
        else:
            out.append(given)
    return out


# -- raw/ storage --------------------------------------------------------------------------------
def find_in_raw(ctx, data: bytes) -> str | None:
    """The vault-relative path of a file in raw/ with exactly these bytes, if any."""
    digest = hashlib.sha256(data).hexdigest()
    root = ctx.root / "raw"
    if not root.is_dir():
        return None
    for folder, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        for name in sorted(files):
            full = Path(folder) / name
            try:
                if full.stat().st_size == len(data) and hashlib.sha256(full.read_bytes()).hexdigest() == digest:
                    return full.relative_to(ctx.root).as_posix()
            except OSError:
                continue
    return None


def _free_name(ctx, folder: str, name: str, data: bytes) -> str:
    stem, dot, suffix = name.rpartition(".")
    if not dot:
        stem, suffix = name, ""
    stem = fit_name(" ".join(_UNSAFE.sub(" ", stem).split())).strip(" .") or "source"
    suffix = ("." + suffix.lower()) if suffix else ""
    rel = f"{folder}/{stem}{suffix}"
    if ctx.files.abspath(rel).exists():
        rel = f"{folder}/{stem}-{hashlib.sha256(data).hexdigest()[:8]}{suffix}"
    return rel


# -- files ---------------------------------------------------------------------------------------
ASSET_MAX_BYTES = 1 << 30  # an image, a PDF or a recording: copied as it is, up to 1 GiB


def _not_a_source(path: Path) -> str | None:
    """Why ``path`` cannot be ingested as given, or None."""
    import stat as stat_mod
    try:
        st = path.stat()
    except FileNotFoundError:
        return "no such file"
    except OSError as exc:
        return exc.strerror or str(exc)
    if not stat_mod.S_ISREG(st.st_mode):
        return ("not a regular file (a device, a FIFO or a socket); ingest copies files" if not path.is_dir()
                else "a folder with no files to ingest")
    return None


def _check_input(ctx, path: Path, kind: str) -> None:
    """Refuse before copying: a file over the size the vault reads, or binary data given as text
    (a 30 MB binary as --kind article wrote 48 MiB of U+FFFD into raw/)."""
    size = path.stat().st_size
    pdf = path.suffix.lower() == ".pdf"
    text_kind = kind in ("article", "paper") and not pdf
    limit = ctx.files.max_bytes if text_kind else max(ctx.files.max_bytes, 256 << 20) if pdf else ASSET_MAX_BYTES
    if size > limit:
        raise UsageError(f"{path.name}: {size / (1 << 20):.1f} MB, over the {limit / (1 << 20):.0f} MB a source of "
                         f"this kind may be" + (" (max_file_mb in .wikimem.toml)" if text_kind else ""))
    if text_kind:
        with open(path, "rb") as fh:
            head = fh.read(8192)
        if b"\x00" in head and not head.startswith((b"\xff\xfe", b"\xfe\xff")):  # UTF-16 text has NULs too
            raise UsageError(f"{path.name}: binary data, not text; ingest it with --kind asset to keep it as it is")


def _ingest_file(ctx, path: Path, kind: str, llm: dict[str, Any] | None = None) -> IngestItem:
    _check_input(ctx, path, kind)
    data = path.read_bytes()
    existing = find_in_raw(ctx, data)
    if existing and (kind == "asset" or not existing.startswith(tuple(KIND_FOLDERS[k] for k in ("article", "paper")))
                     or _has_source_page(ctx, existing)):
        return IngestItem(str(path), kind, "unchanged", (existing,),
                          message=f"already in the vault as {existing}; nothing to do")
    if existing:  # copied before, but its source page was never written (an interrupted ingest)
        info = extract(path.name, data, path.suffix.lower())
        page, warnings, similar = _write_source_page(ctx, info, kind, existing, None, data)
        return IngestItem(str(path), kind, "added", (existing,), page,
                          f"already in the vault as {existing}; its missing source page {page} was written"
                          + ("; " + "; ".join(warnings) if warnings else ""), similar=similar)
    suffix = path.suffix.lower()
    info: Extract | None = None
    if kind != "asset":
        info = extract(path.name, data, suffix)  # before any write: a bad PDF fails with nothing written
        from ..knowledge import secrets

        secrets.check(info.markdown, path.name)  # raw/ is forever: a secret never gets in
    rel = _free_name(ctx, KIND_FOLDERS[kind], path.name, data)
    try:
        add_raw(ctx, rel, data)
    except ConflictError:
        if find_in_raw(ctx, data) == rel:  # another ingest of the same file got there first
            return IngestItem(str(path), kind, "unchanged", (rel,),
                              message=f"already in the vault as {rel} (added meanwhile); nothing to do")
        raise
    written = [rel]
    text_note = None
    if info is not None and suffix not in TEXT_SUFFIXES:
        # HTML / PDF: their text as a Markdown note beside the original, so search reads it
        text_note = rel.rsplit(".", 1)[0] + ".md"
        if ctx.files.abspath(text_note).exists():
            text_note = rel + ".md"
        front = yaml.safe_dump({"title": info.title, "type": "source", "kind": kind,
                                "derived_from": f"[[{rel}]]"}, sort_keys=False, allow_unicode=True, width=10_000)
        add_raw(ctx, text_note, f"---\n{front}---\n{info.markdown}".encode("utf-8"))
        written.append(text_note)
    from ..knowledge.writer import refresh_cache

    page = None
    warnings = []
    similar: tuple[tuple[str, float], ...] = ()
    if info is not None:
        summary = None
        if llm and llm.get("kind") not in (None, "", "none"):
            from ..llm import LLMError
            from .summary import summarise

            try:
                summary = summarise(ctx, info.markdown, kind=llm["kind"], model=llm.get("model") or "",
                                    url=llm.get("url") or "", api_key=llm.get("api_key") or "",
                                    timeout=float(llm.get("timeout") or 60.0))
            except LLMError as exc:
                warnings.append(f"{exc}; the source page is extractive only")
        page, more, similar = _write_source_page(ctx, info, kind, rel, text_note, data, summary)
        warnings += more
    else:
        append_log(ctx, "ingest", f"{rel} ({kind}, {len(data):,} bytes)")
        warn = refresh_cache(ctx, written)
        if warn:
            warnings.append(warn)
    message = f"added {', '.join(written)}" + (f"; source page {page}" if page else "")
    if warnings:
        message += "; " + "; ".join(warnings)
    return IngestItem(str(path), kind, "added", tuple(written), page, message, similar=similar)


def _has_source_page(ctx, raw_rel: str) -> bool:
    folder = ctx.root / SOURCE_FOLDER
    if not folder.is_dir():
        return False
    needle = f"[[{raw_rel}]]"
    for page in folder.glob("*.md"):
        try:
            if needle in page.read_text(encoding="utf-8", errors="replace"):
                return True
        except OSError:
            continue
    return False


def _page_text(ctx, info: Extract, kind: str, rel: str, text_note: str | None, data: bytes,
               keep: dict[str, Any] | None, summary=None) -> str:
    """``rel`` is cited with the sha256 of ``data``, its bytes as summarised, so ``wikimem review``
    (and lint WM408) can tell when the file changed since."""
    today = _dt.date.today().isoformat()
    size = len(data)
    links = [f"[[{rel}]] sha256:{hashlib.sha256(data).hexdigest()}"] + ([f"[[{text_note}]]"] if text_note else [])
    front: dict[str, Any] = dict(keep or {})
    targets = {link.split("]]", 1)[0] for link in links}  # an older entry for the same file is replaced
    previous = [s for s in front.get("sources") or [] if isinstance(s, str) and s.split("]]", 1)[0] not in targets]
    front.update({"title": info.title, "type": "source", "kind": kind})
    front.setdefault("created", today)
    front["updated"] = today
    if info.date:
        front["date"] = info.date
    front["sources"] = links + previous
    if info.key_terms:
        front["key_terms"] = list(info.key_terms)
    lines = [f"# {info.title}", "", f"Source: [[{rel}]] ({kind}, {size:,} bytes, ingested {today})"
             + (f"; text: [[{text_note}]]" if text_note else ""), ""]
    if summary is not None:
        front["summary_by"] = "llm"
        lines += ["## Summary", "", summary.text, ""]
        if summary.linked:
            lines += ["Names: " + " · ".join(summary.linked), ""]
        if summary.candidates:
            lines += ["Candidates for new pages: " + ", ".join(summary.candidates), ""]
    if info.first_paragraph:
        lines += ["## First paragraph", "", "> " + info.first_paragraph, ""]
    if info.outline:
        top = min(level for level, _ in info.outline)
        lines += ["## Outline", ""] + [f"{'  ' * (level - top)}- {text}" for level, text in info.outline] + [""]
    if info.key_terms:
        lines += ["## Key terms", "", ", ".join(info.key_terms), ""]
    named = named_pages(ctx, info.markdown)
    if named:
        lines += ["## Mentions", "", " · ".join(named), ""]
    if previous:
        lines += ["## Earlier versions", ""] + [f"- {s}" for s in previous] + [""]
    body = "\n".join(lines)
    yaml_text = yaml.safe_dump(front, sort_keys=False, allow_unicode=True, width=10_000)
    return f"---\n{yaml_text}---\n{body}"


def _write_source_page(ctx, info: Extract, kind: str, rel: str, text_note: str | None, data: bytes, summary=None):
    from ..parse import frontmatter as fm

    name = fit_name(" ".join(_UNSAFE.sub(" ", info.title).split())[:100]).strip(" .") or fit_name(Path(rel).stem)
    page_rel = f"{SOURCE_FOLDER}/{name} (source).md"  # never the same name as the entity/concept page
    expected = None
    keep = None
    target = ctx.files.abspath(page_rel)
    if target.exists():
        note = ctx.files.read_note(page_rel)
        front, _ = fm.parse(note.text.replace("\r\n", "\n"))
        if front.error:
            raise WikimemError(f"{page_rel}: {front.error}; fix its frontmatter before ingesting into it")
        keep, expected = dict(front.data), note.sha256
    text = _page_text(ctx, info, kind, rel, text_note, data, keep, summary)
    result = write_page(ctx, page_rel, text, expected_sha256=expected, reason="ingest")
    warnings = list(result.warnings)
    summary = info.first_paragraph
    if len(summary) > 100:
        summary = summary[:100].rsplit(" ", 1)[0] + "…"
    try:
        add_to_index(ctx, page_rel, summary)
    except WikimemError as exc:
        warnings.append(f"index.md not updated: {exc}")
    from ..knowledge.writer import refresh_cache

    warn = refresh_cache(ctx, [rel, "index.md"] + ([text_note] if text_note else []))  # write_page did the page
    if warn:
        warnings.append(warn)
    return page_rel, warnings, tuple(result.similar)


# -- conversations -------------------------------------------------------------------------------
def _ingest_transcripts(ctx, path: Path) -> IngestItem:
    parsed = read_export(path)
    results = write_sessions(ctx, parsed.sessions)
    added = [r.path for r in results if r.status in ("added", "continued")]
    same = [r.path for r in results if r.status in ("unchanged", "kept")]
    problems = list(parsed.problems)
    problems += [Problem(r.path, f"already imported ({r.reason}); raw/ notes are never changed")
                 for r in results if r.status == "kept"]
    problems += [Problem(r.path, r.reason) for r in results if r.status == "refused"]
    warnings = []
    if added:
        append_log(ctx, "ingest", f"{path.name}: {len(added)} session(s) into raw/transcripts "
                                   f"({parsed.format}); {len(same)} already there; {len(parsed.problems)} problem(s)")
        for rel in added:
            try:
                add_to_index(ctx, rel, f"{parsed.format} session")
            except WikimemError as exc:
                warnings.append(f"index.md not updated for {rel}: {exc}")
        from ..knowledge.writer import refresh_cache

        warn = refresh_cache(ctx, added + ["index.md", "log.md"])
        if warn:
            warnings.append(warn)
    status = "added" if added else ("unchanged" if results else "failed")
    grown = sum(r.status == "continued" for r in results)
    message = (f"{len(added) - grown} session(s) added, {grown} continued, {len(same)} already imported" if results
               else "no session could be imported")
    if not added and results:
        message += "; nothing to do"
    if warnings:
        message += "; " + "; ".join(warnings)
    return IngestItem(str(path), "transcript", status, tuple(added), None, message, tuple(problems), tuple(same))
