"""The manifest's named questions about files, pages, edges and chunk texts.

Callers above the index (graph tools, agent reads, lint, stats, qa, ingest, the watcher) ask these
instead of writing SQL, so the manifest's tables can change, or move to another engine (design.md
§9), without touching them. Rows come back as tuples in the order each docstring gives; list-valued
columns (``tags``, ``aliases``, ``links``) are the JSON text the build stored, because their readers
decode them in bulk (``graph.pagegraph.json_lists``: one parse for 10k pages) and tolerate a damaged
value where a per-row decode here would either raise or hide it.

``ManifestReads`` is a mixin of ``manifest.Manifest`` (which adds the build's writes and the index's
own reads); it only needs ``self.db``, the connection the caller's snapshot or transaction uses.
"""
from __future__ import annotations

import sqlite3
from typing import Any, Iterable, Iterator, Sequence


def select_in(db: sqlite3.Connection, sql: str, values: Sequence, *args: Any) -> Iterator[tuple]:
    """Rows of ``sql`` (which holds one ``{marks}`` placeholder list) for ``values``, asked in
    batches of 500 so the statement stays under SQLite's variable limit; ``args`` come first."""
    values = list(values)
    for start in range(0, len(values), 500):
        part = values[start:start + 500]
        yield from db.execute(sql.format(marks=",".join("?" * len(part))), [*args, *part])


def _marks(values: Sequence) -> str:
    return ",".join("?" * len(values))


def _like(text: str) -> str:
    return text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


class ManifestReads:
    db: sqlite3.Connection

    # -- files -----------------------------------------------------------------------------
    def file_paths(self) -> list[str]:
        """Every file the manifest records (notes and attachments), in table order."""
        return [r[0] for r in self.db.execute("SELECT path FROM files")]

    def file_hashes(self) -> dict[str, tuple[str, int, int]]:
        """path -> (sha256, size, mtime_ns) of every file, as the last build recorded it."""
        return {path: (sha, size, mtime) for path, sha, size, mtime in
                self.db.execute("SELECT path, sha256, size, mtime_ns FROM files")}

    def file_stats_after(self, after: str, limit: int) -> list[tuple[str, int, int, str]]:
        """(path, size, mtime_ns, sha256) of the ``limit`` files after ``after`` in path order (a
        watcher re-hashes the vault a slice at a time)."""
        return self.db.execute("SELECT path, size, mtime_ns, sha256 FROM files WHERE path > ? ORDER BY path LIMIT ?",
                               (after, limit)).fetchall()

    def file_paths_under(self, prefix: str) -> list[str]:
        """Files whose path starts with ``prefix`` exactly (case-sensitive, any file kind)."""
        return [r[0] for r in self.db.execute("SELECT path FROM files WHERE substr(path, 1, ?) = ?",
                                              (len(prefix), prefix))]

    def paths_like(self, prefix: str, notes_only: bool = False) -> list[str]:
        """Paths starting with ``prefix`` as SQL's LIKE compares them (ASCII case-insensitive: a
        ``Memories/`` folder counts as ``memories/``), sorted; ``notes_only``: notes, not attachments."""
        note = "note=1 AND " if notes_only else ""
        return [r[0] for r in self.db.execute(f"SELECT path FROM files WHERE {note}path LIKE ? ORDER BY path",
                                              (prefix + "%",))]

    def file_rows(self) -> list[tuple]:
        """(path, note, type, status, size, aliases, links, tags) of every file, by path."""
        return self.db.execute("SELECT path, note, type, status, size, aliases, links, tags FROM files "
                               "ORDER BY path").fetchall()

    # -- pages -----------------------------------------------------------------------------
    def note_paths(self) -> list[str]:
        """Every note's path (no attachments), in table order."""
        return [r[0] for r in self.db.execute("SELECT path FROM files WHERE note=1")]

    def page_count(self) -> int:
        return self.db.execute("SELECT count(*) FROM files WHERE note=1").fetchone()[0]

    def pages_by_path(self, paths: Iterable[str] | None = None) -> list[tuple[str, Any, Any, Any, Any]]:
        """(path, title, type, status, tags) of every note (or of those among ``paths``), by path."""
        columns = "SELECT path, title, type, status, tags FROM files WHERE note=1"
        if paths is None:
            return self.db.execute(columns + " ORDER BY path").fetchall()
        return sorted(select_in(self.db, columns + " AND path IN ({marks})", sorted(set(paths))))

    def page_titles_and_tags(self) -> list[tuple[str, Any, Any]]:
        """(path, title, tags) of every note, by path."""
        return self.db.execute("SELECT path, title, tags FROM files WHERE note=1 ORDER BY path").fetchall()

    def page_names(self) -> list[tuple[str, Any, Any]]:
        """(path, title, aliases) of every note: what a name typed by a user can match."""
        return self.db.execute("SELECT path, title, aliases FROM files WHERE note=1").fetchall()

    def page_names_and_kinds(self) -> list[tuple[str, Any, Any, Any, Any]]:
        """(path, title, aliases, type, status) of every note, by path."""
        return self.db.execute("SELECT path, title, aliases, type, status FROM files WHERE note = 1 "
                               "ORDER BY path").fetchall()

    def titles_with_aliases(self) -> list[tuple[Any, str]]:
        """(title, aliases) of the files that have aliases."""
        return self.db.execute("SELECT title, aliases FROM files WHERE aliases IS NOT NULL AND "
                               "aliases NOT IN ('', '[]')").fetchall()

    def title_and_status(self, path: str) -> tuple[Any, Any] | None:
        """(title, status) of the note ``path``, or None when there is no such note."""
        return self.db.execute("SELECT title, status FROM files WHERE note=1 AND path=?", (path,)).fetchone()

    def page_kinds(self) -> list[tuple[str, Any, Any]]:
        """(path, type, status) of every note."""
        return self.db.execute("SELECT path, type, status FROM files WHERE note=1").fetchall()

    def page_mtimes(self) -> list[tuple[str, Any, Any, Any, int]]:
        """(path, title, type, status, mtime_ns) of every note."""
        return self.db.execute("SELECT path, title, type, status, mtime_ns FROM files WHERE note = 1").fetchall()

    def recently_changed(self, since_ns: int) -> list[tuple[str, int]]:
        """(path, mtime_ns) of the notes modified at or after ``since_ns``, newest first."""
        return self.db.execute("SELECT path, mtime_ns FROM files WHERE note = 1 AND mtime_ns >= ? "
                               "ORDER BY mtime_ns DESC, path", (since_ns,)).fetchall()

    def page_dates(self, paths: Iterable[str] | None = None) -> dict[str, tuple[Any, Any]]:
        """path -> (latest ``created``, latest ``updated``) over its chunks' frontmatter dates, for
        every page or only ``paths``."""
        if paths is None:
            rows = self.db.execute("SELECT path, MAX(created), MAX(updated) FROM chunks GROUP BY path")
        else:
            rows = select_in(self.db, "SELECT path, MAX(created), MAX(updated) FROM chunks WHERE path IN ({marks}) "
                                      "GROUP BY path", list(paths))
        return {path: (created, updated) for path, created, updated in rows}

    def page_problems(self) -> list[tuple[str, str]]:
        """(path, errors as JSON text) of the notes the parser found problems in."""
        return self.db.execute("SELECT path, errors FROM files WHERE note=1 AND errors NOT IN ('[]', '')").fetchall()

    def memory_kinds(self) -> list[Any]:
        """The ``kind`` frontmatter value of every memory note (None where it has none)."""
        return [kind for (kind,) in self.db.execute(
            "SELECT json_extract(page, '$.frontmatter.data.kind') FROM files WHERE note=1 AND type='memory'")]

    def page_listing(self, prefix: str, type: str | None, tag: str | None, offset: int,
                     limit: int) -> tuple[int, list[tuple]]:
        """(how many notes match, (path, title, type, status, tags) of ``limit`` of them from
        ``offset`` by path): notes under ``prefix``, of ``type``, carrying ``tag`` or a tag nested
        under it (each filter optional). Patterns are escaped: ``_`` and ``%`` in a name are literal."""
        sql, args = ["note=1"], []
        if prefix:
            sql.append("path LIKE ? ESCAPE '\\'")
            args.append(_like(prefix) + "%")
        if type:
            sql.append("type = ?")
            args.append(type)
        if tag:
            sql.append("(tags LIKE ? ESCAPE '\\' OR tags LIKE ? ESCAPE '\\')")
            args += [f'%"{_like(tag)}"%', f'%"{_like(tag)}/%']
        where = " AND ".join(sql)
        total = self.db.execute(f"SELECT count(*) FROM files WHERE {where}", args).fetchone()[0]
        rows = self.db.execute(f"SELECT path, title, type, status, tags FROM files WHERE {where} ORDER BY path "
                               "LIMIT ? OFFSET ?", (*args, limit, offset)).fetchall()
        return total, rows

    # -- edges -----------------------------------------------------------------------------
    def edges_of(self, path: str, types: Sequence[str]) -> list[tuple[str, str, str, float]]:
        """(other end, "out" | "in", type, weight) of every edge of ``types`` at ``path``."""
        marks = _marks(types)
        return self.db.execute(f"SELECT dst, 'out', type, weight FROM edges WHERE src=? AND type IN ({marks}) "
                               f"UNION ALL SELECT src, 'in', type, weight FROM edges WHERE dst=? AND type IN ({marks})",
                               (path, *types, path, *types)).fetchall()

    def linked_pages(self, path: str) -> tuple[set[str], set[str]]:
        """(what ``path`` links to, what links to it), over every edge type."""
        out = {dst for (dst,) in self.db.execute("SELECT DISTINCT dst FROM edges WHERE src = ?", (path,))}
        inc = {src for (src,) in self.db.execute("SELECT DISTINCT src FROM edges WHERE dst = ?", (path,))}
        return out, inc

    def backlinks(self, path: str, types: Sequence[str]) -> list[tuple[str, Any]]:
        """(source path, its title or None) of the other pages linking to ``path`` by ``types``, by path."""
        return self.db.execute(
            f"SELECT DISTINCT e.src, f.title FROM edges e LEFT JOIN files f ON f.path = e.src "
            f"WHERE e.dst=? AND e.src != ? AND e.type IN ({_marks(types)}) ORDER BY e.src",
            (path, path, *types)).fetchall()

    def supersede_step(self, path: str, newer: bool) -> str | None:
        """The page ``path`` supersedes (or, ``newer``, the page superseding it); the first by path."""
        sql = ("SELECT src FROM edges WHERE dst=? AND type='supersedes' ORDER BY src LIMIT 1" if newer else
               "SELECT dst FROM edges WHERE src=? AND type='supersedes' ORDER BY dst LIMIT 1")
        row = self.db.execute(sql, (path,)).fetchone()
        return None if row is None else row[0]

    def page_edges(self, types: Sequence[str]) -> list[tuple[str, str, str]]:
        """(src, dst, type) of every edge of ``types`` between two different ends."""
        return self.db.execute(f"SELECT src, dst, type FROM edges WHERE type IN ({_marks(types)}) AND src != dst",
                               tuple(types)).fetchall()

    def typed_edges(self, types: Sequence[str]) -> list[tuple[str, str, int, float]]:
        """(src, dst, position of its type in ``types``, weight) of every edge of ``types``."""
        case = " ".join(f"WHEN ? THEN {i}" for i in range(len(types)))
        return self.db.execute(f"SELECT src, dst, CASE type {case} END, weight FROM edges "
                               f"WHERE type IN ({_marks(types)})", (*types, *types)).fetchall()

    def edge_count(self, types: Sequence[str]) -> int:
        """Edges of ``types`` between two different ends."""
        return self.db.execute(f"SELECT count(*) FROM edges WHERE type IN ({_marks(types)}) AND src != dst",
                               tuple(types)).fetchone()[0]

    def inbound_counts(self, types: Sequence[str], ignoring: Sequence[str]) -> dict[str, int]:
        """page -> how many other pages link to it by ``types`` (links from ``ignoring`` not counted)."""
        return dict(self.db.execute(
            f"SELECT dst, count(DISTINCT src) FROM edges WHERE type IN ({_marks(types)}) AND src != dst "
            f"AND src NOT IN ({_marks(ignoring)}) GROUP BY dst", (*types, *ignoring)).fetchall())

    def all_edges(self) -> list[tuple[str, str, str, float]]:
        """(src, dst, type, weight) of every edge, sorted."""
        return self.db.execute("SELECT src, dst, type, weight FROM edges ORDER BY src, dst, type").fetchall()

    # -- chunks, as pages read them ---------------------------------------------------------
    def chunk_pages(self, by: str = "page") -> list[tuple[int, str]]:
        """(vector id, page path) of every chunk, in page order (``by="page"``: path, then position)
        or in vector id order (``by="vid"``)."""
        order = {"page": "path, ord", "vid": "vid"}[by]
        return self.db.execute(f"SELECT vid, path FROM chunks ORDER BY {order}").fetchall()

    def chunk_texts(self, path: str) -> list[str]:
        """The stored text of each chunk of ``path``."""
        return [text for (text,) in self.db.execute("SELECT text FROM chunks WHERE path=?", (path,))]

    def page_chunk_texts(self, paths: Iterable[str]) -> list[tuple[str, Any, Any]]:
        """(path, title, text) of every chunk of ``paths``, by path then position."""
        return list(select_in(self.db, "SELECT path, title, text FROM chunks WHERE path IN ({marks}) ORDER BY path, ord",
                              list(paths)))

    def pages_with_chunks(self) -> int:
        return self.db.execute("SELECT count(DISTINCT path) FROM chunks").fetchone()[0]
