"""Hostile pass on the same-vault-twice notice (issue 56): a team vault whose id holds ``_next_`` or
``_old_`` (the words a rebuild's temporary schemas carry) is still found as the twin, while a
rebuild's temporary schema beside it is not taken for one."""
from __future__ import annotations

from pathlib import Path

import psycopg
import pytest

from conftest import copy_vault
from wikimem.api import open_vault
from wikimem.stores.postgres import tables as pg_tables

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize("team_id", ["q3_next_release", "the_old_wiki"])
def test_a_team_vault_whose_id_reads_like_a_rebuild_schema_is_still_found(tmp_path, pg_database, team_id):
    team = copy_vault(ROOT / "examples", tmp_path / "team-vault")
    laptop = copy_vault(ROOT / "examples", tmp_path / "my-checkout")
    first = open_vault(team, embedder="none", store="postgres", database_url=pg_database, vault_id=team_id)
    first.index()
    first.close()
    second = open_vault(laptop, embedder="none", store="postgres", database_url=pg_database)
    said = [n for n in second.index().notices if "twice" in n]
    second.close()
    assert len(said) == 1 and f"vault_id {team_id!r}" in said[0], said


def test_a_rebuilds_leftover_schema_is_not_a_twin(tmp_path, pg_database):
    """A rebuild killed before its swap leaves ``<schema>_next_<pid>`` (a full copy of the notes):
    it is not named as another vault holding them, the live vault is."""
    from wikimem.stores.postgres.twins import twins
    team = copy_vault(ROOT / "examples", tmp_path / "team-vault")
    laptop = copy_vault(ROOT / "examples", tmp_path / "my-checkout")
    for root, vault_id in ((team, "team"), (laptop, "laptop")):
        vault = open_vault(root, embedder="none", store="postgres", database_url=pg_database, vault_id=vault_id)
        vault.index()
        vault.close()
    schema = pg_tables.schema_name("team")
    with psycopg.connect(pg_database, autocommit=True) as db:
        for leftover in (f"{schema[:48]}_next_4242", f"{pg_tables.schema_name('laptop')[:48]}_old_99"):
            db.execute(f'CREATE SCHEMA "{leftover}"')
            for table in ("files", "meta"):
                db.execute(f'CREATE TABLE "{leftover}".{table} AS TABLE "{schema}".{table}')
        found = [t["schema"] for t in twins(db, pg_tables.schema_name("laptop"))]
    assert found == [schema]
