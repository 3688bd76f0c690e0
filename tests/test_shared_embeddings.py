"""The team's embedding cache on PostgreSQL (issue 38 item 3), against a real throwaway server
(tests/pg_server.py): a second vault holding the same text embeds nothing, ``index --json`` says
how many vectors came from the cache, a server that is down costs a notice (never the build), the
password is never printed, another schema version is made again."""
from __future__ import annotations

import json

import numpy as np
import pytest
from typer.testing import CliRunner

from wikimem.api import open_vault
from wikimem.cli import app
from wikimem.stores import pg
from wikimem.stores.shared_embeddings import SharedEmbeddings

NOTES = {f"notes/n{i}.md": f"# Note {i}\n\nA sentence about topic {i} and its neighbour {i + 1}.\n" for i in range(12)}


def _vault(make_vault, name: str, url: str):
    root = make_vault({"SCHEMA.md": "# S\n", **NOTES}, name=name)
    return open_vault(root, embedder="fake", embedding_cache_url=url)


@pytest.mark.local_store
def test_a_second_vault_with_the_same_text_embeds_nothing(make_vault, pg_database):
    first = _vault(make_vault, "a", pg_database)
    report = first.index()
    assert report.embedded_now > 0 and report.vectors_from_shared == 0
    first.close()
    second = _vault(make_vault, "b", pg_database)
    report = second.index()
    assert report.embedded_now == 0 and report.vectors_from_shared == report.vectors_from_cache > 0
    assert report.coverage == 1.0
    hits = second.search("topic 3 neighbour")
    assert hits.hits and "vectors_partial" not in hits.degraded
    second.close()


@pytest.mark.local_store
def test_index_json_reports_cached_and_embedded_counts(make_vault, pg_database, tmp_path):
    _vault(make_vault, "a", pg_database).index()
    other = make_vault({"SCHEMA.md": "# S\n", **NOTES, "notes/new.md": "# New\n\nOnly this vault says this.\n"},
                       name="c")
    res = CliRunner().invoke(app, ["index", str(other), "--json"],
                             env={"WIKIMEM_EMBEDDER": "fake", "WIKIMEM_EMBEDDING_CACHE_URL": pg_database})
    assert res.exit_code == 0, res.output
    data = json.loads(res.stdout)
    assert data["vectors_from_shared"] > 0 and 0 < data["embedded_now"] < data["vectors_from_shared"]


@pytest.mark.local_store
def test_a_server_that_is_down_costs_a_notice_and_never_the_password(make_vault):
    url = "postgresql://wikimem:s3cret-pass@127.0.0.1:9/teamcache"  # port 9 (discard): nothing listens
    v = _vault(make_vault, "down", url)
    report = v.index()
    assert report.embedded_now > 0 and report.coverage == 1.0  # embedded here instead
    said = " ".join(report.notices)
    assert "shared embedding cache at 127.0.0.1:9/teamcache" in said and "s3cret" not in said
    v.close()


def test_redaction_and_server_names():
    assert pg.redact("postgresql://u:pw@db.example:5432/x") == "postgresql://u:***@db.example:5432/x"
    assert pg.redact("host=db password=pw dbname=x") == "host=db password=*** dbname=x"
    assert pg.redact("postgresql://db/x?password=pw&sslmode=require") == "postgresql://db/x?password=***&sslmode=require"
    assert pg.server_name("postgresql://u:pw@db.example:5432/x") == "db.example:5432/x"
    assert pg.server_name("postgresql://postgres:@/postgres?host=/tmp/sock") == "/tmp/sock/postgres"


def test_rows_of_another_length_are_ignored_and_a_new_schema_version_is_made_again(pg_database):
    cache = SharedEmbeddings(pg_database)
    cache.put("e", ["h1", "h2"], np.ones((2, 4), dtype=np.float32))
    assert set(cache.get("e", 4, ["h1", "h2", "h3"])) == {"h1", "h2"}
    assert cache.get("e", 8, ["h1"]) == {}  # written at another dimension: not this embedder's
    assert cache.get("other", 4, ["h1"]) == {}
    cache.close()
    db = pg.connect(pg_database, "test")
    db.execute("UPDATE wikimem_schema SET version = 0 WHERE component = 'embedding_cache'")
    db.close()
    again = SharedEmbeddings(pg_database)
    assert again.get("e", 4, ["h1"]) == {}  # another version: dropped and made again, never trusted
    assert again.count() == 0
    again.close()


def test_a_newer_wikimems_cache_is_left_alone_and_the_build_embeds_here(make_vault, pg_database):
    """A teammate's newer wikimem wrote the cache at a later schema version: this one must not drop it
    (the two would destroy each other's vectors in turn); it embeds locally and says why."""
    cache = SharedEmbeddings(pg_database)
    cache.put("e", ["h1"], np.ones((1, 4), dtype=np.float32))
    cache.close()
    db = pg.connect(pg_database, "test")
    db.execute("UPDATE wikimem_schema SET version = version + 1 WHERE component = 'embedding_cache'")
    older = SharedEmbeddings(pg_database)
    assert older.get("e", 4, ["h1"]) == {}
    assert "newer wikimem" in older.problem and "upgrade" in older.problem
    older.close()
    assert db.execute("SELECT count(*) FROM wikimem_embeddings").fetchone()[0] == 1  # untouched
    db.close()
    v = _vault(make_vault, "newer", pg_database)
    report = v.index()
    assert report.embedded_now > 0 and report.coverage == 1.0
    v.close()


def test_an_older_schema_is_migrated_when_every_step_is_there(pg_database):
    db = pg.connect(pg_database, "test")
    made = []

    def create(conn):
        made.append(1)
        conn.execute("CREATE TABLE t (a int)")

    def drop(conn):
        conn.execute("DROP TABLE t")

    assert pg.ensure_schema(db, "c", 1, create, drop) is True
    db.execute("INSERT INTO t VALUES (7)")
    steps = {1: lambda conn: conn.execute("ALTER TABLE t ADD COLUMN b int DEFAULT 2"),
             2: lambda conn: conn.execute("UPDATE t SET b = b * 10")}
    assert pg.ensure_schema(db, "c", 3, create, drop, steps) is False  # migrated: the rows kept
    assert db.execute("SELECT a, b FROM t").fetchall() == [(7, 20)] and made == [1]
    assert pg.ensure_schema(db, "c", 4, create, drop, steps) is True  # no step from 3: made again
    assert db.execute("SELECT count(*) FROM t").fetchone()[0] == 0 and made == [1, 1]
    with pytest.raises(pg.NewerSchema, match="schema version 4.*newer wikimem"):
        pg.ensure_schema(db, "c", 2, create, drop)
    assert db.execute("SELECT version FROM wikimem_schema WHERE component = 'c'").fetchone()[0] == 4
    db.close()


def test_without_psycopg_the_setting_is_one_clear_error(make_vault, monkeypatch):
    import sys
    monkeypatch.setitem(sys.modules, "psycopg", None)
    root = make_vault({"SCHEMA.md": "# S\n"}, name="nopsycopg")
    res = CliRunner().invoke(app, ["index", str(root)], env={"WIKIMEM_EMBEDDER": "fake",
                                                             "WIKIMEM_EMBEDDING_CACHE_URL": "postgresql://x/y"})
    assert res.exit_code == 2 and "team extra" in res.output and "Traceback" not in res.output


def test_doctor_says_whether_the_shared_cache_answers(make_vault, pg_database):
    from wikimem.doctor import check_shared_cache
    v = _vault(make_vault, "doc", pg_database)
    v.index()
    up = check_shared_cache(v.settings)
    assert up.status == "ok" and "vectors held" in up.detail and up.detail.split(", ")[1].split()[0] != "0"
    v.close()
    down = open_vault(make_vault({"SCHEMA.md": "# S\n"}, name="doc2"), embedder="fake",
                      embedding_cache_url="postgresql://u:topsecret@127.0.0.1:9/x")
    found = check_shared_cache(down.settings)
    assert found.status == "warn" and "127.0.0.1:9/x" in found.detail and "topsecret" not in found.detail
    assert check_shared_cache(open_vault(make_vault({"SCHEMA.md": "# S\n"}, name="doc3")).settings) is None
