"""A full rebuild's swap on PostgreSQL: the schema written beside the live one takes its place, in
one transaction, without deadlocking the searches reading the live one.

Why a module of its own: the swap must take every live table before it renames and drops. A
search in another session holds the tables it has read until its snapshot ends, and takes more as
it goes; dropping the old schema took them one by one, so each waited on the other, a deadlock the
server ended by failing the search ("went away"). Here every table is asked for at once, each
waited for at most ``LOCK_WAIT_MS`` (less than the server's 1 s deadlock check), and when one is
not had, all are let go and asked again: the search finishes first. A search that asks meanwhile
waits for the swap, then reads the new tables, whole. Past ``PATIENCE_S`` the swap just waits.
"""
from __future__ import annotations

import time
from typing import Callable

from .. import pg, pg_grants
from . import tables as pg_tables

LOCK_WAIT_MS = 200  # a swap waits this long for a table a search holds, then lets all go
PATIENCE_S = 60.0  # after this, the swap waits for the searches in its way however it may


def live_tables(conn, schema: str) -> list[str]:
    return [r[0] for r in conn.execute(
        "SELECT c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = %s "
        "AND c.relkind IN ('r', 'p', 'm') AND NOT c.relispartition ORDER BY 1", (schema,)).fetchall()]


def lock_live(conn, schema: str) -> None:
    """Every table of ``schema`` taken at once for this transaction, or ``LockNotAvailable`` after
    ``LOCK_WAIT_MS`` when a reader holds one (the caller lets all go and asks again)."""
    q = pg_tables.quoted
    live = live_tables(conn, schema)
    if live:
        conn.execute(f"SET LOCAL lock_timeout = {LOCK_WAIT_MS}")
        conn.execute(f"LOCK TABLE {', '.join(q(schema) + '.' + q(t) for t in live)} IN ACCESS EXCLUSIVE MODE")
        conn.execute("SET LOCAL lock_timeout = 0")


def patiently(attempt: Callable[[bool], None]) -> None:
    """``attempt(wait_for_readers)`` in a transaction of its own until it is not refused a lock: while
    patient it is told to give way to readers (``lock_live``); after ``PATIENCE_S`` it just waits."""
    patience = time.monotonic() + PATIENCE_S
    while True:
        try:
            attempt(time.monotonic() < patience)
            return
        except pg.psycopg().errors.LockNotAvailable:  # a search holds a table: all let go, try again
            time.sleep(0.05)


def swap(conn, schema: str, target: str, old: str, still_locked: Callable[[], None]) -> None:
    """Rename ``target`` (the rebuilt schema) to ``schema``, the live one going away as ``old``;
    ``still_locked()`` raises when this writer's lock went meanwhile (nothing is swapped then)."""
    def attempt(wait_for_readers: bool) -> None:
        with conn.transaction():
            _swap(conn, schema, target, old, still_locked, wait_for_readers)
    patiently(attempt)


def _swap(conn, schema: str, target: str, old: str, still_locked: Callable[[], None], wait_for_readers: bool) -> None:
    q = pg_tables.quoted
    conn.execute("SELECT pg_advisory_xact_lock(hashtext('wikimem schema'))")
    still_locked()  # a rebuild whose writer lock went is not swapped in
    if wait_for_readers:
        lock_live(conn, schema)
    conn.execute(f"DROP SCHEMA IF EXISTS {q(old)} CASCADE")
    pg_grants.carry(conn, schema, target)  # a reader's grants survive the rebuild
    if conn.execute("SELECT 1 FROM information_schema.schemata WHERE schema_name = %s", (schema,)).fetchone():
        conn.execute(f"ALTER SCHEMA {q(schema)} RENAME TO {q(old)}")
    conn.execute(f"ALTER SCHEMA {q(target)} RENAME TO {q(schema)}")
    conn.execute(f"DROP SCHEMA IF EXISTS {q(old)} CASCADE")
    conn.execute("DELETE FROM wikimem_schema WHERE component = %s", (f"vault:{schema}",))
    conn.execute("UPDATE wikimem_schema SET component = %s WHERE component = %s", (f"vault:{schema}", f"vault:{target}"))
