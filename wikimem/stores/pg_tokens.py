"""API tokens in the database, for servers on the PostgreSQL store (``serve.tokens.DatabaseTokens``).

Why: two ``wikimem serve`` processes behind a load balancer each read their own ``tokens.json``;
a token added on one machine was refused by the other, and a token revoked on one was still let
in by the other. In the database, every server checks the same table on every request, so an add
or a revoke holds on all of them from their next request.

What is kept is what the file keeps (name, vault, scope, the token's SHA-256, when it was made),
never a secret, plus when a token was revoked: a revoked row stays (who had access until when)
and its name may be used again. Unlike the vault's tables this is no cache (a lost token table
cannot be rebuilt from the vault), so its version is only ever migrated, never dropped and made
again: version 1 has nothing older to drop.
"""
from __future__ import annotations

from typing import Any

from ..errors import UsageError
from . import pg

COMPONENT = "tokens"
VERSION = 1
COLUMNS = "name, vault, scope, sha256, created"


def _create(db) -> None:
    if pg.table_exists(db, "wikimem_tokens"):
        # its version row is gone (a hand reset of wikimem_schema): access is kept, never dropped;
        # adopted when it has this version's columns
        problem = pg.columns_problem(db, "wikimem_tokens", f"{COLUMNS}, revoked")
        if problem is None:
            return
        raise TokenTableDamaged(f"the token table (wikimem_tokens) has no version row and is not as this "
                                f"wikimem makes it ({problem}); fix or drop it and add the tokens again")
    db.execute("CREATE TABLE wikimem_tokens (name text NOT NULL, vault text NOT NULL, scope text NOT NULL, "
               "sha256 text NOT NULL UNIQUE, created text NOT NULL, revoked timestamptz)")
    db.execute("CREATE UNIQUE INDEX wikimem_tokens_live_name ON wikimem_tokens (name) WHERE revoked IS NULL")


def _drop(db) -> None:
    """Reached only for a table dropped by hand (its version row stayed): nothing left to drop, and
    it is made again empty (the tokens it held are gone with it). At version 1 no older version
    exists to drop (see the module docstring): a table still there is left alone."""
    if pg.table_exists(db, "wikimem_tokens"):
        raise pg.NewerSchema("the token table's version is older than any this wikimem knows; it is left alone")


def ensure(db) -> None:
    pg.ensure_schema(db, COMPONENT, VERSION, _create, _drop, what="the token table (wikimem_tokens)",
                     present=lambda conn: pg.table_exists(conn, "wikimem_tokens"))


ACTIVE = ("SELECT s.version, t.name, t.vault, t.scope, t.sha256, t.created FROM (SELECT 1) one "
          "LEFT JOIN wikimem_schema s ON s.component = %s LEFT JOIN wikimem_tokens t ON t.revoked IS NULL "
          "ORDER BY t.created, t.name")


def active(db) -> list[tuple[str, str, str, str, str]]:
    """The tokens not revoked: (name, vault, scope, sha256, created); none before the first add.

    The table's version is read in the same statement: a table a newer wikimem laid out (another
    meaning for a column, an expiry this one would not check) is refused (``NewerSchema``), not
    read as if it were this version's; one whose columns are not this version's, whatever its
    version row says, is ``TokenTableDamaged``. Neither is let through as "no tokens"."""
    driver = pg.psycopg()
    try:
        with db.transaction():
            rows = db.execute(ACTIVE, (COMPONENT,)).fetchall()
    except driver.errors.UndefinedTable:  # no tokens yet; or the versions table alone is gone (a hand reset)
        try:
            with db.transaction():
                return [tuple(r) for r in db.execute(f"SELECT {COLUMNS} FROM wikimem_tokens WHERE revoked IS NULL "
                                                     "ORDER BY created, name").fetchall()]
        except driver.errors.UndefinedTable:
            return []
    except (driver.ProgrammingError, driver.DataError) as exc:
        if isinstance(exc, driver.errors.InsufficientPrivilege):
            raise
        _refuse_newer(db)
        raise TokenTableDamaged(f"the token table (wikimem_tokens) is not as this wikimem made it "
                                f"({' '.join(str(exc).splitlines()[0].split())}); fix or drop it and add the tokens "
                                "again") from None
    if rows and rows[0][0] is not None and rows[0][0] > VERSION:
        _refuse_newer(db, rows[0][0])
    return [tuple(r[1:]) for r in rows if r[1] is not None]


class TokenTableDamaged(pg.DatabaseUnavailable):
    """The token table's columns are not this version's: waiting does not mend it."""

    lasting = True


def _refuse_newer(db, version: int | None = None) -> None:
    if version is None:
        row = db.execute("SELECT version FROM wikimem_schema WHERE component = %s", (COMPONENT,)).fetchone()
        version = row[0] if row else None
    if version is not None and version > VERSION:
        raise pg.NewerSchema(f"the token table (wikimem_tokens) is at version {version}, written by a newer wikimem "
                             f"than this one (version {VERSION}): upgrade wikimem on this server")


def insert(db, row: tuple[str, str, str, str, str]) -> None:
    """Add a token (its table made on the first add). A live token of that name: UsageError."""
    ensure(db)
    try:
        with db.transaction():
            db.execute(f"INSERT INTO wikimem_tokens ({COLUMNS}) VALUES (%s, %s, %s, %s, %s)", row)
    except pg.psycopg().errors.UniqueViolation:
        raise UsageError(f"a token named {row[0]!r} exists; revoke it first or choose another name") from None


def revoke(db, name: str) -> tuple[str, str, str, str, str] | None:
    """Mark the live token ``name`` revoked -> its row, or None when there is none."""
    try:
        with db.transaction():
            _refuse_newer(db)  # its RETURNING names this version's columns
            row = db.execute(f"UPDATE wikimem_tokens SET revoked = now() WHERE name = %s AND revoked IS NULL "
                             f"RETURNING {COLUMNS}", (name,)).fetchone()
    except pg.psycopg().errors.UndefinedTable:
        return None
    return tuple(row) if row else None


def describe(url: str) -> dict[str, Any]:
    return {"where": f"the database {pg.server_name(url)}, table wikimem_tokens"}
