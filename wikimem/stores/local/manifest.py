"""The manifest on SQLite (``.wikimem/manifest*.sqlite``): ``Manifest``'s questions in SQLite's SQL.

The statements are ``manifest_sql.py``'s; what is SQLite's own here: a list of values asked in
batches under the variable limit (``select_in``), the meta and table list kept per data version
(``_unchanged_since``: a warm server asked for meta several times a search), and the FTS5 lexical
index on the same connection (``lexical.Lexical``: one transaction for chunks and their terms).
"""
from __future__ import annotations

import json
import sqlite3
import threading
from typing import TYPE_CHECKING, Any, Callable, Iterable, Iterator

from ..manifest import Manifest
from ..manifest_reads import select_in
from . import manifest_sql

if TYPE_CHECKING:
    from .lexical import Lexical

_KEPT: dict[tuple[int, str], tuple[sqlite3.Connection, tuple[int, int, int], Any]] = {}
_KEPT_LOCK = threading.Lock()


def _unchanged_since(db: sqlite3.Connection, what: str, read: Callable[[], Any]) -> Any:
    """``read()``, or what it gave last time on this connection when the database has not changed
    since: no other connection committed (``data_version``), this one changed no row
    (``total_changes``) and no schema (``schema_version``). A warm server asked for the manifest's
    meta several times a search read it from SQLite each time (a fifth of a search's time)."""
    try:
        stamp = (db.execute("PRAGMA data_version").fetchone()[0], db.total_changes,
                 db.execute("PRAGMA schema_version").fetchone()[0])
    except sqlite3.Error:
        return read()
    key = (id(db), what)
    kept = _KEPT.get(key)
    if kept is not None and kept[0] is db and kept[1] == stamp:
        return kept[2]
    value = read()
    with _KEPT_LOCK:
        if len(_KEPT) > 256:  # connections of finished threads: keep this small
            _KEPT.clear()
        _KEPT[key] = (db, stamp, value)
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
