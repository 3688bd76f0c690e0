"""The cache folder ``<vault>/.wikimem/``: connections, the writer lock, integrity checks, swaps.

Layout::

    CURRENT           name of the live manifest file (absent: manifest.sqlite)
    manifest*.sqlite  see manifest.py: files, parsed pages, chunks, FTS5, terms, passages, edges, meta
    vectors.sqlite    (embedder key, sha256 of embedded text) -> vector; survives re-chunking,
                      renames and a corrupt manifest, so embeddings are never recomputed needlessly
    vectors.faiss     FAISS IndexIDMap2(IndexFlatIP) over the current chunks' vectors
    lock              held with flock(2) by the one writer; holds its pid (for messages only)

Threads: every thread gets its own SQLite connection (WAL mode), so a search in one thread runs
while a build commits in another and sees the last committed state. A full rebuild is written to a
new manifest file beside the live one and swapped in by rewriting ``CURRENT``, so readers keep the
old results until the new ones are committed; a reader notices the swap and re-opens.

Derived artifacts carry a fingerprint in the manifest (size, mtime and, for the FAISS file, a
checksum verified when it is loaded); a mismatch means it is rebuilt rather than trusted.
"""
from __future__ import annotations

import contextlib
import errno
import fcntl
import logging
import os
import shutil
import sqlite3
import threading
import time
from pathlib import Path
from typing import Any, Iterator

from ... import __version__
from ...errors import DiskFullError, LockError
from ...vault.files import atomic_write_bytes
from ..analysis import ANALYZER
from ..bundle import StoresBase, with_this_thread
from ..manifest import SCHEMA_VERSION
from ..sidefiles import flock_holder, not_damage, open_cache_file, pid_alive, raise_if_not_damage
from .manifest import KeptConnection
from .manifest_sql import SCHEMA_SQL, VECTORS_SQL

log = logging.getLogger(__name__)

DEFAULT_MANIFEST = "manifest.sqlite"
REQUIRED_TABLES = {"meta", "files", "chunks", "passages", "edges", "terms", "lex"}


def recorded_fingerprint(recorded: dict) -> dict:
    """The file fingerprint in an artifact record (without its checksum and format)."""
    return {k: v for k, v in recorded.items() if k not in ("checksum", "format")}


def fingerprint(path: Path) -> dict[str, list[int]]:
    """size and mtime of a file ({} when it is missing)."""
    try:
        st = path.stat()
    except OSError:
        return {}
    return {path.name: [st.st_size, st.st_mtime_ns]}


def _file_checksum(path: Path) -> str:
    """The FAISS file's checksum as ``VectorIndex.save`` records it."""
    from .vectors import checksum
    try:
        with open(path, "rb") as fh:
            return checksum(iter(lambda: fh.read(1 << 20), b""))
    except OSError:
        return ""


def _remove(path: Path) -> None:
    if path.is_dir():
        shutil.rmtree(path, ignore_errors=True)
    else:
        with contextlib.suppress(FileNotFoundError):
            path.unlink()


def _remove_sqlite(path: Path) -> None:
    for suffix in ("", "-wal", "-shm", "-journal"):
        _remove(Path(str(path) + suffix))


RECHECK_S = 1.0  # how often a held connection checks that its file is still the one it opened


def _file_id(path: Path) -> tuple[int, int] | None:
    """(device, inode) of ``path``, or None: a held connection is to this file only while it is."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_dev, st.st_ino


def _faiss_for(folder: Path, manifest_name: str) -> Path:
    """The vector index file that belongs to the manifest named ``manifest_name``."""
    return folder / f"vectors{manifest_name[len('manifest'):-len('.sqlite')]}.faiss"


class CacheDir(StoresBase):
    """The cache folder's lifecycle: paths, per-thread connections, transactions and snapshots,
    the lock between processes, integrity checks, and a rebuild's build-beside-then-swap and sweep.
    What the files hold is the stores' business (``manifest.Manifest`` with ``manifest_sql``,
    ``lexical.Lexical``, ``vectorstore.FaissVectors``); the SQL here is only about connections and
    files (pragmas). The parts both engines share are ``bundle.StoresBase``'s."""

    damage_errors = (sqlite3.DatabaseError,)  # a file that is not (or no longer) a database: rebuilt

    def __init__(self, root: Path, settings):
        folder = Path(root) / ".wikimem"
        self.pointer_path = folder / "CURRENT"
        self.vectors_path = folder / "vectors.sqlite"
        self.lock_path = folder / "lock"
        self._conns: list[tuple[threading.Thread, sqlite3.Connection]] = []  # every thread's, with its thread
        self._target: Path | None = None  # a rebuild's new manifest, while it is being written
        super().__init__(root, settings)

    # -- where things are ----------------------------------------------------------------
    def _live_name(self) -> str:
        """The live manifest's file name, from the pointer file; read again only when the file
        changed (a rebuild replaces it by rename: a new inode), a stat instead of an open a call."""
        try:
            st = os.stat(self.pointer_path)
        except OSError:
            return DEFAULT_MANIFEST
        stamp = (st.st_ino, st.st_mtime_ns, st.st_size)
        kept = getattr(self, "_pointer_kept", None)
        if kept is not None and kept[0] == stamp:
            return kept[1]
        try:
            name = self.pointer_path.read_text(encoding="utf-8").strip()
        except (OSError, UnicodeDecodeError):
            return DEFAULT_MANIFEST
        name = name if name.startswith("manifest") and name.endswith(".sqlite") and "/" not in name else DEFAULT_MANIFEST
        self._pointer_kept = (stamp, name)
        return name

    @property
    def manifest_path(self) -> Path:
        """The manifest this thread reads and writes (during a rebuild, the writer's new one)."""
        if self._target is not None and getattr(self._local, "in_build", False):
            return self._target
        return self.dir / self._live_name()

    @property
    def faiss_path(self) -> Path:
        """The vector index file of the manifest this thread reads (``manifest_path``):
        ``vectors.faiss`` beside ``manifest.sqlite``, ``vectors.<id>.faiss`` beside
        ``manifest.<id>.sqlite``. A rebuild writes its own file beside its new manifest, so
        readers keep the committed pair until the swap (it overwrote the live file before)."""
        return _faiss_for(self.dir, self.manifest_path.name)

    # -- connections ---------------------------------------------------------------------
    def _open(self, path: Path, script: str | None, create: bool) -> sqlite3.Connection:
        """A connection for this thread. Writers (``create``) make the file and its schema;
        readers open what exists, read-only if the folder cannot be written."""
        if create:
            self.ensure_dir()
            fresh = not path.exists() or path.stat().st_size == 0
            db = sqlite3.connect(path, timeout=30, isolation_level=None, check_same_thread=False,
                                 factory=KeptConnection)
            db.execute("PRAGMA journal_mode=WAL")
            db.execute("PRAGMA synchronous=NORMAL")
            if script and fresh:  # an existing file keeps what it has: a missing table is damage to find
                db.executescript(script)
                if script == SCHEMA_SQL:
                    from .lexical import ensure_table
                    ensure_table(db)
        else:
            if not path.exists():
                raise sqlite3.OperationalError(f"no such cache file: {path.name}")
            mode = "rw" if os.access(path.parent, os.W_OK) and os.access(path, os.W_OK) else "ro"
            uri = f"file:{path}?mode={mode}"
            if mode == "ro" and not Path(str(path) + "-shm").exists():
                uri += "&immutable=1"  # a WAL database on a read-only mount: nobody can change it
            db = sqlite3.connect(uri, uri=True, timeout=30, isolation_level=None, check_same_thread=False,
                                 factory=KeptConnection)
        with self._conns_lock:
            self._conns, ended = with_this_thread(self._conns, db)
        for old in ended:
            with contextlib.suppress(sqlite3.Error):
                old.close()
        return db

    def _thread_db(self, attr: str, path: Path, script: str | None, create: bool,
                   check: str | None = None) -> sqlite3.Connection:
        """This thread's connection ``attr`` to ``path``, opened on first use; ``check``: SQL run
        once on a connection just opened (its errors propagate, the connection already held)."""
        held = getattr(self._local, attr, None)
        if held is not None and held[0] == path:
            # still the same file? (rm -rf .wikimem under a watcher or an MCP server would leave this
            # connection on the deleted one) Looked at once a second, and when the writer lock is taken
            now = time.monotonic()
            recheck = getattr(self._local, "recheck", set())
            if now - held[3] < RECHECK_S and attr not in recheck:
                return held[1]
            recheck.discard(attr)
            if _file_id(path) == held[2]:
                setattr(self._local, attr, (path, held[1], held[2], now))
                return held[1]
        if held is not None:  # the live manifest was swapped, or its file deleted or replaced: re-open
            self._forget(held[1])
        db = self._open(path, script, create)
        setattr(self._local, attr, (path, db, _file_id(path), time.monotonic()))
        if check:
            db.execute(check).fetchone()
        return db

    def _forget(self, db: sqlite3.Connection) -> None:
        with self._conns_lock:
            self._conns = [(t, c) for t, c in self._conns if c is not db]
        with contextlib.suppress(sqlite3.Error):
            db.close()

    @property
    def db(self) -> sqlite3.Connection:
        """This thread's connection to the manifest (a writer's creates the schema)."""
        writer = getattr(self._local, "lock_depth", 0) > 0
        path = self.manifest_path
        create = writer  # readers never create or change anything (they may run on a read-only vault)
        return self._thread_db("db", path, SCHEMA_SQL if create else None, create)

    @property
    def vdb(self) -> sqlite3.Connection:
        """This thread's connection to the vector cache, checked when it is opened: a file that is
        not a database, or has no table, is started afresh (damage deeper in the file is found
        when read: ``FaissVectors.cached``). The check reads one row; a ``count(*)`` here scanned
        the whole table on every use (~40 ms a call at 10k notes, twice per watcher edit)."""
        try:
            return self._thread_db("vdb", self.vectors_path, VECTORS_SQL, True, check="SELECT 1 FROM vecs LIMIT 1")
        except sqlite3.DatabaseError as exc:
            raise_if_not_damage(exc)
            log.warning("vector cache is corrupt (%s); starting a new one", exc)
            held = getattr(self._local, "vdb", None)
            if held is not None:
                self._forget(held[1])
                self._local.vdb = None
            _remove_sqlite(self.vectors_path)
            return self._thread_db("vdb", self.vectors_path, VECTORS_SQL, True)

    def close_thread(self) -> None:
        """Close this thread's connections only (others may be mid-query in other threads)."""
        for attr in ("db", "vdb"):
            held = getattr(self._local, attr, None)
            if held is not None:
                self._forget(held[1])
                setattr(self._local, attr, None)

    def close(self) -> None:
        """Close the parts, then every connection of every thread (they re-open on next use). Only
        when no other thread is using this vault (``Vault.close``)."""
        super().close()
        with self._conns_lock:
            conns, self._conns = self._conns, []
        for _thread, db in conns:
            with contextlib.suppress(sqlite3.Error):
                db.close()
        self._local = threading.local()

    @contextlib.contextmanager
    def transaction(self, db: sqlite3.Connection | None = None) -> Iterator[sqlite3.Connection]:
        db = db or self.db
        db.execute("BEGIN IMMEDIATE")
        try:
            yield db
        except BaseException as exc:
            # SQLite rolls a transaction back by itself on some errors (a full disk: SQLITE_FULL);
            # a ROLLBACK then fails with "cannot rollback - no transaction is active", which hid
            # the full disk and was taken for a damaged cache (issue 47 item 15)
            self._rollback_quietly(db)
            if isinstance(exc, sqlite3.Error):
                raise_if_not_damage(exc)
            raise
        try:
            db.execute("COMMIT")
        except sqlite3.Error as exc:
            self._rollback_quietly(db)
            raise_if_not_damage(exc)
            raise

    @staticmethod
    def _rollback_quietly(db: sqlite3.Connection) -> None:
        if db.in_transaction:
            with contextlib.suppress(sqlite3.Error):
                db.execute("ROLLBACK")

    @contextlib.contextmanager
    def snapshot(self) -> Iterator[sqlite3.Connection]:
        """Reads on this thread's connection that all see one committed state (a deferred read
        transaction), however many builds commit meanwhile. Re-entrant."""
        db = self.db
        if db.in_transaction:
            yield db
            return
        db.execute("BEGIN")
        try:
            yield db
        finally:
            with contextlib.suppress(sqlite3.Error):
                db.execute("COMMIT")

    # -- integrity -----------------------------------------------------------------------
    def manifest_problem(self, thorough: bool = False) -> str | None:
        """Why the manifest cannot be trusted (None when it can). ``thorough`` also reads every
        page of the file (``PRAGMA quick_check``), which finds damage in the middle of it."""
        if self.dir.exists() and not self.dir.is_dir():
            return f"{self.dir} is a file, not the cache folder"
        if not self.manifest_path.exists():
            return "no cache yet"
        try:
            meta = self.meta()
            tables = self.manifest_on(self.db).table_names()
            if not REQUIRED_TABLES <= tables:
                return f"manifest is damaged (missing {', '.join(sorted(REQUIRED_TABLES - tables))})"
            if thorough:
                rows = self.db.execute("PRAGMA quick_check").fetchall()
                if rows != [("ok",)]:
                    return f"manifest is corrupt ({rows[0][0]})"
        except sqlite3.OperationalError as exc:
            if not_damage(exc):
                raise DiskFullError(f"the cache cannot be read or written now ({exc}); it is not damaged, and "
                                    "nothing was rebuilt: free some space (or fix the disk) and run again") from None
            return f"manifest is corrupt ({exc})"
        except (sqlite3.DatabaseError, ValueError, TypeError) as exc:  # undecodable or non-text meta values
            return f"manifest is corrupt ({exc})"
        if not meta:
            return "cache is empty"
        if not isinstance(meta.get("artifacts", {}), dict) or not isinstance(meta.get("artifacts", {}).get("faiss", {}), dict):
            return "manifest is corrupt (its artifacts record is not a mapping)"
        if meta.get("schema_version") != SCHEMA_VERSION:
            return f"cache schema {meta.get('schema_version')} differs from {SCHEMA_VERSION}"
        if meta.get("analyzer") != ANALYZER:
            return f"lexical analyzer {meta.get('analyzer')} differs from {ANALYZER}"
        return None

    def artifact_problems(self, meta: dict[str, Any], thorough: bool = False) -> dict[str, str]:
        """Derived files that differ from what the build recorded. ``thorough`` also checks the
        FAISS file's checksum (bytes changed behind an unchanged size and mtime)."""
        from .vectors import FILE_FORMAT
        stored = meta.get("artifacts", {})
        problems = {}
        want = stored.get("faiss")
        if want is not None and want.get("format") != FILE_FORMAT:
            problems["faiss"] = "written by an older wikimem in another format"
        elif want is not None and fingerprint(self.faiss_path) != recorded_fingerprint(want):
            problems["faiss"] = "changed or damaged since it was written"
        elif want is not None and thorough and want.get("checksum") and _file_checksum(self.faiss_path) != want["checksum"]:
            problems["faiss"] = "damaged (its checksum differs from what was written)"
        return problems

    def record_artifact(self, name: str, path: Path, db: sqlite3.Connection | None = None,
                        checksum: str | None = None, format: int | None = None) -> None:
        artifacts = self.meta(db).get("artifacts", {})
        artifacts[name] = fingerprint(path)
        if checksum:
            artifacts[name]["checksum"] = checksum
        if format is not None:
            artifacts[name]["format"] = format
        self.set_meta(db, artifacts=artifacts)

    def new_manifest(self, embedder_key: str | None, db: sqlite3.Connection | None = None) -> None:
        with self.transaction(db):
            self.set_meta(db, schema_version=SCHEMA_VERSION, analyzer=ANALYZER, wikimem_version=__version__,
                          embedder=embedder_key, artifacts={}, dirty=False, created=time.time())

    def twin_notice(self) -> str | None:
        return None  # a folder of its own: no other vault id beside it

    def size_bytes(self) -> int:
        return sum(p.stat().st_size for p in self.dir.rglob("*") if p.is_file()) if self.dir.is_dir() else 0

    # -- build beside, then swap -------------------------------------------------------------
    def begin_replacement(self) -> None:
        """Start writing a new manifest beside the live one (this thread only); readers keep the
        live one until ``commit_replacement``. The FAISS file is rebuilt from the vector cache."""
        self.ensure_dir()
        name = f"manifest.{os.getpid()}.{time.time_ns()}.sqlite"
        self._target = self.dir / name
        _remove_sqlite(self._target)
        self._local.in_build = True
        held = getattr(self._local, "db", None)
        if held is not None:
            self._forget(held[1])
            self._local.db = None

    def commit_replacement(self) -> None:
        """Make the new manifest the live one: checkpointed, closed, then named in CURRENT."""
        target, self._target = self._target, None
        if target is None:
            return
        held = getattr(self._local, "db", None)
        if held is not None:
            with contextlib.suppress(sqlite3.Error):
                held[1].execute("PRAGMA wal_checkpoint(TRUNCATE)")
            self._forget(held[1])
            self._local.db = None
        old = self.dir / self._live_name()
        atomic_write_bytes(self.pointer_path, target.name.encode("utf-8"))
        if old != target:  # open readers keep their file handles; new ones open the new file
            _remove_sqlite(old)
            _remove(_faiss_for(self.dir, old.name))  # read whole into memory by its readers
        self._sweep(keep=target.name)

    def abandon_replacement(self) -> None:
        target, self._target = self._target, None
        if target is not None:
            held = getattr(self._local, "db", None)
            if held is not None and held[0] == target:
                self._forget(held[1])
                self._local.db = None
            _remove_sqlite(target)
            _remove(_faiss_for(self.dir, target.name))

    def _sweep(self, keep: str) -> None:
        """Remove manifests (and their vector index files) left by rebuilds that died before their
        swap. Called by the writer only: while it holds the lock no other rebuild is under way."""
        for path in self.dir.glob("manifest*.sqlite"):
            if path.name != keep:
                _remove_sqlite(path)
        faiss = _faiss_for(self.dir, keep).name
        for path in [*self.dir.glob("vectors*.faiss"), *self.dir.glob("vectors*.faiss.*.tmp")]:
            if path.name != faiss:
                _remove(path)

    def sweep_orphans(self) -> None:
        """``_sweep`` around the live manifest (a build calls it under the writer lock)."""
        if self.dir.is_dir() and self._target is None:
            self._sweep(keep=self._live_name())

    def reset_vector_cache(self) -> None:
        for db_attr in ("vdb",):
            held = getattr(self._local, db_attr, None)
            if held is not None:
                self._forget(held[1])
                setattr(self._local, db_attr, None)
        _remove_sqlite(self.vectors_path)

    # -- the lock between processes (``bundle.StoresBase.writer_lock`` is the frame) ---------------
    @contextlib.contextmanager
    def _process_lock(self, deadline: float) -> Iterator[None]:
        """The ``flock`` on ``lock``, until ``deadline`` (time.monotonic): the kernel releases it
        when the holder dies, so a dead writer never blocks and pid reuse cannot keep a vault
        locked; the pid written inside is only for messages."""
        self._local.recheck = {"db", "vdb"}  # a writer starts from the files as they are now
        # a regular file of .wikimem: a folder, a symlink (to a note: its pid was written over the note),
        # a FIFO or a hard link there is replaced (sidefiles.open_cache_file)
        fd = open_cache_file(self.lock_path, os.O_RDWR | os.O_CREAT)
        try:
            while True:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except OSError as exc:
                    if exc.errno not in (errno.EAGAIN, errno.EACCES, errno.EWOULDBLOCK):
                        raise
                    if time.monotonic() >= deadline:
                        holder = os.pread(fd, 32, 0).decode("ascii", "replace").strip() or "unknown"
                        raise LockError(f"another wikimem process (pid {holder}) is updating {self.dir}; "
                                        "try again when it finishes") from None
                    time.sleep(0.05)
            os.ftruncate(fd, 0)
            os.pwrite(fd, str(os.getpid()).encode("ascii"), 0)
        except BaseException:
            os.close(fd)  # not ours: the holder's pid stays in the file
            raise
        try:
            yield
        finally:
            with contextlib.suppress(OSError):
                os.ftruncate(fd, 0)
            os.close(fd)  # closing releases the flock

    def lock_holder(self) -> int | None:
        """The pid of a live writer, or None (used by status and doctor)."""
        return flock_holder(self.lock_path)

    def stale_lock(self) -> str | None:
        """The pid written in the lock file by a writer that died holding it (doctor), or None."""
        try:
            text = self.lock_path.read_text(encoding="ascii", errors="replace").strip()
        except OSError:
            return None
        return text if text.isdigit() and not pid_alive(text) else None
