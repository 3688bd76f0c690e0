"""The stores' contract (issue 50): each engine's manifest answers every question the same way.

The manifest's logic is shared (``stores/manifest*.py``); its statements are each engine's own
(``stores/local/manifest_sql.py``, ``stores/postgres/manifest_sql.py``). So every question is asked
here of both, over the same rows written through the manifest's own writes, and compared with what
the rows say (not only with each other: both could be wrong alike). The edge cases are those that
broke PostgreSQL the first time: a note's NUL in text and in its JSON page record, held passages
(ids with the held bit, at the top of the 64-bit range), an empty fresh schema, GROUP BY
strictness, a LIKE that ignores ASCII case, and connections that prepare nothing (a prepared
plan ignores a later ``SET``).
"""
from __future__ import annotations

import dataclasses
import json
import sqlite3
import uuid

import pytest

from wikimem.model import Chunk
from wikimem.parse import parse_page
from wikimem.stores.filters import Filters
from wikimem.stores.local.lexical import ensure_table
from wikimem.stores.local.manifest_sql import SCHEMA_SQL
from wikimem.stores.manifest import Manifest, attachment_row, chunk_row, note_row
from wikimem.stores.vectors import HELD_BIT

STORES = ["local", "postgres"]

NOTES = {
    "Memories/fact.md": "---\nkind: fact\ntype: memory\ntags: [alpha]\ncreated: 2026-01-02\n---\n# Fact\n\n"
                        "The body holds a NUL here: x\x00y, and more text.\n",
    "notes/b.md": "---\ntags: [alpha/sub, beta]\nstatus: superseded\nsuperseded_on: 2026-03-01\n"
                  "asked: 2026-02-01\naliases: [Bee]\n---\n# B\n\nSee [[fact]] and [[c]].\n",
    "notes/c.md": "---\ntype: concept\nupdated: 2026-04-05\n---\n# C_100%\n\nPlain words about ranking.\n",
}
EDGES = [("notes/b.md", "Memories/fact.md", "link", 1.0), ("notes/b.md", "notes/c.md", "link", 1.0),
         ("notes/b.md", "notes/c.md", "supersedes", 2.0), ("notes/c.md", "notes/b.md", "link", 0.5),
         ("notes/b.md", "notes/b.md", "link", 1.0), ("notes/c.md", "#alpha", "tagged", 1.0)]
HELD = [HELD_BIT | 7, HELD_BIT | 8]  # a note's passages: read back, never searched


def _sqlite(tmp_path):
    db = sqlite3.connect(tmp_path / "manifest.sqlite", isolation_level=None)
    db.executescript(SCHEMA_SQL)
    ensure_table(db)
    return db, db.close


def _postgres(url):
    import psycopg

    from wikimem.stores.postgres import tables as pg_tables
    from wikimem.stores.postgres.manifest import PgDB
    conn = psycopg.connect(url, autocommit=True)
    conn.prepare_threshold = None
    schema = pg_tables.schema_name("contract-" + uuid.uuid4().hex[:6])
    pg_tables.ensure(conn, schema)
    return PgDB(conn, url, schema), conn.close


@pytest.fixture(params=STORES)
def empty(request, tmp_path):
    """A manifest over a fresh, empty schema of each engine."""
    if request.param == "local":
        from wikimem.stores.local.manifest import LocalManifest as engine
        db, close = _sqlite(tmp_path)
    else:
        from wikimem.stores.postgres.manifest import PgManifest as engine
        db, close = _postgres(request.getfixturevalue("pg_database"))
    yield engine(db)
    close()


def _fill(m: Manifest) -> dict:
    """The same rows on either engine, through the manifest's writes; returns what was written."""
    pages, chunks, rows, vid = {}, [], [], 1
    for path, text in NOTES.items():
        page = parse_page(path, text, sha256=f"sha-{path}")
        pages[path] = page
    m.put_files([note_row(p, 100 + i, 1_000 + i) for i, p in enumerate(pages.values())])
    m.put_file(attachment_row("img/p.png", 5, 9, "sha-png"))
    for path, page in pages.items():
        kind = page.type
        for ord_, (heading, text) in enumerate(((("Top",), page.body[:40]), (("Top", "Next"), page.body[40:] or "tail"))):
            chunk = Chunk(f"{vid:016x}", path, page.title, heading, text, 0, len(text), tags=("alpha",), type=kind,
                          status=page.status, created=page.created, updated=page.updated,
                          speakers=("ann", "bo") if path == "notes/c.md" and ord_ == 1 else ())
            chunks.append((vid, chunk))
            rows.append(chunk_row(vid, ord_, f"h{vid}", chunk))
            vid += 1
    m.put_chunks(rows)
    m.put_passages([(HELD[0], 1, 0, "hp7", "held text seven"), (HELD[1], 1, 1, "hp8", "held text eight"),
                    (50, 6, 0, "sp50", "a searched turn passage")])
    m.put_edges(EDGES)
    m.set_meta(schema_version=11, name="contract", artifacts={"x": {"y": [1, 2]}})
    return {"pages": pages, "chunks": dict(chunks)}


@pytest.fixture
def filled(empty):
    written = _fill(empty)
    return empty, written


def test_an_empty_fresh_schema_answers_every_question_with_nothing(empty):
    m = empty
    assert m.meta() == {}
    assert {"meta", "files", "chunks", "passages", "edges", "terms"} <= m.table_names()
    assert m.stored_pages() == {} and m.stored_pages(["a.md"]) == {}
    assert m.file_states() == {} and m.file_states(["a.md"]) == {}
    assert m.chunk_count() == 0 and m.chunk_rows() == 0 and m.passage_rows() == 0
    assert len(m.wanted_ids()) == 0 and m.wanted_count() == 0
    assert m.has_edges() is False
    assert m.page_listing("", None, None, 0, 10) == (0, [])
    assert m.speaker_counts(["a.md"]) == (0, 0) and m.speakers() == []
    assert m.page_recency(Filters()) == [] and m.page_dates() == {}
    assert m.neighbour_weights(["a.md"]) == {"a.md": []}
    assert m.inbound_counts(["link"], []) == {} and m.edge_count(["link"]) == 0
    assert m.passages_of([1], held=True) == {} and m.passage_count(held=True) == 0
    assert m.first_chunk("a.md") is None and m.page_body("a.md") is None
    assert m.all_edges() == [] and m.graph_rows() == ([], [])


def test_files_pages_and_meta(filled):
    m, written = filled
    assert m.meta() == {"schema_version": 11, "name": "contract", "artifacts": {"x": {"y": [1, 2]}}}
    m.set_meta(name="again")  # an upsert: the key is replaced, not doubled
    assert m.meta()["name"] == "again"
    assert sorted(m.file_paths()) == ["Memories/fact.md", "img/p.png", "notes/b.md", "notes/c.md"]
    assert sorted(m.note_paths()) == sorted(NOTES) and m.page_count() == 3
    assert m.notes_among(["notes/b.md", "img/p.png", "gone.md"]) == {"notes/b.md"}
    assert m.file_states(["img/p.png"]) == {"img/p.png": ("img/p.png", 5, 9, "sha-png", 0)}
    assert m.file_stats_after("Memories/fact.md", 2) == [("img/p.png", 5, 9, "sha-png"),
                                                         ("notes/b.md", 101, 1001, "sha-notes/b.md")]
    m.update_stats([(7, 8, "img/p.png")])
    assert m.file_stats()["img/p.png"] == (7, 8)
    assert m.aliases(["notes/b.md"]) == {"notes/b.md": ["Bee"]}
    assert [tuple(r) for r in m.titles_with_aliases()] == [("B", '["Bee"]')]
    assert m.title_and_status("notes/b.md") == ("B", "superseded") and m.title_and_status("img/p.png") is None
    assert [r[0] for r in m.pages_by_path(["notes/c.md", "Memories/fact.md"])] == ["Memories/fact.md", "notes/c.md"]
    assert sorted(m.file_paths_under("notes/")) == ["notes/b.md", "notes/c.md"]
    assert m.file_paths_under("Notes/") == []  # exact prefix: case counts
    assert m.memory_kinds() == ["fact"]
    stored = m.stored_pages(["notes/b.md"])
    assert list(stored) == ["notes/b.md"] and stored["notes/b.md"].title == "B"


def test_a_like_ignores_ascii_case_and_takes_percent_and_underscore_literally(filled):
    """SQLite's LIKE ignores ASCII case; the translated statement kept LIKE on PostgreSQL, where it
    does not: a ``memories/`` prefix found nothing there."""
    m, _ = filled
    assert m.paths_like("memories/") == ["Memories/fact.md"]
    assert m.paths_like("NOTES/", notes_only=True) == ["notes/b.md", "notes/c.md"]
    total, rows = m.page_listing("memories", None, None, 0, 10)
    assert total == 1 and rows[0][0] == "Memories/fact.md"
    assert m.page_listing("notes/_", None, None, 0, 10) == (0, [])  # "_" is not a wildcard
    total, rows = m.page_listing("", None, "alpha", 0, 10)
    assert total == 2 and [r[0] for r in rows] == ["Memories/fact.md", "notes/b.md"]  # alpha and alpha/sub
    total, rows = m.page_listing("", "concept", None, 0, 1)
    assert total == 1 and [r[0] for r in rows] == ["notes/c.md"]
    assert m.chunk_vids_where(Filters(folder="NOTES")) == [5, 6]
    assert m.chunk_vids_where(Filters(folder="NOTES", include_superseded=True)) == [3, 4, 5, 6]


def test_a_nul_in_a_note_is_read_back_from_text_and_from_its_json_page_record(filled):
    """A NUL in a note: SQLite keeps it; PostgreSQL's text cannot (U+FFFD is kept instead), and its
    JSON functions refuse ``\\u0000`` (the page record's escape). Every question that reads the
    record with them must still answer."""
    m, written = filled
    path = "Memories/fact.md"
    assert "\x00" in written["pages"][path].body
    body = m.page_body(path)
    assert body is not None and body.replace("\ufffd", "\x00") == written["pages"][path].body
    [(p, _line, bodies)] = m.page_bodies([path])
    assert p == path and bodies.replace("\ufffd", "\x00") == written["pages"][path].body
    stored = m.stored_pages([path])[path]
    assert stored.body.replace("\ufffd", "\x00") == written["pages"][path].body
    facts = {r[0]: r for r in m.note_facts(frontmatter=True)}
    assert json.loads(facts[path][3])["kind"] == "fact"
    assert m.note_facts(frontmatter=False)[0][3] is None
    validity = {r[0]: r for r in m.validity_facts()}
    assert validity["notes/b.md"][2:] == ("superseded", "2026-03-01", "2026-02-01")
    texts = m.chunk_texts(path)
    assert any("x" in t and t.replace("\ufffd", "\x00").count("\x00") == 1 for t in texts)
    by_id = m.chunks_by_id([f"{1:016x}"])
    assert by_id[f"{1:016x}"].text.replace("\ufffd", "\x00") == written["chunks"][1].text


def test_chunks_passages_and_the_held_bit(filled):
    m, written = filled
    assert m.chunk_rows() == 6 and m.passage_rows() == 3
    assert [c.id for c in m.all_chunks()] == [f"{v:016x}" for v in (1, 2, 3, 4, 5, 6)]
    assert m.first_chunk("notes/c.md").id == f"{5:016x}"
    assert m.first_chunk("notes/b.md", Filters()) is None  # superseded: filtered out
    assert m.vids_by_id([f"{2:016x}"]) == {f"{2:016x}": 2}
    assert m.chunk_ids_by_vid([2, 99]) == {2: f"{2:016x}"}
    assert m.transcript_vids([5, 6]) == {6}
    assert m.paths_by_id([f"{6:016x}"]) == {f"{6:016x}": ("notes/c.md", ("ann", "bo"), 1)}
    assert m.speaker_counts(["notes/c.md", "notes/b.md"]) == (1, 3)
    assert m.speakers() == ["ann", "bo"] and m.prose_chunk_count() == 5
    # held passages: ids at the top of the range, never searched
    assert m.passages_of([1], held=True) == {HELD[0]: 1, HELD[1]: 1}
    assert m.passages_of([1, 6], held=False) == {50: 6}
    assert m.chunks_with_passages([1, 6], held=True) == {1}
    assert m.passage_count(held=True) == 2 and m.passage_count(held=False) == 1
    assert m.passage_owners([HELD[0], 50, 3]) == {HELD[0]: 1, 50: 6}
    assert m.passage_texts([HELD[1]]) == {HELD[1]: "held text eight"}
    assert sorted(m.passage_ids_where(Filters(include_superseded=True), held=True)) == HELD
    assert m.passage_ids_where(Filters(include_superseded=True), held=False) == [50]
    assert list(m.wanted_ids()) == [1, 2, 3, 4, 5, 6, 50, *HELD] and m.wanted_count() == 9
    assert sorted(m.vector_ids_of(["Memories/fact.md"])) == [1, 2, *HELD]
    assert m.embed_hashes([1, HELD[0], 999]) == {1: "h1", HELD[0]: "hp7"}
    assert m.id_pages([HELD[1], 5]) == {HELD[1]: "Memories/fact.md", 5: "notes/c.md"}
    assert set(m.embed_texts([HELD[0], 3])) == {"hp7", "h3"}
    m.put_passages([(HELD[0], 1, 0, "hp7", "replaced")])  # an upsert on the passage id
    assert m.passage_texts([HELD[0]]) == {HELD[0]: "replaced"} and m.passage_rows() == 3
    m.remove_file("Memories/fact.md")
    assert m.passage_rows() == 1 and m.chunk_rows() == 4 and "Memories/fact.md" not in m.file_paths()


def test_group_by_questions_answer_alike(filled):
    """PostgreSQL refuses a selected column that is not grouped (SQLite picks a row's): each
    grouping question is asked and its answer checked against the rows."""
    m, _ = filled
    recency = {r[0]: (r[1], r[2]) for r in m.page_recency(Filters(include_superseded=True))}
    assert recency == {"Memories/fact.md": ("2026-01-02", 1000), "notes/b.md": ("", 1001),
                       "notes/c.md": ("2026-04-05", 1002)}
    assert set(m.page_dates()) == set(NOTES) and m.page_dates(["notes/c.md"]) == {"notes/c.md": (None, "2026-04-05")}
    assert m.inbound_counts(["link"], []) == {"Memories/fact.md": 1, "notes/c.md": 1, "notes/b.md": 1}
    assert m.inbound_counts(["link"], ["notes/b.md"]) == {"notes/b.md": 1}
    weights = m.neighbour_weights(["notes/c.md"])
    assert sorted(weights["notes/c.md"]) == [("notes/b.md", 3.5)]  # 1 + 2 (supersedes) + 0.5, no tags
    assert m.pages_with_chunks() == 3


def test_edges(filled):
    m, _ = filled
    assert m.has_edges() is True
    assert m.all_edges() == sorted(EDGES)
    assert sorted(m.edges_of("notes/c.md", ["link"])) == [("notes/b.md", "in", "link", 1.0),
                                                          ("notes/b.md", "out", "link", 0.5)]
    assert m.linked_pages("notes/c.md") == ({"notes/b.md", "#alpha"}, {"notes/b.md"})
    assert [tuple(r) for r in m.backlinks("notes/c.md", ["link", "supersedes"])] == [("notes/b.md", "B")]
    assert m.supersede_step("notes/b.md", newer=False) == "notes/c.md"
    assert m.supersede_step("notes/c.md", newer=True) == "notes/b.md"
    assert sorted(m.page_edges(["supersedes"])) == [("notes/b.md", "notes/c.md", "supersedes")]
    assert sorted(m.typed_edges(["supersedes", "link"]))[:2] == [("notes/b.md", "Memories/fact.md", 1, 1.0),
                                                                ("notes/b.md", "notes/b.md", 1, 1.0)]
    assert ("notes/b.md", "notes/c.md", 0, 2.0) in m.typed_edges(["supersedes", "link"])
    assert m.edge_count(["link"]) == 3
    m.remove_edges_from("notes/b.md")
    assert m.all_edges() == sorted(e for e in EDGES if e[0] != "notes/b.md")
    pages, edges = m.graph_rows()
    assert pages == sorted(NOTES) and edges == m.all_edges()


def test_search_questions_under_filters(filled):
    m, _ = filled
    assert m.superseded_vids() == {3, 4}
    assert sorted(m.chunk_vids_where(None)) == [1, 2, 3, 4, 5, 6]  # table order: any
    assert m.chunk_vids_where(Filters()) == [1, 2, 5, 6]
    assert m.chunk_vids_where(Filters(type="concept")) == [5, 6]
    assert m.chunk_vids_where(Filters(tags=("#Alpha",))) == [1, 2, 5, 6]
    assert m.chunk_vids_where(Filters(pages=frozenset())) == []
    assert m.chunk_vids_where(Filters(paths=frozenset({"notes/c.md"}))) == [5, 6]
    assert m.chunk_vids_where(Filters(not_pages=frozenset({"notes/c.md"}))) == [1, 2]
    assert m.chunk_vids_where(Filters(since="2026-04-01")) == [5, 6]
    assert m.chunk_vids_where(Filters(until="2026-01-31")) == [1, 2]
    assert m.chunk_ids_of_page("notes/c.md", Filters()) == [f"{5:016x}", f"{6:016x}"]
    assert m.chunk_speakers([f"{6:016x}"]) == {f"{6:016x}": '["ann", "bo"]'}
    it = m.first_chunk_texts(2)
    assert [v for v, _t in it] == [1, 2]


def test_the_statements_are_each_engines_own():
    """No statement of one engine is the other's text rewritten: the PostgreSQL module holds no
    SQLite-only construct and no ``?`` placeholder; the SQLite one no ``%s``."""
    import inspect

    from wikimem.stores.local import manifest_sql as local
    from wikimem.stores.postgres import manifest_sql as postgres
    pg_text, local_text = inspect.getsource(postgres), inspect.getsource(local)
    for construct in ("INSERT OR", "json_extract", "group_concat", "IFNULL", "sqlite_master", " ? ", "?)"):
        assert construct not in pg_text.split('"""', 2)[2], construct
    assert "%s" not in local_text
    def named(module) -> set[str]:  # its statements and the functions that make them (not its imports)
        return {n for n, v in vars(module).items() if not n.startswith("_")
                and (n.isupper() or getattr(v, "__module__", None) == module.__name__)}
    assert named(local) - {"SCHEMA_SQL", "VECTORS_SQL"} == named(postgres)
    from wikimem.stores import manifest
    assert not hasattr(manifest, "translate")


def test_the_stores_connections_prepare_nothing(pg_database, tmp_path):
    """A prepared statement's plan ignores a later planner ``SET`` (bench_pg_scale found it: the SETs
    that pick a search method did nothing after psycopg's fifth run of a statement), so the store's
    connections prepare nothing: after a question asked ten times the session holds no prepared
    statement (it held them with psycopg's default threshold)."""
    from wikimem.config import load_settings
    from wikimem.stores import open_stores
    (tmp_path / "v").mkdir()
    settings = dataclasses.replace(load_settings(tmp_path / "v"), store="postgres", database_url=pg_database,
                                   vault_id="prepared")
    cache = open_stores(tmp_path / "v", settings)
    try:
        with cache.writer_lock():
            m = cache.manifest
            m.set_meta(name="prepared")
            for _ in range(10):
                assert m.meta() == {"name": "prepared"} and m.file_states(["a.md"]) == {}
        conn = cache.connection()
        assert conn.execute("SELECT count(*) FROM pg_prepared_statements").fetchone()[0] == 0
        conn.prepare_threshold = 5  # the driver's default: the same questions now leave prepared statements
        for _ in range(10):
            m.meta()
        assert conn.execute("SELECT count(*) FROM pg_prepared_statements").fetchone()[0] > 0
    finally:
        cache.close()
