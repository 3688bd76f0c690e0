"""A vault's tables on PostgreSQL: one schema per vault, versioned, made again when it does not match.

Why a schema per vault rather than a vault column in every table: two vaults in one database can
then not read each other's rows by a forgotten ``WHERE`` (a connection's ``search_path`` names one
schema, and a role can be granted one schema alone), a rebuild is ``DROP SCHEMA … CASCADE``, and
the statements stay those of the local store (the same columns, the same filters). The schema's
name is derived from the vault's id (``schema_name``); its version and the embedder it holds are
in ``wikimem_schema`` (``pg.ensure_schema``), so a schema of an older version is migrated
(``MIGRATIONS``) or dropped and made again, never trusted, as the local cache is.

The tables mirror the local manifest (``local/manifest_sql.SCHEMA_SQL``): files, chunks, passages, edges,
meta, with the lexical tables of ``pg_lexical``.
"""
from __future__ import annotations

import hashlib
import re

from .. import pg, pg_grants
from .lexical import PgLexical
from .vectors import partition_vecs

SCHEMA_VERSION = 2  # 2: ``vecs`` partitioned into searched and held rows (pg_vectors.partition_vecs)

TABLES_SQL = (
    "CREATE TABLE IF NOT EXISTS meta (key text PRIMARY KEY, value text NOT NULL)",
    "CREATE TABLE IF NOT EXISTS files (path text PRIMARY KEY, size bigint NOT NULL, mtime_ns bigint NOT NULL, "
    "sha256 text NOT NULL, title text, type text, status text, aliases text, links text, tags text, errors text, "
    "note integer NOT NULL, page text)",
    "CREATE TABLE IF NOT EXISTS chunks (vid bigint PRIMARY KEY, id text NOT NULL UNIQUE, path text NOT NULL, "
    "ord integer NOT NULL, embed_hash text NOT NULL, title text, heading_path text, text text, start integer, "
    '"end" integer, links text, tags text, type text, status text, created text, updated text, blocks text, '
    "speakers text, date text, context text, aliases text)",
    "CREATE INDEX IF NOT EXISTS chunks_path ON chunks (path)",
    "CREATE INDEX IF NOT EXISTS chunks_hash ON chunks (embed_hash)",
    "CREATE INDEX IF NOT EXISTS chunks_status ON chunks (status)",
    "CREATE TABLE IF NOT EXISTS passages (pid bigint PRIMARY KEY, vid bigint NOT NULL, ord integer NOT NULL, "
    "embed_hash text NOT NULL, text text NOT NULL)",
    "CREATE INDEX IF NOT EXISTS passages_vid ON passages (vid)",
    "CREATE TABLE IF NOT EXISTS edges (src text NOT NULL, dst text NOT NULL, type text NOT NULL, "
    "weight float8 NOT NULL, PRIMARY KEY (src, dst, type))",
    "CREATE INDEX IF NOT EXISTS edges_dst ON edges (dst)",
)


MIGRATIONS = {1: partition_vecs}  # schema version n -> the step to n + 1 (pg.ensure_schema)


def schema_name(vault_id: str) -> str:
    """A schema name for a vault id: readable, within PostgreSQL's 63 bytes, and distinct for two
    ids that read alike once cleaned (the hash of the id is part of it)."""
    clean = re.sub(r"[^a-z0-9]+", "_", vault_id.lower()).strip("_")[:40] or "vault"
    return f"wm_{clean}_{hashlib.sha256(vault_id.encode('utf-8')).hexdigest()[:10]}"


def quoted(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def schema_exists(db, schema: str) -> bool:
    return bool(db.execute("SELECT to_regnamespace(%s) IS NOT NULL", (quoted(schema),)).fetchone()[0])


def ensure(db, schema: str) -> bool:
    """The vault's schema at this version (made, or dropped and made again); the connection's
    ``search_path`` set to it. Returns whether it was (re)made.

    Every writer start asks this (an incremental update starts three or four writers). Once a
    connection has made sure of ``schema``, the next ask reads the version row alone (2 round
    trips, not 10): a row at this version is written in the transaction that made or migrated the
    tables, so it answers what the locked path would; any other answer takes the locked path."""
    home = getattr(db, "_wikimem_home", None)
    if home is not None:
        row = db.execute(f"SELECT version FROM {quoted(home)}.wikimem_schema WHERE component = %s "
                         "AND to_regnamespace(%s) IS NOT NULL",  # a schema dropped by hand: the locked path
                         (f"vault:{schema}", quoted(schema))).fetchone()
        if row is not None and row[0] == SCHEMA_VERSION:
            use(db, schema)
            return False

    kept: list[pg_grants.Grants] = []  # a schema of an older version made again keeps its readers' grants

    def create(conn) -> None:
        if not kept and schema_exists(conn, schema):
            drop(conn)  # tables with no version row (a restore of the schema alone, a hand reset): not trusted
        conn.execute(f"CREATE SCHEMA {quoted(schema)}")
        # the vault's tables made in its schema; the versions table still found where it is
        conn.execute(f"SET LOCAL search_path TO {quoted(schema)}, {quoted(home)}")
        for statement in TABLES_SQL:
            conn.execute(statement)
        PgLexical.create(conn)
        if kept:
            pg_grants.apply(conn, kept[0], schema)

    def drop(conn) -> None:
        kept.append(pg_grants.read(conn, schema))
        conn.execute(f"DROP SCHEMA IF EXISTS {quoted(schema)} CASCADE")

    def in_schema(step):
        def run(conn) -> None:
            conn.execute(f"SET LOCAL search_path TO {quoted(schema)}, {quoted(home)}")
            step(conn)
        return run

    db.execute("RESET search_path")  # the versions table is the database's, not a vault's
    home = db.execute("SELECT current_schema()").fetchone()[0] or "public"
    from .swap import lock_live, patiently

    made = False

    def attempt(wait_for_readers: bool) -> None:
        # an older schema is dropped or migrated: every table taken at once, readers first (swap.py)
        nonlocal made
        kept.clear()
        made = pg.ensure_schema(db, f"vault:{schema}", SCHEMA_VERSION, create, drop,
                                {step: in_schema(fn) for step, fn in MIGRATIONS.items()},
                                what=f"the vault's tables ({schema})", present=lambda conn: schema_exists(conn, schema),
                                before_change=(lambda conn: lock_live(conn, schema)) if wait_for_readers else None)
    patiently(attempt)
    use(db, schema)
    db._wikimem_home = home  # the versions table's schema: the next ensure on this connection reads it there
    return made


def refuse_newer(db, schema: str) -> None:
    """``NewerSchema`` when a newer wikimem made the vault's tables: a reader must not read a layout
    it does not know (``ensure`` refuses them to a writer; a search or a status read them as they
    were). Asked once per connection, on the database's own search path (the versions table's)."""
    try:
        row = db.execute("SELECT version FROM wikimem_schema WHERE component = %s", (f"vault:{schema}",)).fetchone()
    except pg.psycopg().errors.UndefinedTable:  # nothing was ever built in this database
        return
    if row is not None and row[0] > SCHEMA_VERSION:
        raise pg.NewerSchema(f"the vault's tables ({schema}) are at schema version {row[0]}, written by a newer wikimem "
                             f"than this one (version {SCHEMA_VERSION}); upgrade wikimem here (pip install -U wikimem)")


def use(db, schema: str) -> None:
    """Point the connection's unqualified names at the vault's schema, and the schema pgvector's
    types live in (another vault's tables are never on the path, so cannot be read by name)."""
    found = getattr(db, "_wikimem_vector_schema", None)  # asked once a connection: an extension stays put
    if found is None:
        row = db.execute("SELECT n.nspname FROM pg_extension e JOIN pg_namespace n ON n.oid = e.extnamespace "
                         "WHERE e.extname = 'vector'").fetchone()
        found = row[0] if row else ""
        if row:
            db._wikimem_vector_schema = found
    path = [quoted(schema)] + ([quoted(found)] if found and found != schema else [])
    db.execute(f"SET search_path TO {', '.join(path)}")


def ensure_pgvector(db) -> None:
    """pgvector in this database, made here if it is not (which needs the right to create it)."""
    if db.execute("SELECT 1 FROM pg_extension WHERE extname = 'vector'").fetchone():
        return
    try:
        with db.transaction():
            db.execute("CREATE EXTENSION IF NOT EXISTS vector")
    except pg.psycopg().Error as exc:
        raise pg.DatabaseUnavailable(
            f"the database has no pgvector and this role may not add it ({' '.join(str(exc).split())}): "
            "ask its owner to run CREATE EXTENSION vector") from None


def drop(db, schema: str) -> None:
    """Forget the vault's tables (a rebuild, or a vault removed)."""
    db.execute("RESET search_path")
    with db.transaction():
        db.execute(f"DROP SCHEMA IF EXISTS {quoted(schema)} CASCADE")
        db.execute("DELETE FROM wikimem_schema WHERE component = %s", (f"vault:{schema}",))
