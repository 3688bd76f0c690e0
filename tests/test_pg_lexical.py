"""The lexical store on PostgreSQL (issue 38 item 2) against the local FTS5 store, on a real
throwaway server (tests/pg_server.py): the same chunks are found in the same order with the same
BM25 scores, with every filter, for English and Chinese, after pages are removed and added again;
two vaults in one database cannot read each other's rows."""
from __future__ import annotations

import json
from pathlib import Path

import psycopg
import pytest

from conftest import copy_vault
from wikimem.api import open_vault
from wikimem.stores.postgres import tables as pg_tables
from wikimem.stores.filters import Filters
from wikimem.stores.local.lexical import Lexical
from wikimem.stores.manifest import CHUNK_COLUMNS
from wikimem.stores.postgres.lexical import PgLexical, weighted_frequencies

ROOT = Path(__file__).resolve().parents[1]

CHINESE = {
    "concepts/倒排索引.md": "---\ntags: [检索]\n---\n# 倒排索引\n\n倒排索引把每个词映射到包含它的文档列表，"
                         "全文检索用它快速找到候选文档。\n\n## 压缩\n\n文档编号的差值用变长编码压缩，节省磁盘空间。\n",
    "concepts/中文分词.md": "# 中文分词\n\n中文句子没有空格，检索前要先分词：结巴分词用词典和隐马尔可夫模型切分句子。"
                        "分词的好坏直接影响倒排索引的召回率。\n",
    "entities/结巴.md": "---\ntype: tool\n---\n# 结巴\n\n结巴是一个 Python 中文分词库，支持搜索引擎模式，"
                      "把长词再切成短词以提高召回。\n",
}

QUERIES = [q["q"] for q in json.loads((ROOT / "benchmarks/heldout-examples.json").read_text())["queries"]] + [
    "倒排索引", "中文分词 召回率", "结巴 搜索引擎模式", "文档 压缩 磁盘", "BM25 倒排索引", "jieba",
    "rrf", "fusion", "ranking", "the", "zzzz-nothing",
]

FILTERS = [
    None,
    Filters(),
    Filters(include_superseded=True),
    Filters(folder="concepts"),
    Filters(folder="Concepts"),  # SQLite's LIKE is case-insensitive for ASCII: so is the Postgres side
    Filters(tags=("检索",)),
    Filters(type="tool"),
    Filters(paths=frozenset({"concepts/BM25.md", "concepts/倒排索引.md", "entities/结巴.md"})),
    Filters(paths=frozenset()),
    Filters(not_pages=frozenset({"concepts/BM25.md"})),
    Filters(since="2000-01-01"),
]


@pytest.fixture(scope="module")
def local_vault(tmp_path_factory):
    root = tmp_path_factory.mktemp("pglex") / "vault"
    copy_vault(ROOT / "examples", root)
    for rel, text in CHINESE.items():
        (root / rel).write_text(text, encoding="utf-8")
    vault = open_vault(root, embedder="fake")
    vault.index()
    yield vault
    vault.close()


def _local_rows(vault):
    db = vault.cache.manifest.db
    chunks = db.execute(f"SELECT {','.join(CHUNK_COLUMNS)} FROM chunks ORDER BY vid").fetchall()
    lex = db.execute("SELECT rowid, title, headings, body FROM lex ORDER BY rowid").fetchall()
    return chunks, lex


def _load(db, schema: str, chunks, lex) -> None:
    pg_tables.ensure(db, schema)
    columns = ",".join(CHUNK_COLUMNS)
    with db.transaction():
        with db.cursor() as cur:
            cur.executemany(f"INSERT INTO chunks ({columns}) VALUES ({','.join(['%s'] * len(CHUNK_COLUMNS))})", chunks)
        PgLexical(db).add(lex)


def _connect(url: str):
    return psycopg.connect(url, autocommit=True, prepare_threshold=None)


def _compare(local: Lexical, remote: PgLexical, queries, filters_list, exclude=()) -> list[str]:
    differences = []
    for query in queries:
        for filters in filters_list:
            a = local.search(query, 10, filters, exclude)
            b = remote.search(query, 10, filters, exclude)
            if [h[0] for h in a] != [h[0] for h in b]:
                differences.append(f"{query!r} {filters}: {a[:3]} != {b[:3]}")
            elif any(abs(x[1] - y[1]) > 1e-9 * max(1.0, abs(x[1])) for x, y in zip(a, b)):
                differences.append(f"{query!r} {filters}: scores {a[:3]} != {b[:3]}")
    return differences


def test_the_same_chunks_rank_alike_with_the_same_scores(local_vault, pg_database):
    chunks, lex = _local_rows(local_vault)
    with _connect(pg_database) as db:
        _load(db, pg_tables.schema_name("examples"), chunks, lex)
        local = Lexical(local_vault.cache.manifest.db)
        remote = PgLexical(db)
        assert remote.document_count() == local.document_count() == len(lex)
        hits = [remote.search(q, 10) for q in QUERIES]
        assert sum(1 for h in hits if h) >= len(QUERIES) - 2  # the comparison is over real rankings
        page_of = {row[1]: row[2] for row in chunks}
        assert "concepts/倒排索引.md" in {page_of[cid] for cid, _ in remote.search("倒排索引", 3)}
        assert _compare(local, remote, QUERIES, FILTERS) == []
        superseded = local_vault.cache.manifest.superseded_vids()
        assert superseded  # examples/ has a superseded page: the over-fetch-and-drop path runs
        assert _compare(local, remote, QUERIES[:20], [None], exclude=superseded) == []
        # the readers other stages ask
        paths = ["concepts/BM25.md", "concepts/中文分词.md"]
        assert remote.page_terms(paths) == local.page_terms(paths)
        words = ["bm25", "倒排索引", "rank", "nothing-here"]
        assert remote.document_frequencies(words) == local.document_frequencies(words)
        assert remote.frequencies_outside(words, "queries/", ["index.md"]) == \
            local.frequencies_outside(words, "queries/", ["index.md"])


def test_removing_and_adding_pages_keeps_the_statistics_exact(local_vault, pg_database):
    chunks, lex = _local_rows(local_vault)
    gone = ["concepts/BM25.md", "concepts/中文分词.md", "entities/Stephen Robertson.md"]
    with _connect(pg_database) as db, local_vault.cache.writing() as manifest:
        _load(db, pg_tables.schema_name("examples"), chunks, lex)
        local, remote = manifest.lexical, PgLexical(db)
        with db.transaction():
            remote.remove_paths(gone)
        local.remove_paths(gone)
        assert remote.document_count() == local.document_count() < len(lex)
        assert _compare(local, remote, QUERIES, [None, Filters(folder="concepts")]) == []
        vids = {r[0] for r in chunks if r[2] in gone}
        back = [r for r in lex if r[0] in vids]
        with db.transaction():
            remote.add(back)
        local.add(back)
        assert remote.document_count() == local.document_count() == len(lex)
        assert _compare(local, remote, QUERIES, [None, Filters(folder="concepts")]) == []


def test_two_vaults_in_one_database_cannot_read_each_other(local_vault, pg_database):
    """By name, a vault's connection sees its own tables only; with a role per vault (docs/teams.md)
    naming the other schema outright is refused by the server."""
    chunks, lex = _local_rows(local_vault)
    mine, theirs = pg_tables.schema_name("team/a"), pg_tables.schema_name("team/b")
    assert mine != theirs and len(mine) <= 63
    with _connect(pg_database) as a, _connect(pg_database) as b:
        _load(a, mine, chunks, lex)
        pg_tables.ensure(b, theirs)  # an empty vault beside it
        assert PgLexical(a).search("reciprocal rank fusion", 5)
        assert PgLexical(b).search("reciprocal rank fusion", 5) == []
        assert b.execute("SELECT count(*) FROM chunks").fetchone()[0] == 0
        role = "wm_reader_" + theirs[-10:]
        b.execute(f'CREATE ROLE "{role}" LOGIN')
        b.execute(f'GRANT USAGE ON SCHEMA "{theirs}" TO "{role}"')
        b.execute(f'GRANT SELECT ON ALL TABLES IN SCHEMA "{theirs}" TO "{role}"')
    try:
        with psycopg.connect(pg_database, user=role, autocommit=True) as reader:
            pg_tables.use(reader, theirs)
            assert reader.execute("SELECT count(*) FROM chunks").fetchone()[0] == 0
            with pytest.raises(psycopg.errors.InsufficientPrivilege):
                reader.execute(f'SELECT count(*) FROM "{mine}".chunks').fetchone()
    finally:
        with _connect(pg_database) as admin:
            admin.execute(f'DROP OWNED BY "{role}"')
            admin.execute(f'DROP ROLE "{role}"')


def test_a_schema_of_another_version_is_made_again(pg_database, monkeypatch):
    schema = pg_tables.schema_name("v")
    with _connect(pg_database) as db:
        assert pg_tables.ensure(db, schema) is True
        db.execute("INSERT INTO meta (key, value) VALUES ('x', '1')")
        assert pg_tables.ensure(db, schema) is False
        assert db.execute("SELECT count(*) FROM meta").fetchone()[0] == 1
        monkeypatch.setattr(pg_tables, "SCHEMA_VERSION", pg_tables.SCHEMA_VERSION + 1)
        assert pg_tables.ensure(db, schema) is True
        assert db.execute("SELECT count(*) FROM meta").fetchone()[0] == 0


def test_weighted_frequencies_count_as_fts5_does():
    tf, length = weighted_frequencies("bm25 rank", "rank", "rank fusion rank")
    assert length == 6
    assert tf == {"bm25": 2.0, "rank": 2.0 + 1.5 + 1.0 + 1.0, "fusion": 1.0}
