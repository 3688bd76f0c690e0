"""BM25 over chunks on PostgreSQL, scored exactly as the local store's FTS5 scores them.

Why not PostgreSQL's own text search: its parsers take a Chinese sentence for one word and
``ts_rank`` has no IDF. So, as the local store does, the index holds the tokens wikimem's own
analyzer made (``analysis.tokens``: jieba for Han, Snowball stems for Latin), here as a ``jsonb``
map per chunk from term to its weighted frequency (title 2.0, headings 1.5, body 1.0, as
``lexical.FIELD_WEIGHTS``) with a GIN index, which finds the chunks holding any query term
(``tf ?| terms``), and the chunk's length in tokens. BM25 is computed in the query, term by term
in the order and arithmetic of SQLite's FTS5 ``bm25()`` (k1 1.2, b 0.75, IDF
``log((N - n + 0.5) / (n + 0.5))``, 1e-6 when not positive, average length over all chunks), so
the same chunks get the same scores and rank alike; no BM25 extension is needed (plain
PostgreSQL, any version with ``jsonb``). Document frequencies and totals are kept in ``terms``
(the key "" counts the chunks, as locally) and ``lex_totals``.

The tables live in the vault's schema beside its ``chunks`` table, which filters join
(``postgres.manifest_sql.where``). ``PgLexical`` has the methods of ``lexical.Lexical``
over a psycopg connection whose ``search_path`` is that schema (``pg_tables``).
"""
from __future__ import annotations

import json
import math
from collections import Counter
from typing import Collection, Iterable, Sequence

from ..analysis import terms
from ..filters import Filters
from ..lexical import FIELD_WEIGHTS, keep_useful
from .manifest_sql import where as where_sql

K1, B = 1.2, 0.75  # FTS5's bm25() constants
MIN_IDF = 1e-6  # FTS5: a term in more than half the rows scores this, not a negative IDF

TABLES_SQL = (
    "CREATE TABLE IF NOT EXISTS lex (vid bigint PRIMARY KEY, title text NOT NULL, headings text NOT NULL, "
    "body text NOT NULL, tf jsonb NOT NULL, dl integer NOT NULL)",
    "CREATE INDEX IF NOT EXISTS lex_tf ON lex USING gin (tf)",
    "CREATE TABLE IF NOT EXISTS terms (term text PRIMARY KEY, df bigint NOT NULL)",
    "CREATE TABLE IF NOT EXISTS lex_totals (one boolean PRIMARY KEY DEFAULT true CHECK (one), "
    "tokens bigint NOT NULL DEFAULT 0)",
)


def weighted_frequencies(title: str, headings: str, body: str) -> tuple[dict[str, float], int]:
    """({term: weighted frequency}, length in tokens) of one lexical row, as FTS5 counts them:
    each occurrence adds its column's weight; the length counts every token of every column."""
    tf: dict[str, float] = {}
    length = 0
    for text, weight in zip((title, headings, body), FIELD_WEIGHTS):
        words = text.split()
        length += len(words)
        for word in words:
            tf[word] = tf.get(word, 0.0) + weight
    return tf, length


def _document_frequencies(rows: Iterable[Sequence[str]]) -> tuple[Counter, int]:
    counts: Counter = Counter()
    n = tokens = 0
    for columns in rows:
        n += 1
        words = " ".join(columns).split()
        tokens += len(words)
        counts.update(set(words))
    counts[""] = n
    return counts, tokens


class PgLexical:
    """The lexical store on PostgreSQL (see the module docstring); ``db``: a psycopg connection
    on the vault's schema, in the caller's transaction."""

    def __init__(self, db):
        self.db = db
        self._searched: tuple[set[str], dict[str, int]] | None = None  # a search's words and their df

    @staticmethod
    def create(db) -> None:
        for statement in TABLES_SQL:
            db.execute(statement)
        db.execute("INSERT INTO lex_totals (one, tokens) VALUES (true, 0) ON CONFLICT DO NOTHING")

    # -- writes --------------------------------------------------------------------------------
    def _shift(self, counts: Counter, tokens: int, sign: int) -> None:
        with self.db.cursor() as cur:
            cur.executemany("INSERT INTO terms (term, df) VALUES (%s, %s) ON CONFLICT (term) "
                            "DO UPDATE SET df = terms.df + excluded.df", [(t, sign * n) for t, n in counts.items()])
        self.db.execute("UPDATE lex_totals SET tokens = tokens + %s", (sign * tokens,))
        if sign < 0:
            self.db.execute("DELETE FROM terms WHERE df <= 0 AND term != ''")

    def add(self, rows: Sequence[tuple[int, str, str, str]], pending: Counter | None = None) -> None:
        """Insert rows (vid, title, headings, body: analysed text, as ``lexical.row`` makes them)."""
        values = []
        for vid, title, headings, body in rows:
            tf, length = weighted_frequencies(title, headings, body)
            values.append((vid, title, headings, body, json.dumps(tf, ensure_ascii=False), length))
        with self.db.cursor() as cur:
            cur.executemany("INSERT INTO lex (vid, title, headings, body, tf, dl) VALUES (%s, %s, %s, %s, %s, %s)",
                            values)
        counts, tokens = _document_frequencies(r[1:] for r in rows)
        if pending is None:
            self._shift(counts, tokens, +1)
        else:
            pending.update(counts)
            pending[" tokens"] += tokens  # not a term: no token holds a space

    def flush(self, pending: Counter) -> None:
        tokens = pending.pop(" tokens", 0)
        self._shift(pending, tokens, +1)
        pending.clear()

    def clear(self) -> None:
        self.db.execute("DELETE FROM lex")
        self.db.execute("DELETE FROM terms")
        self.db.execute("UPDATE lex_totals SET tokens = 0")

    def remove_paths(self, paths: Iterable[str]) -> None:
        """Delete the lexical rows of these pages (call before their chunk rows are deleted)."""
        for path in paths:
            old = self.db.execute("SELECT title, headings, body FROM lex WHERE vid IN "
                                  "(SELECT vid FROM chunks WHERE path = %s)", (path,)).fetchall()
            if old:
                counts, tokens = _document_frequencies(old)
                self._shift(counts, tokens, -1)
                self.db.execute("DELETE FROM lex WHERE vid IN (SELECT vid FROM chunks WHERE path = %s)", (path,))

    # -- search --------------------------------------------------------------------------------
    def _frequencies(self, words: Sequence[str]) -> dict[str, int]:
        return dict(self.db.execute("SELECT term, df FROM terms WHERE term = ANY(%s)", (list(words),)).fetchall())

    def _statistics(self, words: Sequence[str]) -> tuple[dict[str, int], int]:
        """(the document frequencies of ``words``, the chunk count under ""; the tokens of every chunk)
        in one round trip: a search used to ask them in two."""
        df, tokens = {}, 0
        for term, n, total in self.db.execute("SELECT t.term, t.df, x.tokens FROM lex_totals x "
                                              "LEFT JOIN terms t ON t.term = ANY(%s)", (list(words),)).fetchall():
            tokens = total or 0
            if term is not None:
                df[term] = n
        return df, tokens

    def _score_sql(self, words: Sequence[str], df: dict[str, int], tokens: int) -> tuple[str, list]:
        """BM25 of ``words`` as an SQL expression over ``lex l`` and its arguments, term by term in
        FTS5's order and arithmetic (``fts5Bm25Function``), so a score is the same double; ``df``:
        the document frequencies of ``words``, the chunk count under ""; ``tokens``: every chunk's."""
        rows = df.get("", 0)
        avgdl = float(tokens) / float(rows or 1)
        parts, args = [], []
        for word in words:
            n = df.get(word, 0)
            idf = math.log((rows - n + 0.5) / (n + 0.5))
            idf = MIN_IDF if idf <= 0.0 else idf
            f = "coalesce((l.tf ->> %s)::float8, 0::float8)"
            parts.append(f"%s::float8 * (({f} * %s::float8) / ({f} + %s::float8 * "
                         "(1::float8 - %s::float8 + %s::float8 * l.dl::float8 / %s::float8)))")
            args += [idf, word, K1 + 1.0, word, K1, B, B, avgdl or 1.0]
        return "(0::float8 + " + " + ".join(parts) + ")", args

    def search(self, text: str, limit: int, filters: Filters | None = None,
               exclude: Collection[int] = ()) -> list[tuple[str, float]]:
        """Top ``limit`` chunk ids by BM25 (higher is better), ties broken by chunk id, as
        ``lexical.search`` returns them."""
        asked = terms(text)
        if not asked:
            return []
        df, tokens = self._statistics(["", *asked])  # read once: which terms to score, and their IDF
        self._searched = (set(asked), df)  # what search.rankers.lexical_reach asks next, on this object
        words = keep_useful(asked, df)  # as lexical.useful_terms: terms in over half the chunks go
        if not words:
            return []
        score, score_args = self._score_sql(words, df, tokens)
        where, where_args = where_sql(filters)
        if where:
            sql = (f"SELECT c.id, {score} AS score FROM lex l JOIN chunks c ON c.vid = l.vid "
                   f"WHERE l.tf ?| %s {where} ORDER BY score DESC, c.id LIMIT %s")
            return [(cid, float(s)) for cid, s in
                    self.db.execute(sql, (*score_args, list(words), *where_args, limit)).fetchall()]
        # the best rows first, then their ids (joined on the few kept, not on every row that matched)
        sql = (f"SELECT r.vid, r.score, c.id FROM (SELECT l.vid, {score} AS score FROM lex l WHERE l.tf ?| %s "
               "ORDER BY score DESC, l.vid LIMIT %s) r JOIN chunks c ON c.vid = r.vid ORDER BY r.score DESC, r.vid")
        hits = [(cid, float(s)) for vid, s, cid in
                self.db.execute(sql, (*score_args, list(words), limit + len(exclude))).fetchall()
                if vid not in exclude][:limit]
        hits.sort(key=lambda h: (-h[1], h[0]))
        return hits

    # -- reads ---------------------------------------------------------------------------------
    def page_terms(self, paths: Sequence[str]) -> dict[str, Counter]:
        found: dict[str, Counter] = {}
        for path, title, headings, body in self.db.execute(
                "SELECT c.path, l.title, l.headings, l.body FROM chunks c JOIN lex l ON l.vid = c.vid "
                "WHERE c.path = ANY(%s)", (list(paths),)).fetchall():
            found.setdefault(path, Counter()).update(f"{title} {headings} {body}".split())
        return found

    def document_count(self) -> int:
        row = self.db.execute("SELECT df FROM terms WHERE term = ''").fetchone()
        return int(row[0]) if row else 0

    def document_frequencies(self, words: Sequence[str]) -> dict[str, int]:
        known = self._searched
        if known is not None and set(words) <= known[0]:  # asked in the same state: no round trip
            return {t: int(known[1][t]) for t in words if t != "" and t in known[1]}
        return {t: int(n) for t, n in self._frequencies(list(words)).items() if t != ""}

    def frequencies_outside(self, words: Sequence[str], folder: str,
                            paths: Sequence[str]) -> tuple[int, dict[str, int]]:
        """As ``lexical.Lexical.frequencies_outside`` (``folder`` a LIKE prefix, case-insensitive as there)."""
        skip = "c.path NOT ILIKE %s AND NOT (c.path = ANY(%s))"
        args = (folder + "%", list(paths))
        total = self.db.execute(f"SELECT count(*) FROM chunks c WHERE {skip}", args).fetchone()[0]
        frequencies = {}
        for word in words:
            frequencies[word] = self.db.execute(
                f"SELECT count(*) FROM lex l JOIN chunks c ON c.vid = l.vid WHERE l.tf ? %s AND {skip}",
                (word, *args)).fetchone()[0]
        return int(total), {w: int(n) for w, n in frequencies.items()}
