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
from ...model import Chunk
from ..manifest import Manifest, row_chunk
from . import manifest_sql
from .rows import ID, ORD, PATH, SPEAKERS, TEXT, VID, SnapshotRows


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
        self.rows: SnapshotRows | None = None  # inside a read snapshot: the rows it read (rows.py)

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

    # -- by-id reads answered from the snapshot's rows (rows.py) ------------------------------------
    def _chunk_rows(self, keys: Iterable, by_vid: bool = False) -> dict | None:
        rows = getattr(self.db, "rows", None)
        if rows is None:
            return None
        statement = self.sql.CHUNKS_BY_VID_IN if by_vid else self.sql.CHUNKS_BY_ID_IN
        return rows.chunks(keys, by_vid, lambda sql, values: self._in(sql, values), statement)

    def chunks_by_id(self, ids: Iterable[str]) -> dict[str, Chunk]:
        rows = self._chunk_rows(ids)
        return super().chunks_by_id(ids) if rows is None else {cid: row_chunk(r) for cid, r in rows.items()}

    def chunk_texts_by_id(self, ids: Iterable[str]) -> dict[str, Any]:
        rows = self._chunk_rows(ids)
        return super().chunk_texts_by_id(ids) if rows is None else {cid: r[TEXT] for cid, r in rows.items()}

    def chunk_speakers(self, ids: Iterable[str]) -> dict[str, Any]:
        rows = self._chunk_rows(ids)
        return super().chunk_speakers(ids) if rows is None else {cid: r[SPEAKERS] for cid, r in rows.items()}

    def paths_by_id(self, ids: Iterable[str]) -> dict[str, tuple[str, tuple[str, ...], int]]:
        rows = self._chunk_rows(ids)
        if rows is None:
            return super().paths_by_id(ids)
        return {cid: (r[PATH], tuple(json.loads(r[SPEAKERS] or "[]")), r[ORD]) for cid, r in rows.items()}

    def vids_by_id(self, ids: Iterable[str]) -> dict[str, int]:
        rows = self._chunk_rows(ids)
        return super().vids_by_id(ids) if rows is None else {cid: r[VID] for cid, r in rows.items()}

    def chunk_ids_by_vid(self, vids: Iterable[int]) -> dict[int, str]:
        rows = self._chunk_rows(vids, by_vid=True)
        return super().chunk_ids_by_vid(vids) if rows is None else {vid: r[ID] for vid, r in rows.items()}

    def _passage_rows(self, pids: Iterable[int]) -> dict[int, tuple[int, Any]] | None:
        rows = getattr(self.db, "rows", None)
        if rows is None:
            return None
        return rows.passage_rows(pids, lambda sql, values: self._in(sql, values), self.sql.PASSAGE_ROWS_IN)

    def passage_owners(self, ids: Iterable[int]) -> dict[int, int]:
        rows = self._passage_rows(ids)
        return super().passage_owners(ids) if rows is None else {pid: r[0] for pid, r in rows.items()}

    def passage_texts(self, pids: Iterable[int]) -> dict[int, str]:
        rows = self._passage_rows(pids)
        return super().passage_texts(pids) if rows is None else {pid: r[1] for pid, r in rows.items()}

    def passages_of(self, vids: Iterable[int], held: bool) -> dict[int, int]:
        rows = getattr(self.db, "rows", None)
        if rows is None:
            return super().passages_of(vids, held)
        found = list(self._in(self.sql.passage_rows_of(held), list(vids)))
        rows.add_passages(found)  # their texts are asked next (a held passage re-ranks by its text's content)
        return {pid: vid for pid, vid, _text in found}

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

