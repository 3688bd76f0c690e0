"""The only code that reads or writes note files.

Reads are defensive (binary, oversized, non-UTF-8 and unreadable files are reported, never fatal);
writes are atomic (temp file in the same folder, fsync, rename) and refuse to clobber a file that
changed since it was read.
"""
from __future__ import annotations

import fnmatch
import hashlib
import logging
import os
import re
import stat as stat_mod
import tempfile
import unicodedata
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from ..errors import ConflictError, NoteReadError, PathEscapeError, ReadOnlyError, UsageError, VaultError
from ..model import Skipped

log = logging.getLogger(__name__)

TEMP_NAME = re.compile(r"^\.wikimem-[0-9A-Za-z_]+\.tmp$")  # atomic_write_bytes' and safe_write's temp files
LEFTOVER_AGE_S = 600.0  # a write's temp file lives for well under a second; one this old is a killed write's

DEFAULT_MAX_BYTES = 5 * 1024 * 1024
ALWAYS_SKIPPED_DIRS = {".obsidian", ".trash", ".git", ".wikimem"}
NOTE_SUFFIXES = (".md", ".markdown")
BOM = b"\xef\xbb\xbf"
MIB = 1024 * 1024
BINARY_PROBE = 8192  # a note with a NUL this near its start is binary, not text
NOT_REGULAR = "not a regular file (a FIFO, socket or device); only regular files are notes"


def shown_name(name: str) -> str:
    """A file name as it can be printed: bytes that are not UTF-8 (kept by Python as lone
    surrogates, which no terminal, JSON encoder or SQLite text accepts) become ``\\xe9`` escapes."""
    return os.fsencode(name).decode("utf-8", "backslashreplace")


def bad_name(name: str) -> bool:
    """True when the file or folder name is not valid UTF-8."""
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


STEM_BYTES = 200  # a name wikimem makes up: room left for a suffix ("-2", " (source)", ".md") under 255


def fit_name(name: str, max_bytes: int = STEM_BYTES) -> str:
    """``name`` cut at a character boundary to at most ``max_bytes`` of UTF-8: file names are
    limited to 255 bytes, not characters, and a Chinese character takes three."""
    data = name.encode("utf-8", "surrogatepass")
    return name if len(data) <= max_bytes else data[:max_bytes].decode("utf-8", "ignore")


def size_text(n: float) -> str:
    return f"{n / MIB:.1f} MiB"


@dataclass(frozen=True)
class FileInfo:
    """A file found by the scan: vault-relative POSIX path plus the stat fields the cache keys on."""

    path: str
    size: int
    mtime_ns: int
    ctime_ns: int = 0  # changes with every write and cannot be set back (unlike mtime): see index/build.py

    @property
    def is_note(self) -> bool:
        return self.path.lower().endswith(NOTE_SUFFIXES)


@dataclass(frozen=True)
class NoteFile:
    """A note's bytes decoded, with what is needed to write it back unchanged."""

    path: str
    text: str  # decoded, BOM removed, line endings as in the file
    sha256: str
    newline: str  # "\n" or "\r\n" (the dominant one)
    bom: bool
    size: int
    mtime_ns: int


@dataclass(frozen=True)
class ScanResult:
    files: tuple[FileInfo, ...]
    skipped: tuple[Skipped, ...]
    leftovers: tuple[str, ...] = ()  # temp files of atomic writes a killed process left (.wikimem-*.tmp)

    @property
    def notes(self) -> tuple[FileInfo, ...]:
        return tuple(f for f in self.files if f.is_note)


def sha256_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


_GLOB_CHARS = re.compile(r"[*?\[]")
_LEADING_LITERAL = re.compile(r"[^*?\[]*")
_TRAILING_LITERAL = re.compile(r"[^*?\[\]]*\Z")


class _Matcher:
    """The rules of one kind (folders only or not; matched against the path or the name): which
    of them is the last to match a target, in about constant time per target whatever their
    number. Literal patterns are a dict; glob patterns are grouped by the literal text they begin
    and end with, and each group is one regular expression (alternatives latest rule first)."""

    def __init__(self) -> None:
        self.literal: dict[str, int] = {}
        self.globs: dict[str, dict[str, list[tuple[int, str]]]] = {}  # prefix -> suffix -> rules
        self.compiled: dict[tuple[str, str], tuple[re.Pattern[str], list[int]]] = {}

    def add(self, index: int, pattern: str) -> None:
        if not _GLOB_CHARS.search(pattern):
            self.literal[pattern] = index
            return
        prefix = _LEADING_LITERAL.match(pattern).group(0)  # type: ignore[union-attr]
        suffix = _TRAILING_LITERAL.search(pattern[len(prefix):]).group(0)  # type: ignore[union-attr]
        self.globs.setdefault(prefix, {}).setdefault(suffix, []).append((index, pattern))

    def last(self, target: str) -> int:
        """The index of the last rule matching ``target``, or -1."""
        best = self.literal.get(target, -1)
        if not self.globs:
            return best
        for i in range(len(target) + 1):
            by_suffix = self.globs.get(target[:i])
            if by_suffix is None:
                continue
            for suffix in by_suffix if len(by_suffix) < len(target) + 2 else \
                    [target[j:] for j in range(len(target) + 1) if target[j:] in by_suffix]:
                if target.endswith(suffix):
                    best = max(best, self._match(target[:i], suffix, by_suffix[suffix], target))
        return best

    def _match(self, prefix: str, suffix: str, rules: list[tuple[int, str]], target: str) -> int:
        key = (prefix, suffix)
        entry = self.compiled.get(key)
        if entry is None:
            ordered = sorted(rules, reverse=True)  # the first alternative to match is the latest rule
            regex = re.compile("|".join(f"({fnmatch.translate(pattern)})" for _, pattern in ordered))
            entry = self.compiled[key] = (regex, [index for index, _ in ordered])
        m = entry[0].match(target)
        return entry[1][m.lastindex - 1] if m and m.lastindex else -1


class IgnoreRules:
    """A small gitignore-style matcher for ``.wikimemignore`` (globs, ``dir/``, ``!`` negation).

    The last rule that matches decides, as in git. Each rule used to be tried in turn with
    ``fnmatch``, whose cache holds 32,768 patterns: past that every match compiled its pattern
    again (40k lines: 123 s an index; 100k lines: a watcher stuck building for ten minutes).
    Now literal names and paths are dict lookups and globs are grouped into a few regexes."""

    _CACHE_SIZE = 65536

    def __init__(self, lines: list[str]):
        self.rules: list[tuple[bool, bool, str]] = []  # (negate, dir_only, pattern)
        for line in lines:
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            negate = line.startswith("!")
            line = line[1:] if negate else line
            dir_only = line.endswith("/")
            self.rules.append((negate, dir_only, line.strip("/")))
        # (dir_only, against the whole path) -> matcher
        self._matchers: dict[tuple[bool, bool], _Matcher] = {}
        for index, (_, dir_only, pattern) in enumerate(self.rules):
            self._matchers.setdefault((dir_only, "/" in pattern), _Matcher()).add(index, pattern)
        self._cache: dict[tuple[str, bool], bool] = {}  # folders are asked about once per file in them

    @classmethod
    def load(cls, root: Path) -> "IgnoreRules":
        path = root / ".wikimemignore"
        try:
            with os.fdopen(_open_regular(".wikimemignore", path), "rb") as fh:  # a FIFO must not hang a scan
                data = fh.read(DEFAULT_MAX_BYTES)
        except (OSError, NoteReadError):
            return cls([])
        return cls(data.decode("utf-8", errors="replace").splitlines())

    def ignored(self, rel: str, is_dir: bool) -> bool:
        if not self.rules:
            return False
        key = (rel, is_dir)
        hit = self._cache.get(key)
        if hit is None:
            name = rel.rsplit("/", 1)[-1]
            last = -1
            for (dir_only, whole), matcher in self._matchers.items():
                if dir_only and not is_dir:
                    continue
                last = max(last, matcher.last(rel if whole else name))
            hit = last >= 0 and not self.rules[last][0]
            if len(self._cache) >= self._CACHE_SIZE:
                self._cache.clear()
            self._cache[key] = hit
        return hit


class VaultFiles:
    """File access rooted at a vault folder."""

    def __init__(self, root: str | os.PathLike[str], max_bytes: int = DEFAULT_MAX_BYTES):
        root_path = Path(root).expanduser()
        if not root_path.exists():
            raise VaultError(f"vault folder not found: {root_path}")
        if not root_path.is_dir():
            raise VaultError(f"not a folder: {root_path}")
        self.root = root_path.resolve()
        self.max_bytes = max_bytes

    # -- paths ---------------------------------------------------------------------------
    def abspath(self, rel: str) -> Path:
        """Map a vault-relative path to an absolute one, refusing anything that escapes the vault
        (``..``, absolute paths, symlinks pointing outside)."""
        if not rel or "\x00" in rel:
            raise PathEscapeError(f"invalid path: {rel!r}")
        if bad_name(rel):  # a lone surrogate (JSON allows "\udce9"): no file of ours has such a name
            raise PathEscapeError(f"invalid path: {shown_name(rel)} is not valid Unicode text")
        pure = PurePosixPath(rel.replace("\\", "/"))
        if pure.is_absolute() or rel.startswith(("/", "\\")) or (len(rel) > 1 and rel[1] == ":"):
            raise PathEscapeError(f"path must be relative to the vault: {rel}")
        if any(part == ".." for part in pure.parts):
            raise PathEscapeError(f"path escapes the vault: {rel}")
        if any(len(part.encode("utf-8")) > 255 for part in pure.parts):
            raise PathEscapeError(f"invalid path: a name in {rel[:80]}… is longer than the 255 bytes a file name can have")
        full = self.root.joinpath(*pure.parts)
        try:
            real = full.resolve()
        except (OSError, RuntimeError) as exc:  # symlink loop
            raise PathEscapeError(f"cannot resolve {rel}: {exc}") from exc
        if real != self.root and self.root not in real.parents:
            raise PathEscapeError(f"path escapes the vault through a symlink: {rel}")
        return full

    def in_raw(self, rel: str) -> bool:
        """Whether ``rel`` is under raw/ by its spelling or by where it really is: a folder symlink
        inside the vault that points into raw/ reaches the same immutable sources."""
        if is_raw_path(rel):
            return True
        try:
            real = self.abspath(rel).resolve()
            raw = (self.root / "raw").resolve()
        except (PathEscapeError, OSError, RuntimeError):
            return False  # not a place in the vault at all: abspath() says so to the caller
        return real == raw or raw in real.parents

    def refuse_raw(self, rel: str) -> None:
        """The one raw/ guard every write passes: ReadOnlyError for a path under raw/ by its
        spelling in any case (on a case-insensitive volume ``RAW/x.md`` is ``raw/x.md``) or by
        where it really is (a folder symlink into raw/)."""
        parts = rel_parts(rel)
        if self.in_raw(rel) or (parts and parts[0].casefold() == "raw"):
            raise ReadOnlyError(f"{rel}: raw/ sources are immutable; wikimem never modifies them")

    def _inside(self, path: Path) -> bool:
        try:
            real = path.resolve()
        except (OSError, RuntimeError):
            return False
        return real == self.root or self.root in real.parents

    def relpath(self, path: str | os.PathLike[str]) -> str:
        return Path(path).resolve().relative_to(self.root).as_posix()

    # -- scanning ------------------------------------------------------------------------
    def scan(self) -> ScanResult:
        """Walk the vault in sorted order. Dot-folders, ``.wikimemignore`` matches and repeated
        directories (symlink loops) are skipped; every file is listed (notes and attachments)."""
        rules = IgnoreRules.load(self.root)
        files: list[FileInfo] = []
        skipped: list[Skipped] = []
        leftovers: list[str] = []
        seen_dirs: set[tuple[int, int]] = set()

        def walk(dir_path: Path, rel_dir: str) -> None:
            try:
                st = dir_path.stat()
            except OSError as exc:
                skipped.append(Skipped(rel_dir or ".", "unreadable", str(exc)))
                return
            key = (st.st_dev, st.st_ino)
            if key in seen_dirs:
                skipped.append(Skipped(rel_dir, "symlink_loop", "folder already visited (symlink loop)"))
                return
            seen_dirs.add(key)
            try:
                entries = sorted(os.scandir(dir_path), key=lambda e: e.name)
            except OSError as exc:
                skipped.append(Skipped(rel_dir or ".", "unreadable", str(exc)))
                return
            for entry in entries:
                name = entry.name
                rel = f"{rel_dir}/{name}" if rel_dir else name
                try:
                    is_dir = entry.is_dir()  # follows symlinks
                except OSError:
                    is_dir = False
                if bad_name(name):  # never let such a name reach SQLite, JSON or a terminal
                    if not name.startswith("."):
                        what = "folder" if is_dir else "file"
                        skipped.append(Skipped(shown_name(rel), "bad_name",
                                               f"{what} name is not valid UTF-8; rename it to index it"))
                    continue
                if is_dir:
                    if name.startswith(".") or name in ALWAYS_SKIPPED_DIRS or rules.ignored(rel, True):
                        continue
                    if entry.is_symlink() and not self._inside(Path(entry.path)):
                        skipped.append(Skipped(rel, "outside", "symlinked folder points outside the vault; not followed"))
                        continue
                    walk(Path(entry.path), rel)
                    continue
                if name.startswith(".") or rules.ignored(rel, False):
                    if TEMP_NAME.match(name):
                        leftovers.append(rel)
                    continue
                try:
                    fst = entry.stat()
                except OSError as exc:  # dangling symlink, permission, loop
                    skipped.append(Skipped(rel, "unreadable", exc.strerror or str(exc)))
                    continue
                if entry.is_symlink() and not self._inside(Path(entry.path)):
                    skipped.append(Skipped(rel, "outside", "symlink points outside the vault; not followed"))
                    continue
                if not stat_mod.S_ISREG(fst.st_mode):  # reading a FIFO would block forever
                    skipped.append(Skipped(rel, "not_regular", NOT_REGULAR))
                    continue
                files.append(FileInfo(rel, fst.st_size, fst.st_mtime_ns, fst.st_ctime_ns))

        walk(self.root, "")
        try:  # wikimem writes .obsidian/graph.json too; its folder is never walked
            leftovers.extend(f".obsidian/{n}" for n in sorted(os.listdir(self.root / ".obsidian")) if TEMP_NAME.match(n))
        except OSError:
            pass
        return ScanResult(tuple(files), tuple(skipped), tuple(leftovers))

    def sweep_leftovers(self, leftovers, older_than_s: float = LEFTOVER_AGE_S) -> list[str]:
        """Remove the temp files of writes that can no longer finish (older than any write takes);
        returns the ones removed."""
        import time as _time
        removed = []
        cutoff = _time.time() - older_than_s
        for rel in leftovers:
            if self.in_raw(rel):  # raw/ is never modified, not even to tidy a temp file someone named like ours
                continue
            path = self.root / rel
            try:
                if path.is_file() and not path.is_symlink() and path.stat().st_mtime < cutoff:
                    path.unlink()
                    removed.append(rel)
            except OSError:
                continue
        return removed

    # -- reading -------------------------------------------------------------------------
    def read_bytes(self, rel: str) -> bytes:
        path = self.abspath(rel)
        try:
            fd = _open_regular(rel, path)
            with os.fdopen(fd, "rb") as fh:
                return fh.read()
        except OSError as exc:
            raise NoteReadError(rel, exc.strerror or str(exc), "unreadable") from exc

    def file_sha256(self, rel: str) -> str:
        """sha256 of a file from the scan (attachments, raw sources), read in blocks; "" when it
        cannot be read (it is then re-hashed on the next build)."""
        h = hashlib.sha256()
        try:
            with os.fdopen(_open_regular(rel, self.root.joinpath(*rel.split("/"))), "rb") as fh:
                for block in iter(lambda: fh.read(1 << 20), b""):
                    h.update(block)
        except (OSError, NoteReadError):
            return ""
        return h.hexdigest()

    def read_note(self, rel: str, trusted: bool = False) -> NoteFile:
        """Read and decode a note, or raise NoteReadError(kind=binary|too_large|not_utf8|unreadable).

        ``trusted``: the path came from our own scan, so the escape check (a path resolve per
        file) can be skipped.
        """
        path = self.root.joinpath(*rel.split("/")) if trusted else self.abspath(rel)
        try:
            fd = _open_regular(rel, path)
            with os.fdopen(fd, "rb") as fh:
                st = os.fstat(fh.fileno())
                if st.st_size > self.max_bytes:
                    raise self._too_large(rel, size_text(st.st_size))
                # the stat size can lie (a file still growing, /proc): never read past the cap
                data = read_at_most(fh, self.max_bytes + 1, st.st_size + 1)
                if len(data) > self.max_bytes:
                    raise self._too_large(rel, f"over {size_text(self.max_bytes)}")
        except OSError as exc:
            raise NoteReadError(rel, exc.strerror or str(exc), "unreadable") from exc
        return decode_note(rel, data, st.st_mtime_ns)

    def check_note(self, rel: str) -> Skipped | None:
        """Why the build would skip this note from the scan (too large, binary, not UTF-8,
        unreadable, not a regular file), or None when it can be read. For ``status``: a file the
        build skipped is reported as skipped, not as stale."""
        try:
            self.read_note(rel, trusted=True)
        except NoteReadError as exc:
            return Skipped(exc.path, exc.kind, exc.reason)
        return None

    def _too_large(self, rel: str, size: str) -> NoteReadError:
        return NoteReadError(rel, f"file is {size}, over the {size_text(self.max_bytes)} limit "
                             "(set max_file_mb in .wikimem.toml to raise it)", "too_large")

    # -- writing -------------------------------------------------------------------------
    def write_note(self, rel: str, text: str, *, expected_sha256: str | None,
                   newline: str = "\n", bom: bool = False, as_is: bool = False) -> str:
        """Atomically write ``text`` (LF line endings are converted to ``newline``; ``as_is``: the
        text already has the line endings it is to keep, each line its own).

        ``expected_sha256`` is the hash of the bytes the caller read (None: the file must not exist).
        Returns the new file's sha256. Raises ConflictError when the file changed meanwhile.
        """
        self.refuse_raw(rel)
        path = self.abspath(rel)
        _check_text(rel, text)
        body = text if as_is else text.replace("\r\n", "\n")
        if newline != "\n" and not as_is:
            body = body.replace("\n", newline)
        data = (BOM if bom else b"") + body.encode("utf-8")
        _check_bytes(rel, data)
        self._check_unchanged(rel, path, expected_sha256)
        self._write(rel, path, data, expected_sha256, allow_raw=False)
        return sha256_bytes(data)

    def _write(self, rel: str, path: Path, data: bytes, expected_sha256: str | None, allow_raw: bool) -> None:
        """Write through folder descriptors where the platform allows (vault/safe_write.py: a
        symlink swapped in after the checks above cannot send the write outside the vault, and a
        symlinked note is written where it points); by path elsewhere."""
        from . import safe_write
        if expected_sha256 is None:
            self._check_folder_twins(rel)
        twin_check = (lambda: self._check_twin(rel, path)) if expected_sha256 is None else None
        if safe_write.supported():
            safe_write.write_in_vault(self.root, rel_parts(rel), data, expected_sha256=expected_sha256,
                                      mode_for_new=0o666 & ~process_umask(), allow_raw=allow_raw,
                                      before_replace=twin_check, rel=rel)
            return
        path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write_bytes(path, data, before_replace=lambda: self._check_unchanged(rel, path, expected_sha256))

    def create_note(self, rel: str, text: str) -> str:
        """Create a new note atomically; never replaces an existing file. Allowed under raw/
        (adding a source is not modifying one). Returns the sha256 of what was written."""
        _check_text(rel, text)
        data = text.encode("utf-8")
        _check_bytes(rel, data)
        return self.create_file(rel, data)

    def write_file(self, rel: str, data: bytes, expected_sha256: str | None) -> str:
        """Write a file of the vault that is not a note (``.obsidian/graph.json`` and its backup)
        through the same door as a note: compare-and-swap on what the caller read (None: create),
        atomic, never outside the vault, never into raw/. Returns the sha256 written."""
        path = self.abspath(rel)
        self.refuse_raw(rel)
        self._check_unchanged(rel, path, expected_sha256)
        self._write(rel, path, data, expected_sha256, allow_raw=False)
        return sha256_bytes(data)

    def create_file(self, rel: str, data: bytes) -> str:
        """Create a new file of any kind (a note, a PDF, an image) through the same door as every
        write: atomic, never replacing (a name taken, or its case or Unicode twin, is a
        ConflictError), never outside the vault. Allowed under raw/; callers adding sources go
        through ingest/raw.py, which checks the name and scans the text first."""
        path = self.abspath(rel)
        self._check_unchanged(rel, path, None)
        self._write(rel, path, data, None, allow_raw=True)
        return sha256_bytes(data)

    def _check_folder_twins(self, rel: str) -> None:
        """A new note's folders that do not exist yet must not be a case or Unicode twin of one that
        does (``Concepts/`` beside ``concepts/``: one folder on macOS and Windows, two here, and a
        synced vault then holds two notes of one name)."""
        folder = self.root
        for part in rel_parts(rel)[:-1]:
            below = folder / part
            if below.exists():
                folder = below
                continue
            twin = _normalisation_twin(below) or _case_twin(below)
            if twin is not None:
                raise ConflictError(f"{rel}: a folder named {shown_name(twin)} is already there, the same name "
                                    f"as {shown_name(part)} in another case or Unicode form (macOS and Windows "
                                    "would take them for one folder); write into it instead")
            return

    @staticmethod
    def _check_twin(rel: str, path: Path) -> None:
        twin = _normalisation_twin(path)
        if twin is not None:
            raise ConflictError(f"{rel}: a file named {shown_name(twin)} is already there, the same name in "
                                "another Unicode form (macOS would take them for one file); not creating a second")
        twin = _case_twin(path)
        if twin is not None:
            raise ConflictError(f"{rel}: a file named {shown_name(twin)} is already there, the same name in another "
                                "case (macOS and Windows would take them for one file); not creating a second")

    @staticmethod
    def _check_unchanged(rel: str, path: Path, expected_sha256: str | None) -> None:
        if expected_sha256 is None:
            if path.exists():
                raise ConflictError(f"{rel}: file already exists; refusing to overwrite it")
            VaultFiles._check_twin(rel, path)
            return
        try:
            current = sha256_bytes(path.read_bytes())
        except FileNotFoundError:
            raise ConflictError(f"{rel}: file was deleted since it was read; not writing") from None
        if current != expected_sha256:
            raise ConflictError(f"{rel}: file changed on disk since it was read; not overwriting "
                                "(re-read it and apply the change again)")


def _check_text(rel: str, text: str) -> None:
    if bad_name(text):
        raise UsageError(f"{rel}: the text is not valid Unicode (a lone surrogate); it is not written")


def _check_bytes(rel: str, data: bytes) -> None:
    """A note's bytes must be what the index reads back as text: no NUL where ``decode_note``
    looks for one (the first 8 KiB), or it would be skipped as binary: written and never found."""
    if b"\x00" in data[:BINARY_PROBE]:
        raise UsageError(f"{rel}: the text holds NUL characters near its start; a note with them is skipped "
                         "as binary, so it is not written")


_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")


def clean_text(text: str) -> str:
    """Text from outside (an export, a document) made fit for a note: control characters but tab
    and line breaks dropped (a NUL makes the index skip the note as binary), lone surrogates
    replaced by U+FFFD."""
    text = _CONTROL.sub("", text)
    return text if not bad_name(text) else text.encode("utf-8", "replace").decode("utf-8")


def _normalisation_twin(path: Path) -> str | None:
    """The name of another entry in ``path``'s folder that is the same name in another Unicode
    normalisation form ("Café" composed or decomposed), or None."""
    if path.name.isascii():
        return None  # ASCII has one form
    for form in ("NFC", "NFD"):  # a stat each, not a listing of the folder (20k names: 33 ms a write)
        other = unicodedata.normalize(form, path.name)
        if other != path.name and (path.parent / other).exists():
            return other
    return None


def _case_twin(path: Path) -> str | None:
    """Another entry in ``path``'s folder whose name differs from it only in case, or None (a
    listing of the folder: a write that creates a note only)."""
    try:
        wanted = path.name.casefold()
        with os.scandir(path.parent) as entries:
            for entry in entries:
                if entry.name != path.name and entry.name.casefold() == wanted:
                    return entry.name
    except OSError:
        return None
    return None


READ_BLOCK = 1 << 20


def read_at_most(fh, limit: int, expected: int) -> bytes:
    """At most ``limit`` bytes from ``fh``: ``expected`` (the stat size + 1) in one read when it is
    below the limit, then blocks of 1 MiB. ``fh.read(limit)`` allocates ``limit`` bytes before
    reading one (``max_file_mb = 100000``: a MemoryError on every note)."""
    first = fh.read(max(1, min(limit, expected)))
    if len(first) < min(limit, expected):  # the end of the file
        return first
    parts, total = [first], len(first)
    while total < limit:
        block = fh.read(min(READ_BLOCK, limit - total))
        if not block:
            break
        parts.append(block)
        total += len(block)
    return b"".join(parts)


def _open_regular(rel: str, path: Path) -> int:
    """Open for reading without blocking (a FIFO would wait for a writer forever) and refuse
    anything but a regular file; returns the descriptor."""
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
    try:
        if not stat_mod.S_ISREG(os.fstat(fd).st_mode):
            raise NoteReadError(rel, NOT_REGULAR, "not_regular")
    except BaseException:
        os.close(fd)
        raise
    return fd


def rel_parts(rel: str) -> list[str]:
    """The names in a vault-relative path as spelled: ``\\`` is ``/``, and ``.`` and empty parts
    name nothing (``./raw//x`` is ``raw``, ``x``)."""
    return [part for part in rel.replace("\\", "/").split("/") if part not in ("", ".")]


def is_raw_path(rel: str) -> bool:
    """Whether ``rel`` is spelled as a path under raw/ (``./raw/x`` and ``raw\\x`` included).
    ``VaultFiles.in_raw`` also follows symlinked folders: use it before any write."""
    parts = rel_parts(rel)
    return bool(parts) and parts[0] == "raw"


def decode_note(rel: str, data: bytes, mtime_ns: int = 0) -> NoteFile:
    if b"\x00" in data[:BINARY_PROBE]:
        raise NoteReadError(rel, "binary file (contains NUL bytes); skipped", "binary")
    bom = data.startswith(BOM)
    raw = data[3:] if bom else data
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise NoteReadError(rel, f"not valid UTF-8 (byte {exc.start}); convert it to UTF-8 to index it",
                            "not_utf8") from None
    crlf = text.count("\r\n")
    newline = "\r\n" if crlf and crlf >= text.count("\n") - crlf else "\n"
    return NoteFile(rel, text, sha256_bytes(data), newline, bom, len(data), mtime_ns)


_UMASK: list[int] = []


def process_umask() -> int:
    """The process's umask, read without changing it where Linux allows (``os.umask`` sets it, and
    a file another thread created in between would get the wrong mode); read once."""
    if not _UMASK:
        mask = None
        try:
            with open("/proc/self/status", encoding="ascii", errors="replace") as fh:
                for line in fh:
                    if line.startswith("Umask:"):
                        mask = int(line.split()[1], 8)
                        break
        except (OSError, ValueError):
            mask = None
        if mask is None:
            mask = os.umask(0o022)
            os.umask(mask)
        _UMASK.append(mask)
    return _UMASK[0]


def ensure_cache_folder(folder: Path, parents: bool = True) -> None:
    """Make wikimem's cache folder with a ``.gitignore`` of ``*`` inside, so ``git add -A`` in a
    vault never commits the cache (50 MB with its WAL files; a later checkout then rewrote it
    under a running watcher). ``parents=False``: never make the vault folder itself (a watcher
    making its files again must not bring back a vault that was deleted)."""
    folder.mkdir(parents=parents, exist_ok=True)
    ignore = folder / ".gitignore"
    if not ignore.exists():
        try:
            atomic_write_bytes(ignore, b"# wikimem's cache: rebuilt from the vault, never committed\n*\n")
        except OSError:  # a read-only cache folder still serves reads
            log.debug("could not write %s", ignore, exc_info=True)


def atomic_write_bytes(path: Path, data: bytes, before_replace=None) -> None:
    """temp file in the same folder + fsync + rename (+ fsync of the folder where supported).
    A replaced file keeps its mode; a new one gets the mode the user's umask gives (mkstemp's
    0600 would otherwise be kept by the rename: every note wikimem created was private)."""
    # a short name of its own: the note's name plus a suffix would not fit when the note's name is
    # near the 255-byte limit (81 Chinese characters), and such a note could never be written
    fd, tmp = tempfile.mkstemp(prefix=".wikimem-", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        try:
            mode = path.stat().st_mode & 0o7777
        except OSError:
            mode = 0o666 & ~process_umask()
        try:
            os.chmod(tmp, mode)
        except OSError:
            pass
        if before_replace is not None:
            before_replace()
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    try:
        dfd = os.open(path.parent, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(dfd)
    except OSError:
        pass
    finally:
        os.close(dfd)
