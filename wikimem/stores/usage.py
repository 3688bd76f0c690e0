"""How often each page is used: returned by a search, opened, cited by an answer. Kept in the cache.

Counts live in ``.wikimem/usage.sqlite``, never in notes (a note's bytes change only when someone
writes it) and beside the manifest rather than in it, so a rebuild keeps them. They are a
measurement, not a result: nothing ranks by them unless asked (``prime``'s "used most" layer
reads them), and deleting the file loses counts, never a page.

Counting must cost a search nothing it would notice: counts gather in memory and are written in one
transaction at most every ``FLUSH_S`` seconds (and when the vault closes). A crash loses the last few
seconds of counts; a read-only vault counts nothing; a damaged file is replaced.
"""
from __future__ import annotations

import contextlib
import logging
import sqlite3
import threading
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterable

log = logging.getLogger(__name__)

KINDS = ("returned", "opened", "cited")
FLUSH_S = 5.0
_SCHEMA = """CREATE TABLE IF NOT EXISTS uses (path TEXT PRIMARY KEY, returned INTEGER NOT NULL DEFAULT 0,
opened INTEGER NOT NULL DEFAULT 0, cited INTEGER NOT NULL DEFAULT 0, last REAL NOT NULL DEFAULT 0) WITHOUT ROWID"""


@dataclass(frozen=True)
class Use:
    path: str
    returned: int = 0
    opened: int = 0
    cited: int = 0
    last: float = 0.0  # unix time of the last use

    @property
    def weight(self) -> int:
        """Opening or citing a page says more than seeing it in a list of results."""
        return self.returned + 3 * (self.opened + self.cited)

    def to_dict(self) -> dict[str, Any]:
        return {"path": self.path, "returned": self.returned, "opened": self.opened, "cited": self.cited,
                "last": time.strftime("%Y-%m-%dT%H:%M:%S", time.localtime(self.last)) if self.last else None}


class Usage:
    def __init__(self, path: Path, writable: Callable[[], bool], clock: Callable[[], float] = time.time):
        self.path = path
        self._writable = writable
        self._clock = clock
        self._pending: Counter[tuple[str, str]] = Counter()
        self._last: dict[str, float] = {}
        self._lock = threading.Lock()
        self._flushed = clock()

    def count(self, kind: str, paths: Iterable[str]) -> None:
        """One use of ``kind`` for each page of ``paths`` (a page named twice counts once)."""
        if kind not in KINDS:
            raise ValueError(f"unknown use {kind!r}")
        now = self._clock()
        with self._lock:
            for path in dict.fromkeys(paths):
                self._pending[(path, kind)] += 1
                self._last[path] = now
            due = now - self._flushed >= FLUSH_S
        if due:
            self.flush()

    def flush(self) -> None:
        with self._lock:
            pending, last = self._pending, self._last
            self._pending, self._last = Counter(), {}
            self._flushed = self._clock()
        if not pending or not self._writable():
            return
        rows: dict[str, list[int]] = {}
        for (path, kind), n in pending.items():
            rows.setdefault(path, [0, 0, 0])[KINDS.index(kind)] += n
        try:
            with contextlib.closing(self._connect()) as db, db:
                db.executemany(
                    "INSERT INTO uses (path, returned, opened, cited, last) VALUES (?,?,?,?,?) ON CONFLICT(path) DO "
                    "UPDATE SET returned=returned+excluded.returned, opened=opened+excluded.opened, "
                    "cited=cited+excluded.cited, last=max(last, excluded.last)",
                    [(p, *n, last.get(p, 0.0)) for p, n in rows.items()])
        except (sqlite3.Error, OSError) as exc:  # counts are not worth a failed search
            log.debug("use counts not written: %s", exc)
            if isinstance(exc, sqlite3.DatabaseError) and ("malformed" in str(exc) or "not a database" in str(exc)):
                self._replace()

    def counts(self, paths: Iterable[str] | None = None) -> dict[str, Use]:
        """Every counted page's uses (those of ``paths`` only), with what is not written yet."""
        self.flush()
        if not self.path.exists():
            return {}
        try:
            with contextlib.closing(sqlite3.connect(f"file:{self.path}?mode=ro", uri=True, timeout=1.0)) as db:
                rows = db.execute("SELECT path, returned, opened, cited, last FROM uses").fetchall()
        except sqlite3.Error as exc:
            log.debug("use counts unreadable: %s", exc)
            return {}
        wanted = None if paths is None else set(paths)
        return {r[0]: Use(*r) for r in rows if wanted is None or r[0] in wanted}

    def most_used(self, n: int, exclude: Iterable[str] = ()) -> list[Use]:
        """The ``n`` pages used most (by ``Use.weight``, then most recently), leaving ``exclude`` out."""
        skip = set(exclude)
        found = [u for u in self.counts().values() if u.path not in skip and u.weight > 0]
        found.sort(key=lambda u: (-u.weight, -u.last, u.path))
        return found[:n]

    def _connect(self) -> sqlite3.Connection:
        if not self.path.parent.is_dir():  # no cache folder (yet): nothing was searched to count
            raise OSError(f"{self.path.parent} does not exist")
        db = sqlite3.connect(self.path, timeout=1.0)
        db.execute("PRAGMA journal_mode=WAL")
        db.execute("PRAGMA synchronous=NORMAL")
        db.execute(_SCHEMA)
        return db

    def _replace(self) -> None:
        for suffix in ("", "-wal", "-shm"):
            with contextlib.suppress(OSError):
                Path(str(self.path) + suffix).unlink()
