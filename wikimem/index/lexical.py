"""BM25 over chunks with SQLite FTS5, in the manifest database.

Why FTS5 and not Whoosh (design.md named Whoosh): measured on a 10,000-note vault here, Whoosh
took 62 s to index 40k chunks and 43 s to re-index one edited note, because its BM25 statistics
count deleted documents until segments merge and only a full merge makes an incremental index
score like a fresh build. FTS5 keeps exact statistics under deletes, runs in C, and commits in the
same transaction as the manifest, so the lexical side can never disagree with the chunk table.

Rows are keyed by the chunk's vector id; columns hold pre-tokenised text (see analysis.py).
"""
from __future__ import annotations

import sqlite3
from typing import Iterable, Sequence

from ..errors import WikimemError
from ..model import Chunk
from .analysis import terms, tokens

FIELD_WEIGHTS = (2.0, 1.5, 1.0)  # title, headings, body
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


def row(vid: int, chunk: Chunk) -> tuple[int, str, str, str]:
    return (vid, " ".join(tokens(chunk.title)), " ".join(tokens(" ".join(chunk.heading_path))),
            " ".join(tokens(chunk.text)))


def add(db: sqlite3.Connection, rows: Iterable[tuple[int, str, str, str]]) -> None:
    db.executemany("INSERT INTO lex(rowid, title, headings, body) VALUES (?,?,?,?)", rows)


def remove_paths(db: sqlite3.Connection, paths: Iterable[str]) -> None:
    """Delete the lexical rows of these pages (call before their chunk rows are deleted)."""
    db.executemany("DELETE FROM lex WHERE rowid IN (SELECT vid FROM chunks WHERE path=?)", ((p,) for p in paths))


def match_expression(text: str) -> str | None:
    words = terms(text)
    if not words:
        return None
    return " OR ".join('"' + w.replace('"', '""') + '"' for w in words)


def search(db: sqlite3.Connection, text: str, limit: int, where: str = "", args: Sequence = ()) -> list[tuple[str, float]]:
    """Top ``limit`` chunk ids by BM25 (higher is better), ties broken by chunk id."""
    expr = match_expression(text)
    if expr is None:
        return []
    w = ", ".join(str(x) for x in FIELD_WEIGHTS)
    sql = (f"SELECT c.id, -bm25(lex, {w}) AS score FROM lex JOIN chunks c ON c.vid = lex.rowid "
           f"WHERE lex MATCH ? {where} ORDER BY score DESC, c.id LIMIT ?")
    return [(cid, float(score)) for cid, score in db.execute(sql, (expr, *args, limit))]
