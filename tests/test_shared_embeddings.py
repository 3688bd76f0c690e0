"""The team's embedding cache on PostgreSQL (issue 38 item 3), against a real throwaway server
(tests/pg_server.py): a second vault holding the same text embeds nothing, ``index --json`` says
how many vectors came from the cache, a server that is down costs a notice (never the build), the
password is never printed, another schema version is made again."""
from __future__ import annotations

import json
import shutil

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
