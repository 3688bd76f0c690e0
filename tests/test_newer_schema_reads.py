"""A vault whose tables a newer wikimem wrote is refused on read too (issue 48): search, status and
serve say to upgrade (one line, exit 2; a 503 over HTTP), as `index` does, rather than read tables
of a layout this wikimem does not know."""
from __future__ import annotations

import pytest
from typer.testing import CliRunner

from wikimem.api import open_vault
from wikimem.cli import app
from wikimem.stores.postgres import tables as pg_tables

FILES = {"SCHEMA.md": "# Schema\n", "concepts/Alpha.md": "# Alpha\n\nalpha particles\n"}


@pytest.fixture
def newer(make_vault, pg_database):
    root = make_vault(FILES)
    options = {"embedder": "fake", "store": "postgres", "database_url": pg_database, "vault_id": "newer-test"}
    vault = open_vault(root, **options)
    vault.index()
    db = vault.cache.connection()
    db.execute("RESET search_path")
    db.execute("UPDATE wikimem_schema SET version = %s WHERE component = %s",
               (pg_tables.SCHEMA_VERSION + 1, f"vault:{vault.cache.schema}"))
    vault.close()
    env = {"WIKIMEM_STORE": "postgres", "WIKIMEM_DATABASE_URL": pg_database, "WIKIMEM_VAULT_ID": "newer-test",
           "WIKIMEM_EMBEDDER": "fake", "WIKIMEM_NO_FORWARD": "1"}
    return root, options, env


@pytest.mark.parametrize("args", [["search", "alpha"], ["status"], ["status", "--json"], ["index"]])
def test_reading_a_vault_a_newer_wikimem_wrote_is_refused(newer, args):
    root, _, env = newer
    result = CliRunner().invoke(app, [*args, "--vault", str(root)], env=env)
    assert result.exit_code == 2, result.output
    assert "newer wikimem" in result.output and "upgrade" in result.output and "Traceback" not in result.output


def test_serve_refuses_it_too(newer, tmp_path):
    from wikimem.errors import WikimemError
    from wikimem.serve.app import ServeConfig, plan, start_hosts
    from wikimem.serve.tokens import TokenStore
    root, options, _ = newer
    pairs, _, _ = plan([], [f"v={root}"], ServeConfig(port=0), TokenStore(tmp_path / "t.json"))
    with pytest.raises(WikimemError, match="newer wikimem"):
        hosts = start_hosts(pairs, watch=False, **options)
        for host in hosts.values():
            host.stop()
