"""The error tree. The library raises these; only ``cli.main`` turns them into exit codes."""
from __future__ import annotations


class WikimemError(Exception):
    """Base class: a problem the user can act on (the message says how)."""

    exit_code = 1


class VaultError(WikimemError):
    """The vault folder is missing, unreadable or not a folder."""


class NoteReadError(WikimemError):
    """A single note could not be read (binary, too large, not UTF-8, unreadable)."""

    def __init__(self, path: str, reason: str, kind: str):
        super().__init__(f"{path}: {reason}")
        self.path = path
        self.reason = reason
        self.kind = kind


class PathEscapeError(WikimemError):
    """A path given by a user or an agent points outside the vault: a request that cannot be run as
    given, so a usage error's exit code (2), not a finding's (1)."""

    exit_code = 2


class ReadOnlyError(WikimemError):
    """A write was asked for a file wikimem must never modify (raw/ sources)."""


class ConflictError(WikimemError):
    """A file changed on disk after it was read; the write was refused so nothing is lost."""


class ConfigError(WikimemError):
    """Bad configuration (file, environment or flags)."""

    exit_code = 2


class EmbedderError(WikimemError):
    """The configured embedder cannot run (missing model, server down, wrong dimension...)."""


class LockError(WikimemError):
    """Another wikimem process is writing the cache."""


class IndexStaleError(WikimemError):
    """The cache is missing, corrupt or from another version and must be rebuilt."""


class UsageError(WikimemError):
    """A request that cannot be run as given (empty query, bad date, unknown mode)."""

    exit_code = 2


class PageNotFoundError(WikimemError):
    """A page the user named is not in the vault."""


class AmbiguousPageError(UsageError):
    """A name (file name, title or alias) that fits several pages; the message lists them."""

    def __init__(self, message: str, candidates: tuple[str, ...] = ()):
        super().__init__(message)
        self.candidates = candidates


class DiskFullError(WikimemError):
    """The disk (or the cache's file system) is full or failing: the cache is not damaged and must
    not be deleted or rebuilt because of it (a rebuild would need more room still)."""


# What to do about the operating system errors a user can fix (CLI, MCP and serve say the same).
_OS_HINTS = {
    "ENOSPC": "the disk is full: free some space and run the command again (the vault is untouched; the cache "
              "in .wikimem/ can be deleted and rebuilt)",
    "EROFS": "the file system is read-only: run wikimem where the vault can be written, or use commands that "
             "only read (search, status, lint) once the cache exists",
    "EACCES": "permission denied: run as a user who can write the vault",
    "EPERM": "permission denied: run as a user who can write the vault",
    "EDQUOT": "the disk quota is exceeded: free some space and run the command again",
}


def os_hint(exc: OSError) -> str | None:
    """The hint for ``exc``'s errno, or None."""
    import errno
    return next((hint for name, hint in _OS_HINTS.items() if getattr(errno, name, None) == exc.errno), None)


def disk_trouble(exc: BaseException) -> str | None:
    """``"full"`` or ``"failing"`` when ``exc`` (an OSError, or a database driver's error, which says
    it only in words: SQLITE_FULL, SQLITE_IOERR) means the disk is full or failing, else None. The one
    test both the stores (a full disk is not a damaged cache) and the messages below use."""
    import errno
    if isinstance(exc, OSError) and exc.errno in (errno.ENOSPC, errno.EDQUOT):
        return "full"
    if isinstance(exc, OSError) and exc.errno == errno.EIO:
        return "failing"
    text = str(exc).lower()
    if "disk is full" in text or "no space left" in text:
        return "full"
    if "disk i/o error" in text:
        return "failing"
    return None


def describe_os_error(exc: BaseException) -> str:
    """An operating system or SQLite error in words a person (or an agent) can act on, never only
    ``[Errno 28] No space left on device``: what happened, on which file, and what to do."""
    import sqlite3
    if isinstance(exc, OSError):
        where = f" ({exc.filename})" if exc.filename else ""
        hint = os_hint(exc)
        what = exc.strerror or str(exc)
        return f"{what}{where}: {hint}" if hint else f"{what}{where}"
    if isinstance(exc, sqlite3.Error):
        text = str(exc).lower()
        trouble = disk_trouble(exc)
        if trouble == "full":
            return f"the cache cannot be written: {_OS_HINTS['ENOSPC']}"
        if "readonly" in text or "read-only" in text:
            return ("the cache in .wikimem/ is read-only here: searches still answer from it; to write, run "
                    "wikimem as a user who can write .wikimem/ (or on a writable copy of the vault)")
        if trouble == "failing":
            return "the disk failed while reading or writing the cache: check the disk, then run the command again"
    return f"{type(exc).__name__}: {exc}"


class DatabaseUnavailable(WikimemError):
    """The database a setting names cannot be reached (or refused us); says which, never the password.
    (Here, not in stores.pg, so the server maps it to 503 without importing the stores.)"""

    exit_code = 2
    lasting = False  # True: waiting does not mend it (a grant, a newer wikimem, a replica): no Retry-After
