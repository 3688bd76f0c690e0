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
