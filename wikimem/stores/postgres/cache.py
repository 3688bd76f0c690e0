"""One vault's stores on PostgreSQL (the ``protocol.Stores`` of this engine), in a vault's schema.

Chosen by settings (``store = "postgres"``, ``database_url``; ``open_stores``). ``PgCache`` is made
of parts, as the local ``Cache`` is, and shares none of that one's code (only ``bundle.StoresBase``,
above both): ``manifest`` (``manifest.PgManifest``: its own SQL), ``reading()`` / ``writing()``,
``vector_store`` (``PgVectors``: pgvector, with the database's own embedding cache), ``runtime``,
``usage`` and the side files (kept per machine in ``.wikimem/``), the embedder. Its own lifecycle:

- connections: one per thread (autocommit; a snapshot is a REPEATABLE READ READ ONLY transaction,
  a write a transaction), on the vault's schema (``tables``: named from ``vault_id``, by default
  the vault folder's name, so every machine holding the vault finds the same tables);
- the writer lock: a PostgreSQL advisory lock on the schema, held by a connection of its own, so
  one writer at a time across processes and machines, released by the server when its holder dies;
- a full rebuild writes a new schema beside the live one and swaps the two by renaming in one
  transaction: readers keep the old results until then;
- integrity: a schema whose version, analyzer or embedder differs is rebuilt, never trusted; the
  database that cannot be reached is ``pg.DatabaseUnavailable`` (exit 2, the server named, never
  the password).
"""
from __future__ import annotations

import contextlib
import json
import logging
import os
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterator

import numpy as np

from ... import __version__
from ...errors import LockError
from .. import pg, pg_grants
from ..analysis import ANALYZER
from ..bundle import StoresBase, with_this_thread
from ..manifest import SCHEMA_VERSION
from ..shared_embeddings import SharedEmbeddings
from ..vectorstore import VectorsBase, id_signature
from . import tables as pg_tables
from .manifest import PgDB, PgManifest
from .rows import SnapshotRows
from .vectors import PgVectorIndex, create_table

if TYPE_CHECKING:
    from ..config import Settings

log = logging.getLogger(__name__)

REQUIRED_TABLES = {"meta", "files", "chunks", "passages", "edges", "terms", "lex"}


class PgVectors(VectorsBase):
    """The vector store of a ``PgCache`` (``protocol.VectorsPart``) over pgvector. Vectors are
    committed as they are added (no file, no delta); the vector cache is the database's embedding
    cache (``shared_embeddings``), so every vault and machine on it shares what was embedded."""

    def __init__(self, cache: "PgCache"):
        super().__init__(cache, SharedEmbeddings(cache.url))
        self.kind = cache.settings.pg_vector_type
        self._indexes: dict[tuple, PgVectorIndex] = {}

    def _make_index(self, dim: int) -> PgVectorIndex:
        """One index object per schema and width for the process: what is derived from the vectors
        (the language axis, semantic neighbours) is kept by its ``serial`` until ``vectors_sig``
        changes; a new object per search re-read a sample of the vault every time (~200 ms)."""
        key = (self.cache._schema_now(), dim, self.kind)
        index = self._indexes.get(key)
        if index is None:
            index = self._indexes[key] = PgVectorIndex(self.cache.connection, dim, self.kind, create=False,
                                                       version_of=lambda: self.cache.meta().get("vectors_sig"),
                                                       memo=self.cache.memo, recorded=self._recorded_counts,
                                                       content_key=lambda: self._content_key(key[0]))
        return index

    def _content_key(self, schema: str) -> tuple | None:
        """What a vector read here is kept under (``ContentCache``): this database and vault, and
        the embedder that wrote the vectors. The database and vault are in it although an id names
        its text: two embedders under one name (a test's, an Ollama model pulled again) would
        otherwise lend one vault's vectors to another."""
        embedder = self.cache.meta().get("embedder")
        return (self.cache.url, schema, embedder) if embedder else None

    def _recorded_counts(self) -> tuple[int, int] | None:
        """(rows, held rows) as the last build recorded them, for a search (inside a snapshot):
        what it sees of the vectors is what that build committed, as a local reader's loaded
        index is. None outside a snapshot (a writer counts the rows)."""
        if getattr(self.cache._pg_local, "memo", None) is None:
            return None
        meta = self.cache.meta()
        rows, held = meta.get("vectors"), meta.get("passages_held")
        return (int(rows), int(held)) if isinstance(rows, int) and isinstance(held, int) else None

    def committed(self, meta: dict) -> dict | None:
        dim = meta.get("vectors_dim")
        return {"dim": dim, "sig": meta.get("vectors_sig"), "embedder": meta.get("embedder")} if dim else None

    def committed_current(self, meta: dict) -> bool:
        return self.committed(meta) is not None

    def load(self, dim: int, meta: dict | None = None):
        """The vectors as committed, or None before a build saved any (``vectors_dim`` in meta)."""
        meta = meta if meta is not None else self.cache.meta()
        if meta.get("vectors_dim") != dim:
            return None
        return self._make_index(dim)

    def fresh(self, dim: int):
        conn = self.cache.connection()
        kept = pg_grants.read(conn, self.cache._schema_now())  # a reader's SELECT on vecs survives
        conn.execute("DROP TABLE IF EXISTS vecs")
        create_table(conn, dim, self.kind)
        pg_grants.apply(conn, kept, self.cache._schema_now(), tables=("vecs", "vecs_searched", "vecs_held"))
        self._indexes.clear()  # a new table: what was derived from the old one goes
        return self._make_index(dim)

    def adopted(self):
        return None

    def adopt(self, index, meta: dict) -> None:
        pass

    def forget(self) -> None:
        pass

    def save(self, index, key: str, wanted: int, held: int, dirty: bool | None = None) -> None:
        ids, held_total = index.census()  # one read for the counts and the signature below
        total = len(ids)
        index.ensure_index(total=total)
        with self.cache.transaction() as db:
            values = {"vectors": total, "vectors_wanted": wanted, "vectors_sig": id_signature(ids),
                      "embedder": key, "vectors_delta": None, "vectors_dim": index.dim}
            if dirty is not None:
                values.update(dirty=dirty, last_build=time.time())
            values.update(passages_held=held_total, passages_wanted=held,
                          vectors_pending=total - held_total != wanted - held,
                          passages_pending=held_total != held)
            self.cache.set_meta(db, **values)

    def cached(self, key: str, dim: int, hashes: list[str]) -> dict[str, np.ndarray]:
        found = self.shared.get(key, dim, hashes)
        self.taken_local += len(found)
        return found

    def remember(self, key: str, hashes, vectors: np.ndarray) -> None:
        self.shared.put(key, hashes, vectors)


class PgCache(StoresBase):
    """The stores of the vault at ``root`` on the database ``settings.database_url`` (see the
    module docstring)."""

    manifest_class = PgManifest

    @property
    def damage_errors(self) -> tuple[type[BaseException], ...]:  # type: ignore[override]
        """What rows not as wikimem wrote them raise (a bad restore, a hand edit, a table dropped
        under a running process): a stored value that does not decode, or that the server cannot
        cast, a table or column that is not there. The build and a search then rebuild, once."""
        driver = pg.psycopg()
        return (json.JSONDecodeError, driver.DataError, driver.errors.UndefinedTable, driver.errors.UndefinedColumn)

    def __init__(self, root: Path, settings: "Settings"):
        self.url = settings.database_url
        self.where = pg.server_name(self.url)
        self.vault_id = settings.vault_id or Path(root).name
        self.schema = pg_tables.schema_name(self.vault_id)
        self._pg_local = threading.local()
        self._pg_conns: list[tuple[threading.Thread, Any]] = []  # every thread's connection, with its thread
        self._next: str | None = None  # a rebuild's new schema, while it is written
        self._lock_session = None  # the writer lock's own connection (``_process_lock``)
        super().__init__(root, settings)

    def _vector_store(self) -> "PgVectors":
        return PgVectors(self)

    @property
    def location(self) -> str:
        return f"PostgreSQL {self.where}, schema {self.schema} (vault id {self.vault_id!r})"

    # -- connections -----------------------------------------------------------------------------
    def _schema_now(self) -> str:
        if self._next is not None and getattr(self._local, "in_build", False):
            return self._next
        return self.schema

    def connection(self):
        """This thread's psycopg connection, on the schema this thread reads and writes."""
        held = getattr(self._pg_local, "conn", None)
        schema = self._schema_now()
        if held is not None and not getattr(self._local, "lock_depth", 0) and pg.gone(held[1]):
            # the server ended it while idle (a restart): a new one, not an error. Not inside a write:
            # the writer lock's session may have ended too, so a write goes on on no new connection
            self.close_thread()
            held = None
        if held is not None and not held[1].closed and not held[1].broken:
            if held[0] != schema and not held[1].info.transaction_status:
                pg_tables.use(held[1], schema)
                self._pg_local.conn = (schema, held[1])
            return self._pg_local.conn[1]
        conn = pg.connect(self.url, "the wikimem database")
        conn.prepare_threshold = None  # a prepared plan ignores later SETs (bench_pg_scale found it)
        try:
            with pg.lost_is_unavailable(self.url, "the wikimem database"):  # a grant missing: named
                pg_tables.refuse_newer(conn, schema)  # read or written: a newer wikimem's tables are left alone
                pg_grants.check_schema(conn, schema)  # a role not granted the schema is told, not led to build it
            pg_tables.ensure_pgvector(conn)
        except BaseException:
            conn.close()
            raise
        pg_tables.use(conn, schema)
        self._pg_local.conn = (schema, conn)
        with self._conns_lock:
            self._pg_conns, ended = with_this_thread(self._pg_conns, conn)
        for old in ended:
            with contextlib.suppress(Exception):
                old.close()
        return conn

    @property
    def db(self) -> PgDB:  # type: ignore[override]
        db = PgDB(self.connection(), self.url, self._schema_now())
        db.rows = getattr(self._pg_local, "rows", None)  # inside this thread's snapshot: its rows
        return db

    def _ensure_schema(self, schema: str) -> bool:
        conn = self.connection()
        made = pg_tables.ensure(conn, schema)
        if self._schema_now() != schema:  # ensure left the connection on ``schema``
            pg_tables.use(conn, self._schema_now())
        return made

    def close_thread(self) -> None:
        held = getattr(self._pg_local, "conn", None)
        if held is not None:
            with self._conns_lock:
                self._pg_conns = [(t, c) for t, c in self._pg_conns if c is not held[1]]
            with contextlib.suppress(Exception):
                held[1].close()
            self._pg_local.conn = None

    def close(self) -> None:
        self._drop_lock_session()
        super().close()  # the parts: usage counts, the embedding cache, runtime
        with self._conns_lock:
            conns, self._pg_conns = self._pg_conns, []
        for _thread, conn in conns:
            with contextlib.suppress(Exception):
                conn.close()
        self._pg_local = threading.local()
        self._local = threading.local()

    @contextlib.contextmanager
    def transaction(self, db=None) -> Iterator[PgDB]:
        db = db or self.db
        with pg.lost_is_unavailable(self.url, "the wikimem database"), db.conn.transaction():
            self._still_locked()
            yield db
            self._still_locked()  # before the commit: a write whose lock went is rolled back

    def _still_locked(self) -> None:
        """DatabaseUnavailable when this thread writes under the writer lock and the lock's session
        was ended by the server (a restart, ``idle_session_timeout``: the session is idle while the
        build works on another connection): the lock went with it, another process may be writing
        now, so this write must not commit. Read without a round trip (what the server sent)."""
        if not getattr(self._local, "lock_depth", 0):
            return
        conn = self._lock_session
        if pg.gone(conn):
            self._drop_lock_session()
            raise pg.DatabaseUnavailable(f"the writer lock on {self._lock_subject} was lost mid-write (the database "
                                         "ended its session: a restart, a failover, idle_session_timeout); this "
                                         "write is undone and the next build redoes it")

    @contextlib.contextmanager
    def snapshot(self) -> Iterator[PgDB]:
        db = self.db
        if db.in_transaction:
            yield db
            return
        with pg.lost_is_unavailable(self.url, "the wikimem database"), db.conn.transaction():
            db.conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ READ ONLY")
            self._pg_local.memo = {}
            db.rows = self._pg_local.rows = SnapshotRows()
            try:
                yield db
            finally:
                self._pg_local.memo = self._pg_local.rows = None
                db.rows = None

    @contextlib.contextmanager
    def sound_snapshot(self) -> Iterator[bool]:
        stack = contextlib.ExitStack()
        stack.enter_context(self.snapshot())
        try:
            sound = self.manifest_problem() is None  # kept for the snapshot: its readers ask it again
        except BaseException:
            stack.close()
            raise
        if not sound:
            stack.close()
            yield False
            return
        with stack:
            yield True

    def memo(self, key, compute):
        """``compute()``, asked once per snapshot: nothing a snapshot reads can change while it is
        open, and a search asked the meta table, the tables' names and the vector counts a dozen
        times (a round trip each). Outside a snapshot: asked every time."""
        memo = getattr(self._pg_local, "memo", None)
        if memo is None:
            return compute()
        if key not in memo:
            memo[key] = compute()
        return memo[key]

    # -- the manifest ----------------------------------------------------------------------------
    def state_key(self) -> str:
        """The server and the vault's schema (a rebuild's swap renames another schema into its place:
        the meta's ``created`` then differs)."""
        return f"{self.where}/{self.schema}"

    def meta(self, db=None) -> dict[str, Any]:
        if db is None:
            return dict(self.memo("meta", lambda: self._read_meta(self.db)))
        return self._read_meta(db)

    @staticmethod
    def _read_meta(db) -> dict[str, Any]:
        try:
            return PgManifest(db).meta()
        except pg.psycopg().errors.UndefinedTable:
            return {}

    # -- integrity -------------------------------------------------------------------------------
    def manifest_problem(self, thorough: bool = False) -> str | None:
        return self.memo("problem", self._manifest_problem)

    def _manifest_problem(self) -> str | None:
        tables = PgManifest(self.db).table_names()
        if not tables:
            return "no cache yet"  # no schema (or an empty one): nothing was built into it
        if not REQUIRED_TABLES <= tables:
            return f"the database's tables are damaged (missing {', '.join(sorted(REQUIRED_TABLES - tables))})"
        try:
            meta = self.meta()
        except (ValueError, TypeError) as exc:  # a value that is not the JSON wikimem wrote
            return f"the database's tables are corrupt (meta: {exc})"
        if not meta:
            return "no cache yet"  # the tables are made (by the writer that asks) but were never filled
        if not isinstance(meta.get("artifacts", {}), dict):
            return "the database's tables are corrupt (the artifacts record is not a mapping)"
        found = meta.get("schema_version")
        if isinstance(found, int) and found > SCHEMA_VERSION:  # a rebuild here would undo a newer wikimem's
            raise pg.NewerSchema(f"the vault {self.vault_id!r} on {self.where} was built by a newer wikimem (cache "
                                 f"schema {found}; this one writes {SCHEMA_VERSION}): upgrade wikimem here "
                                 "(pip install -U wikimem) rather than have two versions rebuild it in turn")
        if found != SCHEMA_VERSION:
            return f"cache schema {found} differs from {SCHEMA_VERSION}"
        if meta.get("analyzer") != ANALYZER:
            return f"lexical analyzer {meta.get('analyzer')} differs from {ANALYZER}"
        return None

    def artifact_problems(self, meta: dict[str, Any], thorough: bool = False) -> dict[str, str]:
        return {}  # no files: the vectors are rows, committed with the rest

    def record_artifact(self, name: str, path: Path, db=None, checksum=None, format=None) -> None:
        pass

    def new_manifest(self, embedder_key: str | None, db=None) -> None:
        # the tables exist: the writer lock made the live schema's, begin_replacement a rebuild's
        with self.transaction(db):
            self.set_meta(db, schema_version=SCHEMA_VERSION, analyzer=ANALYZER, wikimem_version=__version__,
                          embedder=embedder_key, artifacts={}, dirty=False, created=time.time(),
                          store="postgres", vault_id=self.vault_id)

    def twin_notice(self) -> str | None:
        """Once per process, after a full build: another vault id's schema holding these notes."""
        from .twins import twin_notice
        return twin_notice(self)

    def size_bytes(self) -> int:
        row = self.connection().execute(
            "SELECT coalesce(sum(pg_total_relation_size(c.oid)), 0) FROM pg_class c JOIN pg_namespace n "
            "ON n.oid = c.relnamespace WHERE n.nspname = %s AND c.relkind = 'r'", (self.schema,)).fetchone()
        return int(row[0])

    # -- build beside, then swap -----------------------------------------------------------------
    def begin_replacement(self) -> None:
        self._next = f"{self.schema[:48]}_next_{os.getpid()}"
        conn = self.connection()
        pg_tables.drop(conn, self._next)
        self._local.in_build = True
        self._ensure_schema(self._next)

    def commit_replacement(self) -> None:
        target, self._next = self._next, None
        if target is None:
            return
        conn = self.connection()
        conn.execute("RESET search_path")
        from .swap import swap
        swap(conn, self.schema, target, f"{self.schema[:48]}_old_{os.getpid()}", self._still_locked)
        pg_tables.use(conn, self.schema)
        self._pg_local.conn = (self.schema, conn)
        self.vector_store._indexes.clear()

    def abandon_replacement(self) -> None:
        target, self._next = self._next, None
        if target is not None:
            with contextlib.suppress(Exception):
                conn = self.connection()
                pg_tables.drop(conn, target)
                pg_tables.use(conn, self._schema_now())

    def sweep_orphans(self) -> None:
        """Schemas a rebuild that died before its swap left behind (we hold the writer lock)."""
        if self._next is not None:
            return
        conn = self.connection()
        # the whole shape, <schema[:48]>_next_<pid>: a LIKE prefix (its "_" any character, any tail)
        # also matched another vault's live schema whose id starts so (its tables were dropped)
        shape = "^" + self.schema[:48] + "_next_[0-9]+$"  # schema names are [a-z0-9_]: nothing to escape
        for (name,) in conn.execute("SELECT schema_name FROM information_schema.schemata WHERE schema_name ~ %s",
                                    (shape,)).fetchall():
            pg_tables.drop(conn, name)
        pg_tables.use(conn, self._schema_now())

    def reset_vector_cache(self) -> None:
        pass

    # -- the writer lock (CacheDir.writer_lock's frame; the lock between processes is the server's) --
    @property
    def _lock_subject(self) -> str:
        return f"{self.vault_id} on {self.where}"

    @contextlib.contextmanager
    def _process_lock(self, deadline: float) -> Iterator[None]:
        """An advisory lock on the vault's schema, held by a session of its own: one writer across
        processes and machines, released by the server when that session ends (a dead writer
        never blocks). The session is kept between writes (only this process's thread lock, held
        around this, uses it): a connection per write cost ~7 ms of every watcher update."""
        conn = self._lock_session
        if pg.gone(conn):  # none yet, or ended while idle (a restart): its lock went with it; a new session
            self._drop_lock_session()
            conn = self._lock_session = pg.connect(self.url, "the wikimem database")
        key = (self.schema,)
        try:
            while not conn.execute("SELECT pg_try_advisory_lock(hashtext(%s))", key).fetchone()[0]:
                if time.monotonic() >= deadline:
                    raise LockError(f"another wikimem process is updating {self._lock_subject}; "
                                    "try again when it finishes")
                time.sleep(0.05)
        except LockError:
            raise
        except BaseException:  # interrupted mid-question: the lock may be held, so the session goes
            self._drop_lock_session()
            raise
        try:
            yield
        finally:
            try:
                conn.execute("SELECT pg_advisory_unlock(hashtext(%s))", key)
            except Exception:  # noqa: BLE001 - whatever went wrong, ending the session releases the lock
                self._drop_lock_session()

    def _drop_lock_session(self) -> None:
        conn, self._lock_session = self._lock_session, None
        if conn is not None:
            with contextlib.suppress(Exception):
                conn.close()

    def _writer_started(self) -> None:
        held = getattr(self._pg_local, "conn", None)
        if held is not None and pg.gone(held[1]):
            self.close_thread()  # ended while idle; the lock was just taken on a live session: a new one
        with pg.lost_is_unavailable(self.url, "the wikimem database"):  # a role that may not build: the GRANT
            made = self._ensure_schema(self.schema)
        if made:
            log.info("made the tables of %s on %s", self.vault_id, self.where)

    def lock_holder(self) -> int | None:
        return None  # the holder is a database session, perhaps on another machine
