"""BM25 over chunks with SQLite FTS5, in the manifest database.

Why FTS5 and not Whoosh (design.md named Whoosh): measured on a 10,000-note vault here, Whoosh
took 62 s to index 40k chunks and 43 s to re-index one edited note, because its BM25 statistics
count deleted documents until segments merge and only a full merge makes an incremental index
score like a fresh build. FTS5 keeps exact statistics under deletes, runs in C, and commits in the
same transaction as the manifest, so the lexical side can never disagree with the chunk table.

Rows are keyed by the chunk's vector id; columns hold pre-tokenised text (``stores/lexical.py``'s
``row``, shared with PostgreSQL's store, as are the field weights and the term choice).
``Lexical`` is the lexical store's interface over one manifest connection (its FTS5 SQL stays here,
beside the functions it is made of, which search still calls with a connection).
"""
from __future__ import annotations

import sqlite3
from collections import Counter
from typing import Collection, Iterable, Sequence

from ...errors import WikimemError
from ..analysis import terms
from ..filters import Filters
from ..lexical import FIELD_WEIGHTS, _document_frequencies, keep_useful
from .manifest_sql import where as where_sql
CREATE = ("CREATE VIRTUAL TABLE IF NOT EXISTS lex USING fts5(title, headings, body, "
          "tokenize='unicode61 remove_diacritics 0')")


def ensure_table(db: sqlite3.Connection) -> None:
    try:
        db.execute(CREATE)
    except sqlite3.OperationalError as exc:
        if "fts5" in str(exc).lower():
            raise WikimemError("this Python's SQLite lacks the FTS5 extension that wikimem's lexical index "
                               "needs; use a Python build with a standard SQLite (python.org, Debian, Homebrew)") from None
        raise


def _shift_frequencies(db: sqlite3.Connection, counts: Counter, sign: int) -> None:
    db.executemany("INSERT INTO terms(term, df) VALUES (?, ?) ON CONFLICT(term) DO UPDATE SET df = df + excluded.df",
                   ((t, sign * n) for t, n in counts.items()))
    if sign < 0:
        db.execute("DELETE FROM terms WHERE df <= 0 AND term != ''")


def add(db: sqlite3.Connection, rows: Sequence[tuple[int, str, str, str]], pending: Counter | None = None) -> None:
    """Insert rows. Document frequencies go straight to the table, or into ``pending`` for one
    write at the end of a build (``flush``): per-page upserts cost more than the inserts."""
    db.executemany("INSERT INTO lex(rowid, title, headings, body) VALUES (?,?,?,?)", rows)
    counts = _document_frequencies(r[1:] for r in rows)
    if pending is None:
        _shift_frequencies(db, counts, +1)
    else:
        pending.update(counts)


def flush(db: sqlite3.Connection, pending: Counter) -> None:
    _shift_frequencies(db, pending, +1)
    pending.clear()


def clear(db: sqlite3.Connection) -> None:
    db.execute("DELETE FROM lex")
    db.execute("DELETE FROM terms")


def remove_paths(db: sqlite3.Connection, paths: Iterable[str]) -> None:
    """Delete the lexical rows of these pages (call before their chunk rows are deleted)."""
    for path in paths:
        old = db.execute("SELECT title, headings, body FROM lex WHERE rowid IN (SELECT vid FROM chunks WHERE path=?)",
                         (path,)).fetchall()
        if old:
            _shift_frequencies(db, _document_frequencies(old), -1)
            db.execute("DELETE FROM lex WHERE rowid IN (SELECT vid FROM chunks WHERE path=?)", (path,))


def useful_terms(db: sqlite3.Connection, words: Sequence[str]) -> list[str]:
    """Drop terms found in more than half of all chunks. FTS5's BM25 gives such terms an IDF of
    1e-6, so they change no ranking, yet scoring them means reading half the index. If every term
    is that common, the rarest one is kept."""
    if not words:
        return []
    marks = ",".join("?" * len(words))
    df = dict(db.execute(f"SELECT term, df FROM terms WHERE term IN ('', {marks})", list(words)).fetchall())
    return keep_useful(words, df)


def match_expression(words: Sequence[str]) -> str | None:
    if not words:
        return None
    return " OR ".join('"' + w.replace('"', '""') + '"' for w in words)


def search(db: sqlite3.Connection, text: str, limit: int, filters: Filters | None = None,
           exclude: Collection[int] = ()) -> list[tuple[str, float]]:
    """Top ``limit`` chunk ids by BM25 (higher is better), ties broken by chunk id.

    ``filters`` narrow through a join on the chunk table; ``exclude`` (a few vector ids, e.g.
    superseded chunks) is dropped after an over-fetch, which avoids the join's cost."""
    where, args = where_sql(filters)
    expr = match_expression(useful_terms(db, terms(text)))
    if expr is None:
        return []
    w = ", ".join(str(x) for x in FIELD_WEIGHTS)
    if where:
        sql = (f"SELECT c.id, -bm25(lex, {w}) AS score FROM lex JOIN chunks c ON c.vid = lex.rowid "
               f"WHERE lex MATCH ? {where} ORDER BY score DESC, c.id LIMIT ?")
        return [(cid, float(score)) for cid, score in db.execute(sql, (expr, *args, limit))]
    sql = f"SELECT rowid, -bm25(lex, {w}) AS score FROM lex WHERE lex MATCH ? ORDER BY score DESC, rowid LIMIT ?"
    ranked = [(vid, float(s)) for vid, s in db.execute(sql, (expr, limit + len(exclude))) if vid not in exclude][:limit]
    if not ranked:
        return []
    marks = ",".join("?" * len(ranked))
    ids = dict(db.execute(f"SELECT vid, id FROM chunks WHERE vid IN ({marks})", [v for v, _ in ranked]).fetchall())
    hits = [(ids[v], s) for v, s in ranked if v in ids]
    hits.sort(key=lambda h: (-h[1], h[0]))
    return hits


class Lexical:
    """The lexical store: BM25 over chunks (FTS5) and the term document frequencies beside it, on
    one manifest connection, so its writes share the build's transaction with the chunk rows. A
    backend on another engine (OpenSearch, design.md §9) implements these methods."""

    def __init__(self, db: sqlite3.Connection):
        self.db = db

    def add(self, rows: Sequence[tuple[int, str, str, str]], pending: Counter | None = None) -> None:
        add(self.db, rows, pending)

    def flush(self, pending: Counter) -> None:
        flush(self.db, pending)

    def clear(self) -> None:
        clear(self.db)

    def remove_paths(self, paths: Iterable[str]) -> None:
        remove_paths(self.db, paths)

    def search(self, text: str, limit: int, filters: Filters | None = None,
               exclude: Collection[int] = ()) -> list[tuple[str, float]]:
        return search(self.db, text, limit, filters, exclude)

    def page_terms(self, paths: Sequence[str]) -> dict[str, Counter]:
        """Each page's index terms with how often it uses them (title, headings and body of its
        chunks, as tokenised at build time: nothing is segmented or stemmed again)."""
        found: dict[str, Counter] = {}
        paths = list(paths)
        for start in range(0, len(paths), 500):
            part = paths[start:start + 500]
            for path, title, headings, body in self.db.execute(
                    "SELECT c.path, l.title, l.headings, l.body FROM chunks c JOIN lex l ON l.rowid = c.vid "
                    f"WHERE c.path IN ({','.join('?' * len(part))})", part):
                found.setdefault(path, Counter()).update(f"{title} {headings} {body}".split())
        return found

    def document_count(self) -> int:
        """How many chunks the index holds (kept under the term "")."""
        row = self.db.execute("SELECT df FROM terms WHERE term = ''").fetchone()
        return row[0] if row else 0

    def document_frequencies(self, words: Sequence[str]) -> dict[str, int]:
        """term -> how many chunks hold it, for the terms of ``words`` the index has."""
        out: dict[str, int] = {}
        words = list(words)
        for start in range(0, len(words), 500):
            part = words[start:start + 500]
            out.update(self.db.execute(f"SELECT term, df FROM terms WHERE term IN ({','.join('?' * len(part))})",
                                       part).fetchall())
        return out

    def frequencies_outside(self, words: Sequence[str], folder: str,
                            paths: Sequence[str]) -> tuple[int, dict[str, int]]:
        """(chunks outside ``folder`` and ``paths``, {word: how many of them hold it}): document
        frequencies over part of the vault, by an exact FTS5 phrase match per word (``folder`` is
        compared as SQL's LIKE does: ASCII case-insensitive)."""
        skip = f"c.path NOT LIKE ? AND c.path NOT IN ({','.join('?' * len(paths))})"
        args = (folder + "%", *paths)
        total = self.db.execute(f"SELECT count(*) FROM chunks c WHERE {skip}", args).fetchone()[0]
        frequencies = {}
        for word in words:
            frequencies[word] = self.db.execute(
                f"SELECT count(*) FROM lex JOIN chunks c ON c.vid = lex.rowid WHERE lex MATCH ? AND {skip}",
                ('"' + word.replace('"', '""') + '"', *args)).fetchone()[0]
        return total, frequencies
