"""Chunk and passage rows read once per search snapshot on PostgreSQL.

A hybrid search asks the manifest about the same candidates several times, each step for the
columns it needs: chunk ids by vector id, speakers, texts, paths, vector ids by chunk id, whole
chunks; passage owners, passage texts twice. Locally each is a few microseconds; on PostgreSQL each
is a round trip (a hybrid search sent 26 statements, eleven of them such reads). Inside a
``snapshot()`` (REPEATABLE READ, read only) nothing read can change, so the first read of a row
fetches the whole row and the later questions about it are answered from here: the cache lives
exactly as long as the snapshot (``PgDB.rows`` is set by ``snapshot()`` and dropped after it).
"""
from __future__ import annotations

from typing import Any, Callable, Iterable

from ..manifest import CHUNK_COLUMNS

VID, ID, PATH, ORD = (CHUNK_COLUMNS.index(c) for c in ("vid", "id", "path", "ord"))
TEXT, SPEAKERS = CHUNK_COLUMNS.index("text"), CHUNK_COLUMNS.index("speakers")


class SnapshotRows:
    """Whole chunk rows by id and by vector id, (chunk vid, text) of passages by passage id, and
    which ids were asked and are not there (a vector id that is a chunk's, not a passage's)."""

    def __init__(self) -> None:
        self.by_id: dict[str, tuple] = {}
        self.by_vid: dict[int, tuple] = {}
        self.no_id: set[str] = set()
        self.no_vid: set[int] = set()
        self.passages: dict[int, tuple[int, Any]] = {}
        self.no_pid: set[int] = set()

    def chunks(self, keys: Iterable, by_vid: bool, fetch: Callable[[str, list], Iterable[tuple]],
               statement: str) -> dict:
        """key -> whole chunk row, for the keys the table holds; only the keys not seen yet are
        fetched (``fetch(statement, keys)``, one statement)."""
        held, absent, key_of = (self.by_vid, self.no_vid, VID) if by_vid else (self.by_id, self.no_id, ID)
        keys = list(dict.fromkeys(keys))
        missing = [k for k in keys if k not in held and k not in absent]
        if missing:
            for row in fetch(statement, missing):
                row = tuple(row)
                self.by_id[row[ID]] = row
                self.by_vid[row[VID]] = row
            absent.update(k for k in missing if k not in held)
        return {k: held[k] for k in keys if k in held}

    def add_passages(self, rows: Iterable[tuple]) -> None:
        for pid, vid, text in rows:
            self.passages[pid] = (vid, text)

    def passage_rows(self, pids: Iterable[int], fetch: Callable[[str, list], Iterable[tuple]],
                     statement: str) -> dict[int, tuple[int, Any]]:
        """passage id -> (chunk vid, text), for the ids that are passages."""
        pids = list(dict.fromkeys(pids))
        missing = [p for p in pids if p not in self.passages and p not in self.no_pid]
        if missing:
            for pid, vid, text in fetch(statement, missing):
                self.passages[pid] = (vid, text)
            self.no_pid.update(p for p in missing if p not in self.passages)
        return {p: self.passages[p] for p in pids if p in self.passages}
