"""The manifest on PostgreSQL: ``Manifest``'s questions in PostgreSQL's own SQL (``manifest_sql.py``).

``PgDB`` is the connection the manifest is handed: a psycopg connection (autocommit, no prepared
statements: their plans ignore later settings) with the ``execute``/``executemany`` a manifest
calls, a lost server as ``DatabaseUnavailable``, and a note's NUL characters kept as U+FFFD
(PostgreSQL's text holds no NUL; SQLite's does). No statement text is rewritten on the way: the
statements are written for PostgreSQL. What SQLite answers from its own catalogue (the table list) is asked of ``pg_catalog``;
the lexical store on the same connection is ``pg_lexical.PgLexical``.
"""
from __future__ import annotations

import json
import re
from typing import Any, Iterable, Iterator, Sequence

from .. import pg
from ..manifest import Manifest
from . import manifest_sql


def _values(row: Sequence[Any] | None) -> tuple | None:
    """PostgreSQL's text holds no NUL character (SQLite's does): a note's NUL is kept as U+FFFD in
    the derived rows (the note itself is untouched; its page record, JSON, escapes it anyway)."""
    if row is None:
        return None
    return tuple(v.replace("\x00", "\ufffd") if isinstance(v, str) and "\x00" in v else v for v in row)


class PgDB:
    """A psycopg connection with the ``execute``/``executemany`` a manifest calls (see above)."""

    dialect = "postgres"

    def __init__(self, conn, url: str = "", schema: str | None = None):
        self.conn, self.url, self.schema = conn, url, schema

    def execute(self, sql: str, params: Sequence[Any] | None = None):
        with pg.lost_is_unavailable(self.url, "the wikimem database"):
            return self.conn.execute(sql, _values(params) if params else None)

    def executemany(self, sql: str, rows: Iterable[Sequence[Any]]) -> None:
        rows = [_values(r) for r in rows]
        if not rows:
            return
        with pg.lost_is_unavailable(self.url, "the wikimem database"), self.conn.cursor() as cur:
            cur.executemany(sql, rows)

    @property
    def in_transaction(self) -> bool:
        from psycopg.pq import TransactionStatus
        return self.conn.info.transaction_status != TransactionStatus.IDLE


_JSON_NUL = re.compile(r"(?<!\\)((?:\\\\)*)\\u0000")


def _page_json(row: Sequence[Any]) -> tuple:
    """A files row with its page record's ``\\u0000`` escapes (a note's NUL) as ``\\ufffd``: the server's
    JSON functions refuse to turn ``\\u0000`` into text, and the questions read the record with them."""
    row = tuple(row)
    page = row[-1]
    if isinstance(page, str) and "\\u0000" in page:
        row = row[:-1] + (_JSON_NUL.sub(r"\1\\ufffd", page),)
    return row


class PgManifest(Manifest):
    """``Manifest`` over a ``PgDB``."""

    sql = manifest_sql
    dialect = "postgres"

    def _in(self, statement: str, values: Iterable, *args: Any) -> Iterator[tuple]:
        """One question with the list as one array parameter (one round trip, however long)."""
        values = list(values)
        if not values:
            return iter(())
        return iter(self.db.execute(statement, (*args, values)).fetchall())

    def put_file(self, row: tuple) -> None:
        super().put_file(_page_json(row))

    def put_files(self, rows) -> None:
        super().put_files(_page_json(r) for r in rows)

    @property
    def lexical(self):
        from .lexical import PgLexical
        return PgLexical(self.db.conn)

    def meta(self) -> dict[str, Any]:
        return {k: json.loads(v) for k, v in self.db.execute(self.sql.META)}

    def table_names(self) -> set[str]:
        """The tables of the vault's schema (pg_catalog: information_schema's views cost ~10 ms)."""
        schema = getattr(self.db, "schema", None)  # current_schema() skips a schema not made yet
        return {r[0] for r in self.db.conn.execute(self.sql.TABLES, (schema,)).fetchall()}

