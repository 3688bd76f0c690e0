"""The same vault twice in one database is said (issue 51 item 6): a teammate who forgot
``vault_id`` builds a second copy under their folder's name; the build warns once, naming the
other id and how to set it. A different vault, or a few notes in common, is no warning."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from conftest import copy_vault
from wikimem.api import open_vault

ROOT = Path(__file__).resolve().parents[1]


def _twin(report) -> list[str]:
    return [n for n in report.notices if "twice" in n]


def test_a_second_copy_of_the_vault_under_another_id_is_said_once(tmp_path, pg_database):
    team = copy_vault(ROOT / "examples", tmp_path / "team-vault")
    laptop = copy_vault(ROOT / "examples", tmp_path / "my-checkout")
    first = open_vault(team, embedder="none", store="postgres", database_url=pg_database, vault_id="team")
    assert _twin(first.index()) == []  # the first copy: nothing to say
    first.close()
    second = open_vault(laptop, embedder="none", store="postgres", database_url=pg_database)  # vault_id forgotten
    said = _twin(second.index())
    assert len(said) == 1, said
    assert "vault_id 'team'" in said[0] and 'vault_id = "team"' in said[0] and "WIKIMEM_VAULT_ID=team" in said[0]
    assert "'my-checkout'" in said[0]
    (laptop / "concepts" / "New.md").write_text("# New\n\nfresh\n", encoding="utf-8")
    assert _twin(second.index()) == []  # once per process
    second.close()
    # the advice works as written: the copy's statements run, and the checkout then reads the team's
    import psycopg
    statements = said[0].split("drop this copy: ", 1)[1]
    with psycopg.connect(pg_database, autocommit=True) as db:
        for statement in statements.split("; "):
            db.execute(statement)
        assert not db.execute("SELECT 1 FROM information_schema.schemata WHERE schema_name LIKE 'wm_my_checkout%'"
                              ).fetchone()
    again = open_vault(laptop, embedder="none", store="postgres", database_url=pg_database, vault_id="team")
    assert again.index().added == 1  # the new note; the rest was the team's already
    assert "concepts/New.md" in {h.path for h in again.search("fresh", mode="lexical").hits}
    again.close()


def test_the_warning_reaches_the_index_command(tmp_path, pg_database):
    import os
    team = copy_vault(ROOT / "examples", tmp_path / "team-vault")
    laptop = copy_vault(ROOT / "examples", tmp_path / "my-checkout")
    open_vault(team, embedder="none", store="postgres", database_url=pg_database, vault_id="team").index()
    env = {k: v for k, v in os.environ.items() if not k.startswith("WIKIMEM_")}
    env.update(WIKIMEM_STORE="postgres", WIKIMEM_DATABASE_URL=pg_database, WIKIMEM_EMBEDDER="none")
    run = subprocess.run([str(Path(sys.executable).parent / "wikimem"), "index", str(laptop)], env=env,
                         capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    assert "twice" in run.stdout + run.stderr and "team" in run.stdout + run.stderr


def test_another_vault_with_a_few_notes_in_common_is_not_a_twin(tmp_path, pg_database):
    team = copy_vault(ROOT / "examples", tmp_path / "team-vault")
    open_vault(team, embedder="none", store="postgres", database_url=pg_database, vault_id="team").index()
    other = tmp_path / "other"
    copy_vault(ROOT / "examples", other)
    notes = sorted(p for p in other.rglob("*.md") if ".wikimem" not in p.parts)
    for i, path in enumerate(notes[len(notes) // 3:]):  # two thirds of the notes differ
        path.write_text(f"# Other {i}\n\nsomething else entirely, note {i}\n", encoding="utf-8")
    vault = open_vault(other, embedder="none", store="postgres", database_url=pg_database, vault_id="other")
    assert _twin(vault.index()) == []
    vault.close()


def test_twins_are_found_by_content_not_by_path(tmp_path, pg_database):
    from wikimem.stores import pg
    from wikimem.stores.postgres import tables as pg_tables
    from wikimem.stores.postgres.twins import twins
    team = copy_vault(ROOT / "examples", tmp_path / "team-vault")
    open_vault(team, embedder="none", store="postgres", database_url=pg_database, vault_id="team").index()
    moved = tmp_path / "moved"
    copy_vault(ROOT / "examples", moved)
    (moved / "archive").mkdir()
    for path in sorted((moved / "concepts").glob("*.md")):  # the same bytes under other paths
        path.rename(moved / "archive" / path.name)
    open_vault(moved, embedder="none", store="postgres", database_url=pg_database, vault_id="moved").index()
    with pg.connect(pg_database, "test") as conn:
        found = twins(conn, pg_tables.schema_name("moved"))
    assert [(t["vault_id"], t["schema"]) for t in found] == [("team", pg_tables.schema_name("team"))]
    assert found[0]["shared"] == found[0]["notes"] >= 10
