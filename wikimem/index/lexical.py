"""BM25 over chunks with Whoosh (whoosh-reloaded). Stores only the chunk id; the manifest has the rest.

Whoosh keeps statistics of deleted documents until segments merge, which would make BM25 scores
after an edit differ from a fresh build. Commits that delete therefore merge segments, so an
incrementally updated index scores exactly like a rebuilt one.
"""
from __future__ import annotations

import shutil
from pathlib import Path
from typing import Iterable, Sequence

from whoosh import index as windex
from whoosh import query as Q
from whoosh.fields import ID, KEYWORD, TEXT, Schema
from whoosh.scoring import BM25F

from ..model import Chunk
from .analysis import mixed_analyzer, terms

FIELD_BOOSTS = {"body": 1.0, "headings": 1.5, "title": 2.0}


def make_schema() -> Schema:
    analyzer = mixed_analyzer()
    return Schema(
        id=ID(stored=True, unique=True),
        path=ID,
        folder=KEYWORD(commas=True),
        title=TEXT(analyzer=analyzer),
        headings=TEXT(analyzer=analyzer),
        body=TEXT(analyzer=analyzer),
        tags=KEYWORD(commas=True, lowercase=True),
        type=ID,
        status=ID,
        updated=ID,
    )


def folders_of(path: str) -> str:
    parts = path.split("/")[:-1]
    return ",".join("/".join(parts[: i + 1]) for i in range(len(parts)))


def document(chunk: Chunk) -> dict[str, str]:
    return {
        "id": chunk.id,
        "path": chunk.path,
        "folder": folders_of(chunk.path),
        "title": chunk.title,
        "headings": " ".join(chunk.heading_path),
        "body": chunk.text,
        "tags": ",".join(chunk.tags),
        "type": chunk.type,
        "status": chunk.status,
        "updated": (chunk.updated or chunk.date or chunk.created or "")[:10],
    }


class LexicalIndex:
    def __init__(self, path: Path):
        self.path = path
        self._ix = None
        self._searcher = None

    def exists(self) -> bool:
        """True when a readable index is there (a damaged one counts as absent)."""
        try:
            return self.path.exists() and windex.exists_in(str(self.path))
        except Exception:  # whoosh raises EOFError, IndexError, pickle errors... on damaged files
            return False

    def create(self) -> None:
        self.close()
        shutil.rmtree(self.path, ignore_errors=True)
        self.path.mkdir(parents=True)
        self._ix = windex.create_in(str(self.path), make_schema())

    @property
    def ix(self):
        if self._ix is None:
            self._ix = windex.open_dir(str(self.path))
        return self._ix

    def update(self, remove_paths: Iterable[str], add: Sequence[Chunk], progress=None) -> None:
        remove_paths = list(remove_paths)
        if not remove_paths and not add:
            return
        self.close_searcher()
        writer = self.ix.writer(limitmb=256)
        try:
            for path in remove_paths:
                writer.delete_by_term("path", path)
            for i, chunk in enumerate(add):
                writer.add_document(**document(chunk))
                if progress and i % 500 == 0:
                    progress("lexical", i, len(add))
        except BaseException:
            writer.cancel()
            raise
        # merge segments holding deletions so BM25 statistics equal a fresh build's
        writer.commit(optimize=bool(remove_paths))
        if progress:
            progress("lexical", len(add), len(add))

    def doc_count(self) -> int:
        return self.ix.doc_count()

    def close_searcher(self) -> None:
        if self._searcher is not None:
            self._searcher.close()
            self._searcher = None

    def close(self) -> None:
        self.close_searcher()
        if self._ix is not None:
            self._ix.close()
            self._ix = None

    def searcher(self):
        if self._searcher is None:
            self._searcher = self.ix.searcher(weighting=BM25F(B=0.75, K1=1.2))
        return self._searcher

    def search(self, text: str, limit: int, filter_q=None, mask_q=None) -> list[tuple[str, float]]:
        words = terms(text)
        if not words:
            return []
        q = Q.Or([Q.Term(field, w, boost=boost) for w in words for field, boost in FIELD_BOOSTS.items()])
        results = self.searcher().search(q, limit=limit, filter=filter_q, mask=mask_q)
        hits = [(hit["id"], float(hit.score)) for hit in results]
        hits.sort(key=lambda h: (-round(h[1], 9), h[0]))
        return hits


def filter_query(folder: str | None = None, type: str | None = None, tags: Sequence[str] | None = None,
                 since: str | None = None, until: str | None = None):
    parts = []
    if folder:
        parts.append(Q.Term("folder", folder.strip("/")))
    if type:
        parts.append(Q.Term("type", type))
    for tag in tags or ():
        parts.append(Q.Term("tags", tag.lstrip("#").lower()))
    if since or until:
        parts.append(Q.TermRange("updated", since or None, until or None))
    if not parts:
        return None
    return parts[0] if len(parts) == 1 else Q.And(parts)
