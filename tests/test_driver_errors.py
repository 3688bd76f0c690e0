"""A database driver's error that escapes a store is said in wikimem's words above the stores (MCP,
serve, the watcher), whichever engine raised it, never "internal error" or a dead watcher.

The PostgreSQL errors are the driver's own classes, made here without a server: what matters is
how the layers above classify them."""
from __future__ import annotations

import sqlite3

import pytest

from wikimem.api import open_vault
from support_tool_failure import tool_failure
from wikimem.stores.failures import driver_errors, in_words

psycopg = pytest.importorskip("psycopg")

_REFUSED = 'permission denied for table chunks\nLINE 1: SELECT id FROM "wm_v".chunks\n        ^'


def test_every_loaded_engine_error_is_a_driver_error():
    assert sqlite3.Error in driver_errors() and psycopg.Error in driver_errors()
    assert in_words(sqlite3.OperationalError("database is locked")) is None  # SQLite's: describe_os_error words it
    assert in_words(ValueError("x")) is None


def test_mcp_says_a_database_gone_mid_call_not_internal_error():
    said = tool_failure(psycopg.OperationalError("server closed the connection unexpectedly"))
    assert said.startswith("DatabaseUnavailable: the database cannot be reached now")
    assert "internal error" not in said


def test_mcp_names_the_grant_a_refused_privilege_lacks():
    said = tool_failure(psycopg.errors.InsufficientPrivilege(_REFUSED))
    assert said.startswith("MissingGrant:") and "GRANT SELECT ON" in said and "internal error" not in said


@pytest.mark.parametrize("exc, status, code", [
    (psycopg.OperationalError("terminating connection due to administrator command"), 503, "DatabaseUnavailable"),
    (psycopg.errors.InsufficientPrivilege(_REFUSED), 503, "MissingGrant"),
])
def test_serve_maps_driver_errors_as_mcp_does(exc, status, code):
    from wikimem.serve.operations import api_error
    error = api_error(exc)
    assert (error.status, error.code) == (status, code)
    assert ("Retry-After" in error.headers) == (code == "DatabaseUnavailable")  # waiting mends a restart only


def test_a_driver_error_in_the_watchers_verify_pass_does_not_stop_it(make_vault, monkeypatch):
    """The health check's verify slice reads the manifest: a PostgreSQL error there (a teammate's rebuild
    swapping the schema under it) skips the slice, as SQLite's always did; it used to end the watcher."""
    from wikimem.watch.watcher import Watcher
    root = make_vault({"a.md": "# A\n\nalpha\n"})
    v = open_vault(root)
    v.index(embed=False)
    w = Watcher(v.ctx, status_file=False)

    def swapped(*args):
        raise psycopg.errors.UndefinedTable('relation "files" does not exist')
    monkeypatch.setattr(type(v.ctx.cache.manifest), "file_stats_after", swapped)
    w._verify_slice()  # no exception
    assert w._info["verified"]["files"] == 0 and w._info["last_error"] is None
