"""The lexical index's rows and BM25 term choice, shared by both engines' lexical stores.

Rows are keyed by the chunk's vector id; columns hold wikimem's own pre-tokenised text (see
analysis.py: jieba for Han, Snowball stems for Latin), so both engines index the same terms and
score BM25 alike: SQLite FTS5 (``local/lexical.py``) and PostgreSQL (``postgres/lexical.py``, which
computes FTS5's ``bm25()`` in its query). What is not SQL is here, once: the row a chunk becomes,
the field weights, and which query terms are worth scoring (``keep_useful``).
"""
from __future__ import annotations

from collections import Counter
from functools import lru_cache
from typing import Iterable, Sequence

from ..model import Chunk
from .analysis import tokens

FIELD_WEIGHTS = (2.0, 1.5, 1.0)  # title, headings, body


@lru_cache(maxsize=4096)
def _analysed(text: str) -> str:
    """A page's title (and a heading path) tokenised once for all its chunks: a 1 MiB page has
    ~1,300 chunks that all carry the same title."""
    return " ".join(tokens(text))


def row(vid: int, chunk: Chunk) -> tuple[int, str, str, str]:
    return (vid, _analysed(chunk.index_title()), _analysed(" ".join(chunk.heading_path)),
            " ".join(tokens(chunk.index_body())))


def _document_frequencies(rows: Iterable[Sequence[str]]) -> Counter:
    """How many of these rows contain each term (in any column); the key "" counts the rows."""
    counts: Counter = Counter()
    n = 0
    for columns in rows:
        n += 1
        counts.update(set(" ".join(columns).split()))
    counts[""] = n
    return counts


def keep_useful(words: Sequence[str], df: dict[str, int]) -> list[str]:
    """``useful_terms``'s choice from the document frequencies (``df[""]``: the chunk count); the
    PostgreSQL store makes the same one (``postgres.lexical``)."""
    total = df.get("", 0)
    kept = [w for w in words if 0 < df.get(w, 0) and 2 * df[w] <= total]
    if not kept:
        present = [w for w in words if df.get(w, 0) > 0]
        kept = sorted(present, key=lambda w: (df[w], w))[:1]
    return kept
