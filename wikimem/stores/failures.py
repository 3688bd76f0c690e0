"""A database driver's own error, for the layers above the stores that must not name an engine.

Why: serve, the MCP server, the watcher and an agent's page reads each caught ``sqlite3.Error`` by
name, so on the PostgreSQL store a driver error that escaped a store (a connection cut in the middle
of a read, a privilege a reader lacks) took the generic path: an MCP tool answered "internal error",
the watcher logged a traceback. Here, once: which classes are a driver's errors (``driver_errors``,
sqlite3's always, psycopg's once the team extra is loaded, so the local store never imports it), and
a driver error in wikimem's words when there are some (``in_words``: ``DatabaseUnavailable`` for a
connection that went, ``MissingGrant`` naming the GRANT for a refused privilege).
"""
from __future__ import annotations

import sqlite3
import sys

from ..errors import DatabaseUnavailable, WikimemError


def driver_errors() -> tuple[type[BaseException], ...]:
    """Every loaded engine's error base class (for an ``except`` clause: evaluated when it is reached)."""
    driver = sys.modules.get("psycopg")
    return (sqlite3.Error,) if driver is None else (sqlite3.Error, driver.Error)


def in_words(exc: BaseException) -> WikimemError | None:
    """A PostgreSQL driver error as the WikimemError a store would have raised for it, or None (any
    other error, SQLite's included: ``errors.describe_os_error`` words those)."""
    if isinstance(exc, WikimemError):
        return exc
    driver = sys.modules.get("psycopg")
    if driver is None or not isinstance(exc, driver.Error):
        return None
    from .pg import read_only, redact
    if isinstance(exc, driver.errors.ReadOnlySqlTransaction):  # a read replica: no write can be made there
        return read_only(None)
    if isinstance(exc, driver.OperationalError):  # the server restarted, went, or ended the session
        from .pg import how_it_failed
        words = how_it_failed(exc)
        said = "the database cannot be reached now" if words == "went away" else f"the database {words}"
        return DatabaseUnavailable(f"{said}: {' '.join(redact(str(exc)).split())}")
    from .pg_grants import explain
    return explain(exc)  # a refused privilege: the GRANT it lacks; None for anything else
