"""PostgreSQL connections for the team stores: one place that imports psycopg, names a server
without its password, and keeps each component's schema version.

psycopg is the optional ``team`` extra: without it, a setting that names a database is one clear
error at start, not an ImportError somewhere below. A database is a cache like ``.wikimem/``: a
schema of an older version is migrated or dropped and made again (``ensure_schema``), never
trusted; one of a newer version is left alone and refused (a teammate runs a newer wikimem).
"""
from __future__ import annotations

import contextlib
import logging
import re
import threading
import time
from typing import Any, Callable, Iterator, Mapping
from urllib.parse import urlsplit

from ..errors import ConfigError, DatabaseUnavailable, WikimemError  # noqa: F401 (DatabaseUnavailable re-exported)

CONNECT_TIMEOUT_S = 5


def redact(url: str) -> str:
    """``url`` with its password replaced by ``***`` (URL form and libpq's ``key=value`` form)."""
    text = str(url or "")
    if "://" in text:
        try:
            parts = urlsplit(text)
            parts.password  # noqa: B018 - raises for a malformed netloc
        except ValueError:  # a malformed URL: whatever sits between "//user:" and "@" goes
            return re.sub(r"(//[^/:@]*:)[^@/]*@", r"\1***@", text)
        if parts.password is not None:
            user = parts.username or ""
            host = parts.netloc.rsplit("@", 1)[-1]
            text = text.replace(parts.netloc, f"{user}:***@{host}", 1)
        text = re.sub(r"(?i)([?&]password=)[^&]*", r"\1***", text)
        return text
    return re.sub(r"(?i)(password\s*=\s*)('[^']*'|\S+)", r"\1***", text)


def answers(url: str) -> None:
    """Raise (DatabaseUnavailable, or the driver's error) unless the database at ``url`` answers a
    trivial question now, on a short connection of its own: what ``/health`` asks a load balancer's
    behalf, never through a pool that may hold a connection the server already dropped."""
    with connect(url, "the wikimem database") as conn:
        conn.execute("SELECT 1")


def server_name(url: str) -> str:
    """Where a database URL points, for messages: ``host:port/db`` (a socket folder for a local one).
    A URL that cannot be read (a port that is no number, a broken IPv6 address) is a ConfigError:
    one line, exit 2, not a crash."""
    text = str(url or "")
    if "://" in text:
        try:
            parts = urlsplit(text)
            parts.port  # noqa: B018 - raises for a port that is not a number
        except ValueError as exc:
            raise ConfigError(f"database_url is not a database URL ({redact(text)}): {exc}") from None
        host = parts.hostname or ""
        if not host:
            m = re.search(r"(?i)(?:^|&)host=([^&]+)", parts.query)
            host = m.group(1) if m else "localhost"
        port = f":{parts.port}" if parts.port else ""
        return f"{host}{port}{parts.path or ''}"
    m = re.search(r"(?i)host\s*=\s*(\S+)", text)
    return m.group(1) if m else "localhost"


def psycopg():
    try:
        import psycopg as module
    except ImportError:
        raise ConfigError("a database setting needs psycopg, the team extra: pip install -e '.[team]' in wikimem's "
                          "folder (or pip install 'psycopg[binary]')") from None
    return module


def connect(url: str, what: str):
    """A new autocommit connection, or DatabaseUnavailable naming the server (never the password)."""
    module = psycopg()
    try:
        return module.connect(url, autocommit=True, connect_timeout=CONNECT_TIMEOUT_S)
    except module.ProgrammingError as exc:  # libpq could not read the connection string
        reason = redact(" ".join(str(exc).replace(str(url), redact(url)).split()))
        raise ConfigError(f"database_url is not a database URL ({redact(url)}): {reason}") from None
    except module.Error as exc:
        reason = " ".join(str(exc).replace(str(url), redact(url)).split())
        reason = redact(reason) if "password" in reason.lower() else reason
        raise DatabaseUnavailable(f"{what} at {server_name(url)} cannot be reached: {reason}") from None
    except (ValueError, TypeError) as exc:  # a malformed URL
        raise ConfigError(f"{what}: not a database URL ({redact(url)}): {exc}") from None


def ended_by_server(conn) -> bool:
    """Whether an idle connection was ended by the server meanwhile (a restart, a failover,
    ``pg_terminate_backend``, ``idle_session_timeout``): what the server sent is read without
    waiting (libpq's ``PQconsumeInput``), so a held connection found dead before a question is
    replaced instead of failing that question. A connection inside a transaction is not asked."""
    import select
    try:
        if conn.info.transaction_status:  # not IDLE: in a transaction, or already in trouble
            return False
        poller = select.poll()  # not select(): it refuses a descriptor past 1023, and a long-lived
        poller.register(conn.fileno(), select.POLLIN)  # process (serve, a test run) gets there
        if not poller.poll(0):
            return False  # nothing was said on an idle connection: the common case, one system call
        for _ in range(3):  # the server's goodbye (read as a notice), then the end of the stream
            conn.pgconn.consume_input()
            conn.pgconn.is_busy()
        return conn.pgconn.status != 0  # CONNECTION_OK is 0
    except Exception:  # noqa: BLE001 - the socket closed under it
        return True


def gone(conn) -> bool:
    """Whether a held connection cannot be asked again: none, closed, broken, or ended by the server
    while idle (``ended_by_server``)."""
    return conn is None or conn.closed or conn.broken or ended_by_server(conn)


@contextlib.contextmanager
def lost_is_unavailable(url: str, what: str) -> Iterator[None]:
    """A connection that breaks inside (the server restarted, a network cut, the session ended) is
    ``DatabaseUnavailable`` naming the server, not a driver traceback; the next call reconnects."""
    try:
        yield
    except psycopg().OperationalError as exc:
        reason = " ".join(redact(str(exc)).split())
        raise DatabaseUnavailable(f"{what} at {server_name(url)} {how_it_failed(exc)}: {reason}") from None
    except psycopg().errors.InsufficientPrivilege as exc:  # a grant missing: one line naming it (pg_grants)
        from .pg_grants import explain, user_of
        raise explain(exc, user_of(url)) from None
    except psycopg().errors.ReadOnlySqlTransaction:
        raise read_only(url, what) from None


def how_it_failed(exc: BaseException) -> str:
    """An OperationalError in words: the server cancelling one statement, or ending it to settle a
    conflict, is not the database going away (an operator reading "went away" looks for an outage)."""
    errors = psycopg().errors
    if isinstance(exc, errors.QueryCanceled):
        return "cancelled the statement (statement_timeout, or an administrator)"
    if isinstance(exc, (errors.TransactionRollback, errors.LockNotAvailable)):
        return "ended the statement to settle a conflict with another session (try again)"
    return "went away"


class ReadOnlyDatabase(DatabaseUnavailable):
    """The database accepts no writes (a read replica, ``default_transaction_read_only``): a
    setting to change or a server to point at, not something a retry mends."""

    lasting = True


def read_only(url: str | None, what: str = "the wikimem database") -> ReadOnlyDatabase:
    where = f" at {server_name(url)}" if url else ""
    return ReadOnlyDatabase(f"{what}{where} accepts no writes (a read replica, or "
                            "default_transaction_read_only is on): build and watch against the primary; "
                            "a replica serves searches (serve --no-watch)")


class NewerSchema(DatabaseUnavailable):
    """The database holds tables of a newer version than this wikimem writes: a teammate upgraded.
    Dropping them (what a cache of another version gets) would have two versions of wikimem
    rebuilding each other's tables in turn on a shared database, so they are left alone."""

    lasting = True


def table_exists(db, name: str) -> bool:
    return bool(db.execute("SELECT to_regclass(%s) IS NOT NULL", (name,)).fetchone()[0])


def columns_problem(db, table: str, columns: str) -> str | None:
    """None when ``table`` has ``columns`` (a comma-separated list), else the server's reason in one
    line; asked in a savepoint, so the transaction around it goes on either way."""
    try:
        with db.transaction():
            db.execute(f"SELECT {columns} FROM {table} LIMIT 0")
        return None
    except psycopg().Error as exc:
        return " ".join(str(exc).splitlines()[0].split())


def ensure_schema(db, component: str, version: int, create: Callable[[Any], None], drop: Callable[[Any], None],
                  migrations: Mapping[int, Callable[[Any], None]] | None = None, what: str | None = None,
                  present: Callable[[Any], bool] | None = None,
                  before_change: Callable[[Any], None] | None = None) -> bool:
    """Make ``component``'s tables at ``version``, under an advisory lock so two processes do not
    both do it. Tables of an older version are brought up by ``migrations`` (``{n: step from n to
    n + 1}``) when every step is there, else dropped and made again; tables of a newer version are
    refused (``NewerSchema``), never dropped. ``present(db)``: whether the tables are there; a
    version row whose tables are gone (dropped by hand: ``DROP SCHEMA``, ``DROP TABLE``) is no
    reason to take them as made, so they are made again. ``before_change(db)``: called in the
    transaction before tables that are there are dropped or migrated (to take them from readers
    first). Returns whether they were (re)made (empty)."""
    with db.transaction():
        db.execute("SELECT pg_advisory_xact_lock(hashtext('wikimem schema'))")
        db.execute("CREATE TABLE IF NOT EXISTS wikimem_schema (component text PRIMARY KEY, version integer NOT NULL)")
        row = db.execute("SELECT version FROM wikimem_schema WHERE component = %s", (component,)).fetchone()
        if row is not None and row[0] == version:
            if present is None or present(db):
                return False
            logging.getLogger(__name__).warning("%s were dropped by hand (their version row stayed): made again",
                                                what or component)
            if before_change is not None:
                before_change(db)
            drop(db)
            create(db)
            return True
        if row is not None and row[0] > version:
            raise NewerSchema(f"{what or component} in the database is at schema version {row[0]}, written by a newer "
                              f"wikimem than this one (version {version}); upgrade wikimem here "
                              "(pip install -U wikimem) rather than have two versions rebuild each other's tables")
        steps = range(row[0], version) if row is not None else range(0)
        made = row is None or not all(step in (migrations or {}) for step in steps)
        if row is not None and before_change is not None:
            before_change(db)
        if made:
            if row is not None:
                drop(db)
            create(db)
        else:
            for step in steps:
                migrations[step](db)
        db.execute("INSERT INTO wikimem_schema (component, version) VALUES (%s, %s) ON CONFLICT (component) "
                   "DO UPDATE SET version = excluded.version", (component, version))
        return made


class Held:
    """One connection shared by a process's threads (psycopg serialises its use), re-made after a
    failure; ``down_for`` seconds after one, calls fail at once instead of waiting for a timeout."""

    def __init__(self, url: str, what: str, setup: Callable[[Any], None], down_for: float = 30.0,
                 clock: Callable[[], float] | None = None, queue_for: float = 30.0):
        self.url, self.what, self._setup, self._down_for = url, what, setup, down_for
        self._queue_for = queue_for  # the longest a call waits behind another that does not return
        self._clock = clock or time.monotonic
        self._db = None
        self._lock = threading.Lock()
        self._down_until = 0.0
        self.problem: str | None = None

    def run(self, fn: Callable[[Any], Any]) -> Any:
        """``fn(connection)``; DatabaseUnavailable when the server cannot be reached, or when the call
        before this one has not returned for ``queue_for`` seconds (a server that stopped answering
        without closing: a hung host, a network cut with no reset): every caller queued behind that
        one forever otherwise (every request of a serve, its token check waiting here)."""
        if not self._lock.acquire(timeout=self._queue_for):
            raise DatabaseUnavailable(f"{self.what} at {server_name(self.url)} does not answer: a question to it "
                                      f"has waited over {self._queue_for:.0f} s")
        try:
            return self._run_locked(fn)
        finally:
            self._lock.release()

    def _run_locked(self, fn: Callable[[Any], Any]) -> Any:
        if self._db is not None and ended_by_server(self._db):
            self._close()  # ended while idle (a restart): a new connection, not a failed call
        if self._db is None:
            if self._clock() < self._down_until:
                raise DatabaseUnavailable(self.problem or f"{self.what} at {server_name(self.url)} is down")
            try:
                db = connect(self.url, self.what)
                try:
                    self._setup(db)
                except BaseException:
                    db.close()
                    raise
            except DatabaseUnavailable as exc:
                self.problem, self._down_until = str(exc), self._clock() + self._down_for
                raise
            self._db, self.problem = db, None
        try:
            return fn(self._db)
        except psycopg().OperationalError as exc:
            said = f"{self.what} at {server_name(self.url)}: {' '.join(redact(str(exc)).split())}"
            db = self._db
            if not (db is None or db.closed or db.broken or db.pgconn.status != 0):
                # the statement failed, the connection did not (statement_timeout, a cancel, a
                # deadlock): this call fails, the next is asked as usual
                raise DatabaseUnavailable(said) from None
            self._close()  # the connection went: the next call reconnects, after ``down_for``
            self._down_until = self._clock() + self._down_for
            self.problem = said
            raise DatabaseUnavailable(self.problem) from None

    def _close(self) -> None:
        db, self._db = self._db, None
        if db is not None:
            try:
                db.close()
            except Exception:  # noqa: BLE001 - closing a broken connection
                pass

    def close(self) -> None:
        if self._lock.acquire(timeout=self._queue_for):  # a call that never returns keeps its connection
            try:
                self._close()
            finally:
                self._lock.release()
