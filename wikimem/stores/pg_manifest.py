"""The manifest on PostgreSQL: the local ``Manifest``'s named questions, asked of the vault's schema.

Why the same class and not a second copy of ~90 methods: the manifest's SQL is plain enough that
a handful of rewrites make it PostgreSQL's (``translate``: ``?`` marks, ``INSERT OR REPLACE`` as
``ON CONFLICT … DO UPDATE``, ``json_extract`` as ``json`` paths, ``group_concat`` as
``string_agg``), so both engines answer every question from one text and cannot drift apart.
``PgDB`` is the connection the manifest is handed: a psycopg connection (autocommit, no prepared
statements: their plans ignore later settings) with the ``execute``/``executemany`` of sqlite3
and the statements rewritten on the way (each once: they are few and fixed). ``Manifest(db)``
of a ``PgDB`` is a ``PgManifest`` (``Manifest.__new__``), so the callers that make a manifest
from a connection need not know the engine. The few questions SQLite answers from its own
catalogue (meta kept per data version, the table list) are ``PgManifest``'s own; the lexical
store on the same connection is ``pg_lexical.PgLexical``.
"""
from __future__ import annotations

import json
import re
from functools import lru_cache
from typing import Any, Iterable, Sequence

from . import pg
from .manifest import Manifest

# the local tables' keys: INSERT OR REPLACE becomes an upsert on them
_KEYS = {"meta": ("key",), "files": ("path",), "chunks": ("vid",), "passages": ("pid",),
         "edges": ("src", "dst", "type")}
_UPSERT = re.compile(r"^\s*INSERT OR REPLACE INTO (\w+)\s*\(([^)]*)\)", re.I)
_JSON = re.compile(r"json_extract\((\w+(?:\.\w+)?), '\$\.([\w.]+)'\)")
_OBJECTS = {"frontmatter.data"}  # json_extract of an object gives its JSON text: so must the rewrite


@lru_cache(maxsize=512)
def translate(sql: str) -> str:
    """A statement of the local manifest as PostgreSQL's (see the module docstring)."""
    out = sql
    m = _UPSERT.match(out)
    if m:
        table, columns = m.group(1), [c.strip() for c in m.group(2).split(",")]
        keys = _KEYS[table]
        update = ", ".join(f"{c} = excluded.{c}" for c in columns if c not in keys)
        out = re.sub(r"^\s*INSERT OR REPLACE INTO", "INSERT INTO", out, count=1, flags=re.I)
        out += f" ON CONFLICT ({', '.join(keys)}) " + (f"DO UPDATE SET {update}" if update else "DO NOTHING")

    def json_path(match: re.Match) -> str:
        column, path = match.group(1), match.group(2)
        keys = "{" + ",".join(path.split(".")) + "}"
        if path in _OBJECTS:
            return f"({column}::json #> '{keys}')::text"
        # json, not jsonb: jsonb refuses a note's \u0000; psycopg decodes the json scalar (str, int, None)
        return f"({column}::json #> '{keys}')"

    out = _JSON.sub(json_path, out)
    out = re.sub(r"group_concat\((\w+)\)", r"string_agg(\1::text, ',')", out)
    out = out.replace("%", "%%").replace("?", "%s")
    return out


def _values(row: Sequence[Any]) -> tuple:
    """PostgreSQL's text holds no NUL character (SQLite's does): a note's NUL is kept as U+FFFD in
    the derived rows (the note itself is untouched; its page record, JSON, escapes it anyway)."""
    return tuple(v.replace("\x00", "\ufffd") if isinstance(v, str) and "\x00" in v else v for v in row)


class PgDB:
    """A psycopg connection with sqlite3's ``execute``/``executemany`` (see the module docstring)."""

    dialect = "postgres"

    def __init__(self, conn, url: str = "", schema: str | None = None):
        self.conn, self.url, self.schema = conn, url, schema

    def execute(self, sql: str, params: Sequence[Any] | None = None):
        with pg.lost_is_unavailable(self.url, "the wikimem database"):
            return self.conn.execute(translate(sql), _values(params or ()))

    def executemany(self, sql: str, rows: Iterable[Sequence[Any]]) -> None:
        with pg.lost_is_unavailable(self.url, "the wikimem database"), self.conn.cursor() as cur:
            cur.executemany(translate(sql), [_values(r) for r in rows])

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
    """``Manifest`` on a ``PgDB``: what SQLite answered from its own catalogue, asked here."""

    def put_file(self, row: tuple) -> None:
        super().put_file(_page_json(row))

    def put_files(self, rows) -> None:
        super().put_files(_page_json(r) for r in rows)

    @property
    def lexical(self):
        from .pg_lexical import PgLexical
        return PgLexical(self.db.conn)

    def meta(self) -> dict[str, Any]:
        return {k: json.loads(v) for k, v in self.db.execute("SELECT key, value FROM meta")}

    def table_names(self) -> set[str]:
        """The tables of the vault's schema (pg_catalog: information_schema's views cost ~10 ms)."""
        schema = getattr(self.db, "schema", None)  # current_schema() skips a schema not made yet
        rows = self.db.conn.execute("SELECT c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
                                    "WHERE n.nspname = coalesce(%s, current_schema()) AND c.relkind IN ('r', 'p')",
                                    (schema,)).fetchall()
        return {r[0] for r in rows}


PgDB.manifest_class = PgManifest  # Manifest(PgDB(...)) is a PgManifest (Manifest.__new__)
