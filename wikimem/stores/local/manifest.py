"""The manifest on SQLite (``.wikimem/manifest*.sqlite``): ``Manifest``'s questions in SQLite's SQL.

The statements are ``manifest_sql.py``'s; what is SQLite's own here: a list of values asked in
batches under the variable limit (``select_in``), the meta and table list kept per data version
(``_unchanged_since``: a warm server asked for meta several times a search), and the FTS5 lexical
index on the same connection (``lexical.Lexical``: one transaction for chunks and their terms).
"""
from __future__ import annotations

import json
import sqlite3
from typing import TYPE_CHECKING, Any, Callable, Iterable, Iterator

from ..manifest import Manifest
from ..manifest_reads import select_in
from . import manifest_sql

if TYPE_CHECKING:
    from .lexical import Lexical

class KeptConnection(sqlite3.Connection):
    """A cache connection that carries what ``_unchanged_since`` read through it, so the memo goes
    with the connection. It was a module-wide dict keyed by connection, which held every connection
    it saw open: 4 file descriptors per vault a process opened and dropped without closing (a
    library user's loop, the test suite reaching the 1,024 limit)."""

    wikimem_kept: dict[str, tuple[tuple[int, int, int], Any]] | None = None


def _unchanged_since(db: sqlite3.Connection, what: str, read: Callable[[], Any]) -> Any:
    """``read()``, or what it gave last time on this connection when the database has not changed
    since: no other connection committed (``data_version``), this one changed no row
    (``total_changes``) and no schema (``schema_version``). A warm server asked for the manifest's
    meta several times a search read it from SQLite each time (a fifth of a search's time)."""
    if not isinstance(db, KeptConnection):
        return read()
    try:
        stamp = (db.execute("PRAGMA data_version").fetchone()[0], db.total_changes,
                 db.execute("PRAGMA schema_version").fetchone()[0])
    except sqlite3.Error:
        return read()
    kept = db.wikimem_kept
    if kept is None:
        kept = db.wikimem_kept = {}
    entry = kept.get(what)
    if entry is not None and entry[0] == stamp:
        return entry[1]
    value = read()
    kept[what] = (stamp, value)
    return value


class LocalManifest(Manifest):
    """``Manifest`` over a sqlite3 connection."""

    sql = manifest_sql
    dialect = "sqlite"

    def _in(self, statement: str, values: Iterable, *args: Any) -> Iterator[tuple]:
        return select_in(self.db, statement, list(values), *args)

    @property
    def lexical(self) -> "Lexical":
        """The FTS5 lexical index in this manifest, on the same connection (same transaction)."""
        from .lexical import Lexical
        return Lexical(self.db)

    def meta(self) -> dict[str, Any]:
        return dict(_unchanged_since(self.db, "meta", lambda: {k: json.loads(v) for k, v in
                                                                self.db.execute(self.sql.META)}))

    def table_names(self) -> set[str]:
        return set(_unchanged_since(self.db, "tables", lambda: {r[0] for r in self.db.execute(self.sql.TABLES)}))
