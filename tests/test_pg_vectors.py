"""The vector store on PostgreSQL + pgvector (issue 38 item 1) against the local FAISS flat index,
on a real throwaway server (tests/pg_server.py): the same top-10 in the same order (float32), the
same top-10 as a set for nearly every query in halfvec, filters and held vectors as locally, an
HNSW index that keeps recall@10 >= 0.95."""
from __future__ import annotations

import numpy as np
import psycopg
import pytest

from wikimem.stores.postgres import tables as pg_tables
from wikimem.stores.postgres.vectors import PgVectorIndex
from wikimem.stores.local.vectors import HELD_BIT, VectorIndex
from wikimem.stores.vectorstore import VectorStore

DIM = 384


def _unit(rows: np.ndarray) -> np.ndarray:
    return (rows / np.linalg.norm(rows, axis=1, keepdims=True)).astype(np.float32)


@pytest.fixture(scope="module")
def corpus():
    """3,000 vectors in 60 clusters (texts on a few topics are like this; random vectors in 384
    dimensions are all nearly orthogonal and every query would be a tie), 40 queries near them."""
    rng = np.random.default_rng(7)
    centres = rng.normal(size=(60, DIM))
    rows = _unit(centres[rng.integers(0, 60, 3000)] + 0.6 * rng.normal(size=(3000, DIM)))
    queries = _unit(centres[rng.integers(0, 60, 40)] + 0.8 * rng.normal(size=(40, DIM)))
    ids = np.arange(1, 3001, dtype=np.int64) * 7919
    return ids, rows, queries


def _local(tmp_path, ids, rows) -> VectorIndex:
    index = VectorIndex(tmp_path / "v.faiss", DIM)
    index.add(ids, rows)
    return index


def _remote(url: str, kind: str, ids, rows) -> PgVectorIndex:
    db = psycopg.connect(url, autocommit=True, prepare_threshold=None)
    pg_tables.ensure(db, pg_tables.schema_name(f"vectors-{kind}"))
    index = PgVectorIndex(db, DIM, kind)
    index.add(ids, rows)
    return index


def test_float32_ranks_as_faiss_does(tmp_path, pg_database, corpus):
    ids, rows, queries = corpus
    local, remote = _local(tmp_path, ids, rows), _remote(pg_database, "vector", ids, rows)
    assert isinstance(remote, VectorStore)
    assert remote.ntotal == local.ntotal == len(ids) and remote.held_total == 0
    for q in queries:
        a, b = local.search(q, 10), remote.search(q, 10)
        assert [i for i, _ in a] == [i for i, _ in b]
        assert np.allclose([s for _, s in a], [s for _, s in b], atol=1e-5)
    allowed = ids[::3].tolist()
    for q in queries[:10]:
        assert [i for i, _ in local.search(q, 10, allowed)] == [i for i, _ in remote.search(q, 10, allowed)]
    assert remote.search(queries[0], 10, []) == []
    got = remote.get(ids[:5].tolist() + [12345])
    assert sorted(got) == sorted(ids[:5].tolist())
    assert np.allclose(got[int(ids[0])], rows[0], atol=1e-6)
    assert not remote.vector_rows([12345]).any()
    remote.db.close()


def test_halfvec_keeps_the_top_ten(tmp_path, pg_database, corpus):
    ids, rows, queries = corpus
    local, remote = _local(tmp_path, ids, rows), _remote(pg_database, "halfvec", ids, rows)
    same_set = overlap = 0
    for q in queries:
        a = [i for i, _ in local.search(q, 10)]
        b = [i for i, _ in remote.search(q, 10)]
        same_set += set(a) == set(b)
        overlap += len(set(a) & set(b))
    assert overlap / (10 * len(queries)) >= 0.98, overlap
    assert same_set >= 0.9 * len(queries), same_set
    remote.db.close()


def test_held_vectors_are_kept_but_never_searched_and_removal_forgets(pg_database, corpus):
    ids, rows, queries = corpus
    remote = _remote(pg_database, "vector", ids[:100], rows[:100])
    held = np.array([HELD_BIT | 5, HELD_BIT | 6], dtype=np.int64)
    remote.add(held, rows[:2])  # the same vectors as two searched rows: a search would find them first
    assert remote.held_total == 2 and remote.ntotal == 102
    top = [i for i, _ in remote.search(rows[0], 5)]
    assert top[0] == ids[0] and not any(i & HELD_BIT for i in top)
    assert set(remote.get(held.tolist())) == set(held.tolist())
    searched_ids, searched_rows = remote.searched()
    assert len(searched_ids) == 100 and searched_rows.shape == (100, DIM)
    remote.remove([int(ids[0]), int(held[0])])
    assert remote.ntotal == 100 and ids[0] not in [i for i, _ in remote.search(rows[0], 5)]
    remote.add(ids[1:2], rows[3:4])  # an id given again replaces its vector
    assert np.allclose(remote.get([int(ids[1])])[int(ids[1])], rows[3], atol=1e-6)
    remote.db.close()


def test_an_hnsw_index_keeps_recall(pg_database, corpus):
    ids, rows, queries = corpus
    remote = _remote(pg_database, "halfvec", ids, rows)
    exact = [{i for i, _ in remote.search(q, 10)} for q in queries]
    assert remote.ensure_index(rows_from=10**9) is False  # too small: no index
    assert remote.ensure_index(rows_from=1000) is True
    plan = remote.db.execute("EXPLAIN SELECT vid FROM vecs WHERE NOT held ORDER BY vec <#> %s::halfvec LIMIT 10",
                             (remote._as_param(queries[:1])[0],)).fetchall()
    assert any("vecs_hnsw" in line[0] for line in plan)  # the search now goes through the index
    found = [{i for i, _ in remote.search(q, 10)} for q in queries]
    recall = sum(len(a & b) for a, b in zip(exact, found)) / (10 * len(queries))
    assert recall >= 0.95, recall
    remote.db.close()


def test_an_unknown_column_type_is_refused(pg_database):
    with psycopg.connect(pg_database, autocommit=True) as db:
        with pytest.raises(ValueError, match="halfvec"):
            PgVectorIndex(db, DIM, "float16")


@pytest.mark.parametrize("kind", ["vector", "halfvec"])
def test_rows_read_packed_are_the_rows_stored(pg_database, corpus, kind, monkeypatch):
    """``vectors`` reads many rows as one packed value per batch: the same floats as pgvector's own
    loader gives row by row (float32 exactly; halfvec as its float16 values), any batch size."""
    from pgvector import HalfVector, Vector
    from pgvector.psycopg import register_vector
    from wikimem.stores.postgres import vectors as pg_vectors
    ids, rows, _ = corpus
    remote = _remote(pg_database, kind, ids[:50], rows[:50])
    register_vector(remote.db)
    loaded = {int(v): np.asarray((vec.to_numpy() if isinstance(vec, (Vector, HalfVector)) else vec), dtype=np.float32)
              for v, vec in remote.db.execute("SELECT vid, vec FROM vecs", binary=True).fetchall()}
    monkeypatch.setattr(pg_vectors, "PACKED_BATCH", 7)
    wanted = ids[:50:2].tolist() + [12345]
    got = remote.vectors(wanted)
    assert sorted(got) == sorted(ids[:50:2].tolist())
    for vid, vec in got.items():
        assert vec.dtype == np.float32 and np.array_equal(vec, loaded[vid])
    expected = rows[:50:2].astype(np.float16).astype(np.float32) if kind == "halfvec" else rows[:50:2]
    assert np.array_equal(np.stack([got[int(i)] for i in ids[:50:2]]), expected)
    assert remote.vectors([]) == {}
    remote.db.close()
