"""Hostile pass on the PostgreSQL store's tables (issue 56): what a running vault does when its
tables are taken away or damaged under it, when a rebuild's swap meets a search in flight, and
when the database URL is malformed. The cache is disposable: each case ends with every note
searchable again, or with one clear WikimemError, never a driver traceback and never a lost note."""
from __future__ import annotations

import os
import threading

import psycopg
import pytest

from wikimem.api import open_vault
from wikimem.errors import WikimemError
from wikimem.stores.postgres import tables as pg_tables

NOTES = {f"n{i}.md": f"# Note {i}\n\nword{i} shared text about topic{i % 3}\n" for i in range(6)}


def _vault(make_vault, url: str, vault_id: str = "hostile"):
    root = make_vault(NOTES)
    vault = open_vault(root, embedder="fake", store="postgres", database_url=url, vault_id=vault_id)
    vault.index()
    return root, vault


def _found(vault, word: str) -> set[str]:
    return {h.path for h in vault.search(word, mode="lexical", limit=20).hits}


def test_the_vault_schema_dropped_then_a_new_process_writes(make_vault, pg_database):
    """The same, seen by a process that opens the vault after the drop (a fresh connection)."""
    root, vault = _vault(make_vault, pg_database)
    vault.close()
    with psycopg.connect(pg_database, autocommit=True) as db:
        db.execute(f"DROP SCHEMA {pg_tables.quoted(vault.ctx.cache.schema)} CASCADE")
    again = open_vault(root, embedder="fake", store="postgres", database_url=pg_database, vault_id="hostile")
    try:
        (root / "late.md").write_text("# Late\n\nlatecomer words\n")
        again.index(paths=["late.md"])
        assert _found(again, "latecomer") == {"late.md"}
        assert _found(again, "word3") == {"n3.md"}
    finally:
        again.close()


@pytest.mark.parametrize("table", [None, "lex", "passages", "files"])
def test_the_schema_or_a_table_dropped_under_an_open_vault_is_made_again(make_vault, pg_database, table):
    """DROP SCHEMA by hand (the version row of wikimem_schema left behind), or one table dropped (a
    half-made schema), while a vault is open: the next write is indexed and every note is searchable
    again (the tables are made again, not taken as present because a version row says so)."""
    root, vault = _vault(make_vault, pg_database)
    try:
        assert _found(vault, "word3") == {"n3.md"}
        schema = pg_tables.quoted(vault.ctx.cache.schema)
        with psycopg.connect(pg_database, autocommit=True) as db:
            db.execute(f"DROP SCHEMA {schema} CASCADE" if table is None else f"DROP TABLE {schema}.{table} CASCADE")
        (root / "late.md").write_text("# Late\n\nlatecomer words\n")
        vault.index()
        assert _found(vault, "latecomer") == {"late.md"}
        assert _found(vault, "word3") == {"n3.md"}
    finally:
        vault.close()


@pytest.mark.parametrize("first, then", [("meta", "chunks"), ("passages", "meta"), ("edges", "files"),
                                         ("lex", "chunks"), ("chunks", "edges")])
def test_a_rebuild_swap_while_another_process_reads_in_a_snapshot(make_vault, pg_database, first, then):
    """A rebuild's swap while another connection is inside a search's snapshot: both finish, the
    reader sees one whole version (old or new), the rebuild is not refused for it."""
    root, vault = _vault(make_vault, pg_database)
    reader = open_vault(root, embedder="fake", store="postgres", database_url=pg_database, vault_id="hostile")
    try:
        assert _found(reader, "word1") == {"n1.md"}
        errors: list[BaseException] = []
        cache = reader.ctx.cache
        with cache.snapshot() as db:
            db.execute(f"SELECT count(*) FROM {first}").fetchone()  # the reader holds one table
            done = threading.Event()

            def rebuild():
                try:
                    vault.index(rebuild=True)
                except BaseException as exc:  # noqa: BLE001
                    errors.append(exc)
                finally:
                    done.set()
            t = threading.Thread(target=rebuild)
            t.start()
            done.wait(3.0)  # the swap waits for this snapshot (or has passed it)
            rows = db.execute(f"SELECT count(*) FROM {then}").fetchone()[0]  # then reads another table
            assert rows > 0 or then == "edges"  # (no links in these notes)
        t.join(120)
        assert not t.is_alive() and errors == [], errors
        assert _found(reader, "word1") == {"n1.md"} and _found(vault, "word5") == {"n5.md"}
    finally:
        reader.close()
        vault.close()


@pytest.mark.parametrize("url", [
    "postgresql://u@host:notaport/db",
    "postgresql://u@[::1/db",
    "postgresql://u:secret@/db?host=/nonexistent/socket&connect_timeout=1",
    "host=/nonexistent port=abc dbname=x",
    "dbname='unterminated",
    "mysql://u@localhost/db",
    "   ",
])
def test_a_malformed_database_url_is_one_clear_error(make_vault, url):
    root = make_vault({"a.md": "# A\n\nalpha\n"})
    with pytest.raises(WikimemError) as err:
        vault = open_vault(root, embedder="none", store="postgres", database_url=url)
        try:
            vault.index()
        finally:
            vault.close()
    assert "secret" not in str(err.value)
    assert (root / "a.md").read_text() == "# A\n\nalpha\n"


def test_a_search_after_the_database_ended_its_idle_session_is_answered(make_vault, pg_database):
    """The database ended this process's idle sessions (a restart, a failover, idle_session_timeout)
    and is up again: the next search is answered on a new connection, not refused with
    DatabaseUnavailable for a connection that was already gone before it began."""
    import time
    root, vault = _vault(make_vault, pg_database)
    try:
        assert _found(vault, "word2") == {"n2.md"}
        name = pg_database.split("?")[0].rsplit("/", 1)[1]
        with psycopg.connect(pg_database, autocommit=True) as db:
            ended = db.execute("SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE datname = %s "
                               "AND pid <> pg_backend_pid()", (name,)).fetchone()[0]
        assert ended >= 1
        time.sleep(0.5)  # the server has said goodbye on the sockets by now
        assert _found(vault, "word2") == {"n2.md"}
        (root / "n2.md").write_text("# Note 2\n\nrewritten quokkaword\n")
        vault.index(paths=["n2.md"])  # and a write, on the writer's own sessions
        assert _found(vault, "quokkaword") == {"n2.md"}
    finally:
        vault.close()


def test_a_live_session_past_descriptor_1023_is_not_taken_for_ended(make_vault, pg_database):
    """A long-lived process (serve, a whole test run) holds descriptors past 1023, where select()
    refuses to look: the writer lock's session was then taken for one the server ended, and every
    write was refused as "lost mid-write" (seen in the full suite). poll() has no such limit."""
    import resource

    from wikimem.stores import pg
    if resource.getrlimit(resource.RLIMIT_NOFILE)[0] < 1200:
        pytest.skip("this process may not open 1,200 files")
    filler = [os.open(os.devnull, os.O_RDONLY) for _ in range(1100)]
    try:
        with psycopg.connect(pg_database, autocommit=True) as conn:
            assert conn.fileno() > 1023
            assert pg.ended_by_server(conn) is False
            _end_session(pg_database, conn.info.backend_pid)
            import time
            time.sleep(0.3)
            assert pg.ended_by_server(conn) is True
    finally:
        for fd in filler:
            os.close(fd)


def _end_session(url: str, pid: int) -> None:
    with psycopg.connect(url, autocommit=True) as db:
        db.execute("SELECT pg_terminate_backend(%s)", (pid,))


def test_a_write_whose_writer_lock_session_ended_is_not_committed(make_vault, pg_database):
    """The writer lock lives on a session of its own, idle while the build writes on another: the
    server may end it alone (idle_session_timeout, a pooler), and the lock goes with it. A write
    under that lost lock is refused and rolled back, while another process can take the lock
    (two writers at once otherwise)."""
    from wikimem.errors import DatabaseUnavailable
    root, vault = _vault(make_vault, pg_database)
    other = open_vault(root, embedder="fake", store="postgres", database_url=pg_database, vault_id="hostile")
    cache = vault.ctx.cache
    try:
        with cache.writer_lock():
            _end_session(pg_database, cache._lock_session.info.backend_pid)
            import time
            time.sleep(0.3)
            with other.ctx.cache.writer_lock():  # the lock is free now: the other process writes
                other.ctx.cache.set_meta(other.ctx.cache.db, hostile_mark="theirs")
            with pytest.raises(DatabaseUnavailable, match="lost mid-write"):
                with cache.transaction() as db:
                    cache.set_meta(db, hostile_mark="mine")
        assert other.ctx.cache.meta(other.ctx.cache.db).get("hostile_mark") == "theirs"
        (root / "late.md").write_text("# Late\n\nlatecomer words\n")
        vault.index()  # the next build takes a new lock session and writes
        assert _found(vault, "latecomer") == {"late.md"}
    finally:
        other.close()
        vault.close()


def test_a_build_whose_writer_lock_session_ends_midway_commits_nothing_after(make_vault, pg_database, monkeypatch):
    root, vault = _vault(make_vault, pg_database)
    cache = vault.ctx.cache
    (root / "n1.md").write_text("# Note 1\n\nrewritten wombatword\n")
    from wikimem.index import build as build_mod
    real = build_mod.sync_vectors

    def cut(c, *args, **kwargs):  # between the lexical commit and the vectors' commit
        _end_session(pg_database, cache._lock_session.info.backend_pid)
        import time
        time.sleep(0.3)
        return real(c, *args, **kwargs)
    monkeypatch.setattr(build_mod, "sync_vectors", cut)
    from wikimem.errors import DatabaseUnavailable
    try:
        with pytest.raises(DatabaseUnavailable, match="lost mid-write"):
            vault.index()
        monkeypatch.undo()
        report = vault.index()
        assert report.coverage == 1.0
        assert _found(vault, "wombatword") == {"n1.md"} and _found(vault, "word4") == {"n4.md"}
    finally:
        vault.close()


@pytest.mark.parametrize("damage", [
    "UPDATE meta SET value = '{not json' WHERE key = 'analyzer'",
    "UPDATE meta SET value = '\"twelve\"' WHERE key = 'schema_version'",
    "UPDATE meta SET value = '[1, 2]' WHERE key = 'artifacts'",
    "UPDATE files SET page = '{broken' WHERE path = 'n2.md'",
    "UPDATE chunks SET links = 'not json' WHERE path = 'n2.md'",
])
def test_corrupt_rows_are_detected_and_rebuilt_not_trusted(make_vault, pg_database, damage):
    """Rows of the vault's tables that are not what wikimem wrote (a bad restore, a hand edit):
    the next build detects and rebuilds; searches and reads never fail with a decoding traceback."""
    root, vault = _vault(make_vault, pg_database)
    vault.close()
    with psycopg.connect(pg_database, autocommit=True) as db:
        db.execute(f"SET search_path TO {pg_tables.quoted(pg_tables.schema_name('hostile'))}")
        db.execute(damage)
    again = open_vault(root, embedder="fake", store="postgres", database_url=pg_database, vault_id="hostile")
    try:
        (root / "late.md").write_text("# Late\n\nlatecomer words\n")
        assert _found(again, "word2") == {"n2.md"}  # a search first: it finds the damage or reads around it
        again.index()  # the build finds it and rebuilds on its own
        assert _found(again, "latecomer") == {"late.md"}
        assert _found(again, "word2") == {"n2.md"}
        assert "n2.md" in again.pages()
    finally:
        again.close()


@pytest.mark.parametrize("content", [b"# Nul\n\nbefore\x00after nulword\n", b"# Esc\n\n\\u0000 nulword \\ud800\n",
                                     "# Big\n\n".encode() + "nulword ".encode() + "\U0001F600".encode() * 50])
def test_note_bytes_postgres_cannot_store_as_text_do_not_stop_a_build(make_vault, pg_database, content):
    """A NUL byte (PostgreSQL's text has none), a JSON-escape look-alike, astral characters: the
    build goes on, the other notes are searchable, and no note is changed."""
    root = make_vault({**NOTES, "odd.md": content})
    vault = open_vault(root, embedder="fake", store="postgres", database_url=pg_database, vault_id="odd")
    try:
        vault.index()
        assert _found(vault, "word3") == {"n3.md"}
        assert (root / "odd.md").read_bytes() == content
    finally:
        vault.close()


def test_a_rebuild_sweeps_its_own_leftovers_only(make_vault, pg_database):
    """A full rebuild drops the schemas a killed rebuild of this vault left (``<schema>_next_<pid>``),
    never another vault's whose name merely starts alike (LIKE's ``_`` matches any character)."""
    root, vault = _vault(make_vault, pg_database, vault_id="a")
    ours = vault.ctx.cache.schema
    other_id = f"{ours[3:]}_next_7"  # a vault id that reads like our rebuild's temporary schema
    other_root = make_vault({"o.md": "# O\n\notherword\n"}, name="other")
    other = open_vault(other_root, embedder="fake", store="postgres", database_url=pg_database, vault_id=other_id)
    try:
        other.index()
        leftover = f"{ours[:48]}_next_4242"
        with psycopg.connect(pg_database, autocommit=True) as db:
            db.execute(f'CREATE SCHEMA "{leftover}"')
        vault.index(rebuild=True)
        with psycopg.connect(pg_database, autocommit=True) as db:
            names = {r[0] for r in db.execute("SELECT nspname FROM pg_namespace")}
        assert leftover not in names
        assert other.ctx.cache.schema in names
        assert _found(other, "otherword") == {"o.md"}
    finally:
        other.close()
        vault.close()


def test_a_read_only_database_serves_searches(make_vault, pg_database):
    """A read replica (or a database made read-only for an incident): searches are answered from
    what is there, in every mode, and a write says clearly that it cannot be made, never a driver
    traceback; the note itself is written to the vault (the vault is the truth)."""
    root, vault = _vault(make_vault, pg_database)
    vault.close()
    name = pg_database.split("?")[0].rsplit("/", 1)[1]
    with psycopg.connect(pg_database, autocommit=True) as db:
        db.execute(f'ALTER DATABASE "{name}" SET default_transaction_read_only = on')
    reader = open_vault(root, embedder="fake", store="postgres", database_url=pg_database, vault_id="hostile")
    try:
        for mode in ("lexical", "vector", "hybrid"):
            assert "n3.md" in {h.path for h in reader.search("word3 topic0", mode=mode, limit=6).hits}, mode
        result = reader.write_page("new.md", "# New\n\nnewword\n")
        assert (root / "new.md").read_text() == "# New\n\nnewword\n"
        assert result.warnings  # the index was not updated: said so
        with pytest.raises(WikimemError, match="accepts no writes"):
            reader.index()
    finally:
        reader.close()
        with psycopg.connect(pg_database, autocommit=True) as db:
            db.execute("SET default_transaction_read_only = off")
            db.execute(f'ALTER DATABASE "{name}" RESET default_transaction_read_only')


def test_the_cli_says_a_read_only_database_in_words(make_vault, monkeypatch, capsys):
    from wikimem.api import Vault
    from wikimem.cli.app import invoke
    root = make_vault({"a.md": "# A\n\nalpha\n"})

    def refused(*args, **kwargs):
        raise psycopg.errors.ReadOnlySqlTransaction("cannot execute INSERT in a read-only transaction")
    monkeypatch.setattr(Vault, "index", refused)
    code = invoke(["index", str(root)])
    said = capsys.readouterr().err
    assert code == 2 and "accepts no writes" in said and "bug" not in said, said


def test_a_cancelled_statement_is_not_said_as_the_database_gone(make_vault, pg_database):
    """A statement the server cancels (a role's statement_timeout set by a DBA) is said as that, a
    setting to look at, not as "went away" / "cannot be reached" (an outage hunt)."""
    from wikimem.errors import DatabaseUnavailable
    from wikimem.stores.failures import in_words
    root, vault = _vault(make_vault, pg_database)
    try:
        cache = vault.ctx.cache
        with pytest.raises(DatabaseUnavailable) as err:
            with cache.transaction() as db:
                db.execute("SET LOCAL statement_timeout = 10")
                db.execute("SELECT pg_sleep(2)")
        assert "statement_timeout" in str(err.value) and "went away" not in str(err.value)
        said = in_words(psycopg.errors.QueryCanceled("canceling statement due to statement timeout"))
        assert "statement_timeout" in str(said) and "cannot be reached" not in str(said)
        assert _found(vault, "word1") == {"n1.md"}  # and the connection serves on
    finally:
        vault.close()


def test_connections_of_threads_that_ended_are_closed(make_vault, pg_database):
    """``serve`` runs each request in a pool thread, and the pool ends threads idle for 10 s and
    starts new ones for the next burst. Each thread had a connection of its own, kept open after
    its thread ended: a long-running serve opened connections without bound, until the server's
    max_connections refused everyone on the database (the whole team's processes)."""
    root, vault = _vault(make_vault, pg_database)
    name = pg_database.split("?")[0].rsplit("/", 1)[1]

    def open_sessions() -> int:
        with psycopg.connect(pg_database, autocommit=True) as db:
            return db.execute("SELECT count(*) FROM pg_stat_activity WHERE datname = %s AND pid <> pg_backend_pid()",
                              (name,)).fetchone()[0]
    try:
        before = open_sessions()
        for _ in range(12):  # twelve bursts, each on a new pool thread that then ends
            t = threading.Thread(target=lambda: _found(vault, "word1"))
            t.start()
            t.join(60)
        assert _found(vault, "word1") == {"n1.md"}
        assert open_sessions() <= before + 2, (before, open_sessions())
    finally:
        vault.close()


@pytest.mark.parametrize("damage", ["DELETE FROM wikimem_schema WHERE component LIKE 'vault:%'",
                                    "DROP TABLE wikimem_schema"])
def test_a_vault_schema_without_its_version_row_is_made_again(make_vault, pg_database, damage):
    """The vault's tables are there but their version row is not (a restore of the schema alone, a
    hand "reset" of wikimem_schema): the next build makes them again rather than failing on
    CREATE SCHEMA of one that exists, and no other vault's tables are touched."""
    root, vault = _vault(make_vault, pg_database)
    vault.close()
    with psycopg.connect(pg_database, autocommit=True) as db:
        db.execute(damage)
    again = open_vault(root, embedder="fake", store="postgres", database_url=pg_database, vault_id="hostile")
    try:
        (root / "late.md").write_text("# Late\n\nlatecomer words\n")
        again.index()
        assert _found(again, "latecomer") == {"late.md"} and _found(again, "word3") == {"n3.md"}
        assert again.ctx.cache.vector_store.taken_local > 0  # the embedding cache was kept (nothing re-embedded)
    finally:
        again.close()
    from wikimem.serve.tokens import DatabaseTokens
    tokens = DatabaseTokens(pg_database)  # and a token table whose row went is adopted, its tokens kept
    try:
        secret = tokens.add("alice", "v", "read")
        with psycopg.connect(pg_database, autocommit=True) as db:
            db.execute(damage)
        assert tokens.check(secret).name == "alice"
        assert tokens.check(tokens.add("bob", "v", "read")).name == "bob"
        assert tokens.check(secret).name == "alice"
    finally:
        tokens.close()


def test_a_newer_wikimem_rebuilding_under_an_open_vault_is_refused_not_undone(make_vault, pg_database):
    """A teammate's newer wikimem takes the vault's tables to its version while this process has
    them open: this one's next search and write are refused with the upgrade line (never a
    traceback), and it does not rebuild them back to its own version."""
    from wikimem.stores.pg import NewerSchema
    root, vault = _vault(make_vault, pg_database)
    schema = vault.ctx.cache.schema
    try:
        assert _found(vault, "word1") == {"n1.md"}
        with psycopg.connect(pg_database, autocommit=True) as db:
            db.execute("UPDATE wikimem_schema SET version = version + 1 WHERE component = %s", (f"vault:{schema}",))
            db.execute(f"UPDATE {pg_tables.quoted(schema)}.meta SET value = '99' WHERE key = 'schema_version'")
        with pytest.raises(NewerSchema, match="newer wikimem"):
            vault.search("word1", mode="lexical")
        (root / "late.md").write_text("# Late\n\nlatecomer\n")
        with pytest.raises(NewerSchema, match="newer wikimem"):
            vault.index()
        with psycopg.connect(pg_database, autocommit=True) as db:
            assert db.execute(f"SELECT value FROM {pg_tables.quoted(schema)}.meta WHERE key = 'schema_version'"
                              ).fetchone()[0] == "99"
    finally:
        vault.close()


@pytest.mark.parametrize("first, then", [("meta", "chunks"), ("chunks", "files"), ("lex", "meta")])
def test_an_older_schema_made_again_while_another_process_reads_in_a_snapshot(make_vault, pg_database, first,
                                                                               then):
    """A writer starting on tables an older wikimem made drops and makes them again (``ensure``)
    while another connection is inside a search's snapshot: both finish. Was: the drop took the
    tables one by one, the reader then asked for one the drop held, and the server's deadlock check
    failed one of them (the swap's fix, swap.py, now taken here too)."""
    root, vault = _vault(make_vault, pg_database)
    schema = vault.ctx.cache.schema
    vault.close()
    with psycopg.connect(pg_database, autocommit=True) as admin:  # as an older wikimem left it
        admin.execute("UPDATE wikimem_schema SET version = 0 WHERE component = %s", (f"vault:{schema}",))
    reader = open_vault(root, embedder="fake", store="postgres", database_url=pg_database, vault_id="hostile")
    errors: list[BaseException] = []
    try:
        with reader.ctx.cache.snapshot() as db:
            db.execute(f"SELECT count(*) FROM {first}").fetchone()  # the reader holds one table
            done = threading.Event()

            def upgrade():
                writer = open_vault(root, embedder="fake", store="postgres", database_url=pg_database,
                                    vault_id="hostile")
                try:
                    writer.index()
                except BaseException as exc:  # noqa: BLE001
                    errors.append(exc)
                finally:
                    writer.close()
                    done.set()
            t = threading.Thread(target=upgrade)
            t.start()
            done.wait(3.0)  # the drop waits for this snapshot (or has passed it)
            db.execute(f"SELECT count(*) FROM {then}").fetchone()  # then reads another table
        t.join(120)
        assert not t.is_alive() and errors == [], errors
        assert _found(reader, "word1") == {"n1.md"}
    finally:
        reader.close()
