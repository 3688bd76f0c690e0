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
    db.execute("CREATE TABLE wikimem_tokens (name text NOT NULL, vault text NOT NULL, scope text NOT NULL, "
               "sha256 text NOT NULL UNIQUE, created text NOT NULL, revoked timestamptz)")
    db.execute("CREATE UNIQUE INDEX wikimem_tokens_live_name ON wikimem_tokens (name) WHERE revoked IS NULL")


def _drop(db) -> None:  # never reached at version 1 (see the module docstring)
    raise pg.NewerSchema("the token table's version is older than any this wikimem knows; it is left alone")


def ensure(db) -> None:
    pg.ensure_schema(db, COMPONENT, VERSION, _create, _drop, what="the token table (wikimem_tokens)")


def active(db) -> list[tuple[str, str, str, str, str]]:
    """The tokens not revoked: (name, vault, scope, sha256, created); none before the first add."""
    try:
        with db.transaction():
            return [tuple(r) for r in db.execute(f"SELECT {COLUMNS} FROM wikimem_tokens WHERE revoked IS NULL "
                                                 "ORDER BY created, name").fetchall()]
    except pg.psycopg().errors.UndefinedTable:
        return []


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
            row = db.execute(f"UPDATE wikimem_tokens SET revoked = now() WHERE name = %s AND revoked IS NULL "
                             f"RETURNING {COLUMNS}", (name,)).fetchone()
    except pg.psycopg().errors.UndefinedTable:
        return None
    return tuple(row) if row else None


def describe(url: str) -> dict[str, Any]:
    return {"where": f"the database {pg.server_name(url)}, table wikimem_tokens"}
