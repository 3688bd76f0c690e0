"""The cache folder ``<vault>/.wikimem/``: manifest, vector cache, writer lock, integrity checks.

Layout::

    manifest.sqlite   schema/wikimem/embedder versions, files, chunks, the FTS5 lexical index,
                      term document frequencies, link-graph edges, artifact fingerprints
    vectors.sqlite    (embedder key, sha256 of embedded text) -> vector; survives re-chunking,
                      renames and a corrupt manifest, so embeddings are never recomputed needlessly
    vectors.faiss     FAISS IndexIDMap2(IndexFlatIP) over the current chunks' vectors
    lock              pid of the one writer

Every derived artifact's fingerprint (size + mtime_ns of each file) is stored in the manifest
when it is committed; a mismatch on open means it was truncated, overwritten or half-written, and
it is rebuilt rather than trusted.
"""
from __future__ import annotations

import contextlib
import errno
import json
import logging
import os
import shutil
import sqlite3
import time
from pathlib import Path
from typing import Any, Iterator, Sequence

from .. import __version__
from ..errors import LockError
from .analysis import ANALYZER

log = logging.getLogger(__name__)

SCHEMA_VERSION = 7

_MANIFEST_SQL = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS files (
    path TEXT PRIMARY KEY, size INTEGER NOT NULL, mtime_ns INTEGER NOT NULL, sha256 TEXT NOT NULL,
    title TEXT, type TEXT, status TEXT, aliases TEXT, links TEXT, tags TEXT, errors TEXT, note INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS chunks (
    vid INTEGER PRIMARY KEY, id TEXT NOT NULL UNIQUE, path TEXT NOT NULL, ord INTEGER NOT NULL,
    embed_hash TEXT NOT NULL, title TEXT, heading_path TEXT, text TEXT, start INTEGER, "end" INTEGER,
    links TEXT, tags TEXT, type TEXT, status TEXT, created TEXT, updated TEXT, blocks TEXT,
    speakers TEXT, date TEXT, context TEXT, aliases TEXT
);
CREATE INDEX IF NOT EXISTS chunks_path ON chunks(path);
CREATE TABLE IF NOT EXISTS passages (pid INTEGER PRIMARY KEY, vid INTEGER NOT NULL, ord INTEGER NOT NULL,
                                     embed_hash TEXT NOT NULL, text TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS passages_vid ON passages(vid);
CREATE TABLE IF NOT EXISTS edges (src TEXT NOT NULL, dst TEXT NOT NULL, type TEXT NOT NULL, weight REAL NOT NULL,
                                  PRIMARY KEY (src, dst, type)) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS edges_dst ON edges(dst);
CREATE TABLE IF NOT EXISTS terms (term TEXT PRIMARY KEY, df INTEGER NOT NULL) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS chunks_hash ON chunks(embed_hash);
CREATE INDEX IF NOT EXISTS chunks_status ON chunks(status);
"""

_VECTORS_SQL = """
CREATE TABLE IF NOT EXISTS vecs (embedder TEXT NOT NULL, hash TEXT NOT NULL, vec BLOB NOT NULL,
                                 PRIMARY KEY (embedder, hash)) WITHOUT ROWID;
"""


def _pid_alive(pid: int) -> bool:
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except OSError as exc:
        return exc.errno == errno.EPERM
    return True


def fingerprint(path: Path) -> dict[str, list[int]]:
    """size and mtime of a file ({} when it is missing)."""
    if not path.exists():
        return {}
    st = path.stat()
    return {path.name: [st.st_size, st.st_mtime_ns]}


def select_in(db: sqlite3.Connection, sql: str, values: Sequence, *args: Any) -> Iterator[tuple]:
    """Rows of ``sql`` (which holds one ``{marks}`` placeholder list) for ``values``, asked in
    batches of 500 so the statement stays under SQLite's variable limit; ``args`` come first."""
    values = list(values)
    for start in range(0, len(values), 500):
        part = values[start:start + 500]
        yield from db.execute(sql.format(marks=",".join("?" * len(part))), [*args, *part])


class CacheDir:
    """Paths and low-level access; the build and search modules hold the logic."""

    def __init__(self, root: Path):
        self.dir = root / ".wikimem"
        self.manifest_path = self.dir / "manifest.sqlite"
        self.vectors_path = self.dir / "vectors.sqlite"
        self.faiss_path = self.dir / "vectors.faiss"
        self.lock_path = self.dir / "lock"
        self._db: sqlite3.Connection | None = None
        self._vdb: sqlite3.Connection | None = None

    # -- connections ---------------------------------------------------------------------
    @staticmethod
    def _connect(path: Path, script: str) -> sqlite3.Connection:
        db = sqlite3.connect(path, timeout=30, isolation_level=None, check_same_thread=False)
        db.execute("PRAGMA journal_mode=WAL")
        db.execute("PRAGMA synchronous=NORMAL")
        db.executescript(script)
        return db

    @property
    def db(self) -> sqlite3.Connection:
        if self._db is None:
            self.dir.mkdir(parents=True, exist_ok=True)
            self._db = self._connect(self.manifest_path, _MANIFEST_SQL)
            from .lexical import ensure_table
            ensure_table(self._db)
        return self._db

    @property
    def vdb(self) -> sqlite3.Connection:
        if self._vdb is None:
            self.dir.mkdir(parents=True, exist_ok=True)
            try:
                self._vdb = self._connect(self.vectors_path, _VECTORS_SQL)
                self._vdb.execute("SELECT count(*) FROM vecs LIMIT 1").fetchone()
            except sqlite3.DatabaseError as exc:
                log.warning("vector cache is corrupt (%s); starting a new one", exc)
                self._close_vdb()
                self._remove(self.vectors_path)
                self._vdb = self._connect(self.vectors_path, _VECTORS_SQL)
        return self._vdb

    def _close_vdb(self) -> None:
        if self._vdb is not None:
            self._vdb.close()
            self._vdb = None

    def close(self) -> None:
        if self._db is not None:
            self._db.close()
            self._db = None
        self._close_vdb()

    @contextlib.contextmanager
    def transaction(self, db: sqlite3.Connection | None = None) -> Iterator[sqlite3.Connection]:
        db = db or self.db
        db.execute("BEGIN IMMEDIATE")
        try:
            yield db
        except BaseException:
            db.execute("ROLLBACK")
            raise
        db.execute("COMMIT")

    # -- meta ----------------------------------------------------------------------------
    def meta(self) -> dict[str, Any]:
        return {k: json.loads(v) for k, v in self.db.execute("SELECT key, value FROM meta")}

    def set_meta(self, db: sqlite3.Connection | None = None, **values: Any) -> None:
        (db or self.db).executemany("INSERT OR REPLACE INTO meta(key, value) VALUES (?, ?)",
                                    [(k, json.dumps(v)) for k, v in values.items()])

    # -- integrity -----------------------------------------------------------------------
    def manifest_problem(self) -> str | None:
        """Why the manifest cannot be trusted (None when it can)."""
        if not self.manifest_path.exists():
            return "no cache yet"
        try:
            meta = self.meta()
        except (sqlite3.DatabaseError, ValueError) as exc:  # ValueError: undecodable meta values
            return f"manifest is corrupt ({exc})"
        if not meta:
            return "cache is empty"
        if meta.get("schema_version") != SCHEMA_VERSION:
            return f"cache schema {meta.get('schema_version')} differs from {SCHEMA_VERSION}"
        if meta.get("analyzer") != ANALYZER:
            return f"lexical analyzer {meta.get('analyzer')} differs from {ANALYZER}"
        return None

    def artifact_problems(self, meta: dict[str, Any]) -> dict[str, str]:
        stored = meta.get("artifacts", {})
        problems = {}
        want = stored.get("faiss")
        if want is not None and fingerprint(self.faiss_path) != want:
            problems["faiss"] = "changed or damaged since it was written"
        return problems

    def record_artifact(self, name: str, path: Path, db: sqlite3.Connection | None = None) -> None:
        artifacts = (self.meta() if db is None else {k: json.loads(v) for k, v in db.execute(
            "SELECT key, value FROM meta WHERE key='artifacts'")}).get("artifacts", {})
        artifacts[name] = fingerprint(path)
        self.set_meta(db, artifacts=artifacts)

    def reset(self, keep_vectors: bool = True) -> None:
        """Delete every derived artifact (the vector cache survives unless asked)."""
        self.close()
        for path in (self.manifest_path, self.faiss_path):
            self._remove(path)
        for suffix in ("-wal", "-shm"):
            self._remove(Path(str(self.manifest_path) + suffix))
        if not keep_vectors:
            for suffix in ("", "-wal", "-shm"):
                self._remove(Path(str(self.vectors_path) + suffix))

    @staticmethod
    def _remove(path: Path) -> None:
        if path.is_dir():
            shutil.rmtree(path, ignore_errors=True)
        else:
            with contextlib.suppress(FileNotFoundError):
                path.unlink()

    def new_manifest(self, embedder_key: str | None) -> None:
        with self.transaction():
            self.set_meta(schema_version=SCHEMA_VERSION, analyzer=ANALYZER, wikimem_version=__version__, embedder=embedder_key,
                          artifacts={}, dirty=False, created=time.time())

    def size_bytes(self) -> int:
        return sum(p.stat().st_size for p in self.dir.rglob("*") if p.is_file()) if self.dir.exists() else 0

    # -- the writer lock -----------------------------------------------------------------
    @contextlib.contextmanager
    def writer_lock(self, wait: float = 0.0) -> Iterator[None]:
        """One writer at a time. A lock left by a dead process is taken over; a live one makes
        us wait up to ``wait`` seconds and then fail with a clear LockError."""
        self.dir.mkdir(parents=True, exist_ok=True)
        deadline = time.monotonic() + wait
        while True:
            try:
                fd = os.open(self.lock_path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
            except FileExistsError:
                try:
                    pid = int(self.lock_path.read_text().strip() or 0)
                except (OSError, ValueError):
                    pid = 0
                if not _pid_alive(pid):
                    log.info("taking over a stale lock left by process %s", pid)
                    with contextlib.suppress(FileNotFoundError):
                        self.lock_path.unlink()
                    continue
                if time.monotonic() >= deadline:
                    raise LockError(f"another wikimem process (pid {pid}) is updating {self.dir}; "
                                    "try again when it finishes") from None
                time.sleep(0.1)
                continue
            with os.fdopen(fd, "w") as fh:
                fh.write(str(os.getpid()))
            break
        try:
            yield
        finally:
            with contextlib.suppress(FileNotFoundError):
                self.lock_path.unlink()
