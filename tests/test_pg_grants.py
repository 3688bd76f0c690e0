"""The privileges recipe of docs/teams.md works as written (issue 51 item 5): its SQL is run here
statement by statement on the throwaway server (which runs as a superuser, so the roles are made
here, as the recipe says), with its shell steps done by the CLI as the roles it names. A rebuild
keeps the readers' grants; a refused privilege is one line naming the GRANT, exit 2; ``doctor``
checks pgvector and the role's privileges."""
from __future__ import annotations

import contextlib
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import copy_vault
from pg_server import with_database

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "teams.md"
ROLES = ("wikimem_builder_ops", "wikimem_reader", "wikimem_builder")


def recipe() -> list[tuple[str, str, list[str]]]:
    """The recipe's SQL blocks in order: (role, database, statements)."""
    text = DOC.read_text(encoding="utf-8")
    section = text.split("## Roles and grants: the recipe", 1)[1].split("\n## ", 1)[0]
    blocks = []
    for body in re.findall(r"```sql\n(.*?)```", section, flags=re.S):
        lines = [line.strip() for line in body.strip().splitlines()]
        m = re.match(r"-- as (\w+), on database (\w+)$", lines[0])
        assert m, lines[0]
        sql = "\n".join(re.sub(r"\s--.*$", "", line) for line in lines[1:] if not line.startswith("--"))
        blocks.append((m.group(1), m.group(2), [s.strip() for s in sql.split(";") if s.strip()]))
    return blocks


def as_role(url: str, role: str, database: str) -> str:
    """``url`` (the superuser's) connecting as ``role`` to ``database`` (the server trusts its socket)."""
    return re.sub(r"^postgresql://[^@/]*@", f"postgresql://{role}:@", with_database(url, database))


def run_block(url: str, block) -> None:
    import psycopg
    role, database, statements = block
    with psycopg.connect(as_role(url, "postgres", database) if role == "postgres" else as_role(url, role, database),
                         autocommit=True) as db:
        for statement in statements:
            db.execute(statement)


def _drop_all(url: str) -> None:
    import psycopg
    with psycopg.connect(url, autocommit=True) as db:
        db.execute("DROP DATABASE IF EXISTS wiki WITH (FORCE)")
        for role in ROLES:
            with contextlib.suppress(psycopg.Error):
                db.execute(f"DROP ROLE IF EXISTS {role}")


@pytest.fixture
def roles(pg_url):
    _drop_all(pg_url)
    yield pg_url
    _drop_all(pg_url)


def wikimem(url: str, role: str, vault: Path, *args: str, vault_id: str = "team") -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith("WIKIMEM_")}
    env.update(WIKIMEM_STORE="postgres", WIKIMEM_VAULT_ID=vault_id, WIKIMEM_EMBEDDER="fake",
               WIKIMEM_DATABASE_URL=as_role(url, role, "wiki"))
    return subprocess.run([str(Path(sys.executable).parent / "wikimem"), *args], env=env, capture_output=True,
                          text=True, timeout=300)


def make_token(url: str, vault: Path) -> str:
    """Step 2's token, made by the builder (its table in the database made by the first one)."""
    made = wikimem(url, "wikimem_builder", vault, "token", "add", "alice-laptop", "--vault", vault.name, "--scope",
                   "write")
    assert made.returncode == 0, made.stderr
    return made.stdout.strip()


def _hits(run) -> list[str]:
    assert run.returncode == 0, run.stderr
    return [h["path"] for h in json.loads(run.stdout)["hits"]]


def _database_check(run) -> dict:
    return next(c for c in json.loads(run.stdout)["checks"] if c["name"] == "database")


def test_the_recipe_as_written(roles, tmp_path):
    url = roles
    blocks = recipe()
    assert [(r, d) for r, d, _ in blocks] == [("postgres", "postgres"), ("postgres", "wiki"), ("wikimem_builder", "wiki"),
                                              ("postgres", "wiki"), ("wikimem_builder", "wiki")]
    vault = copy_vault(ROOT / "examples", tmp_path / "team-vault")
    # 1. as a superuser
    run_block(url, blocks[0])
    run_block(url, blocks[1])
    # 2. the builder builds
    built = wikimem(url, "wikimem_builder", vault, "index", str(vault))
    assert built.returncode == 0, built.stderr
    status = wikimem(url, "wikimem_builder", vault, "status", str(vault), "--json")
    assert "schema wm_team_ca8b22d0db " in json.loads(status.stdout)["cache"]  # the name step 3 gives
    # a reader not yet granted the vault: one line naming the GRANTs, exit 2; doctor names them too
    refused = wikimem(url, "wikimem_reader", vault, "search", "hybrid search", "--vault", str(vault))
    assert refused.returncode == 2 and "wikimem bug" not in refused.stderr, refused.stderr
    assert "GRANT SELECT ON wikimem_schema TO wikimem_reader" in refused.stderr, refused.stderr
    assert len(refused.stderr.strip().splitlines()) == 1
    doctor = _database_check(wikimem(url, "wikimem_reader", vault, "doctor", str(vault), "--json"))
    assert doctor["status"] == "fail" and "GRANT USAGE ON SCHEMA wm_team_ca8b22d0db TO wikimem_reader" in doctor["fix"]
    # 3. the builder grants the readers the vault
    secret = make_token(url, vault)
    run_block(url, blocks[2])
    from wikimem.serve.tokens import DatabaseTokens
    tokens = DatabaseTokens(as_role(url, "wikimem_reader", "wiki"))  # a reader's server checks the team's tokens
    assert tokens.check(secret).name == "alice-laptop"
    tokens.close()
    # 4. readers search
    found = _hits(wikimem(url, "wikimem_reader", vault, "search", "hybrid search", "--vault", str(vault), "--json"))
    assert "concepts/Hybrid Search.md" in found
    doctor = wikimem(url, "wikimem_reader", vault, "doctor", str(vault), "--json")
    check = _database_check(doctor)
    assert check["status"] == "ok" and "role wikimem_reader (reads this vault)" in check["detail"], check
    assert "pgvector" in check["detail"] and "MB" in check["detail"]
    check = _database_check(wikimem(url, "wikimem_builder", vault, "doctor", str(vault), "--json"))
    assert check["status"] == "ok" and "(builds this vault)" in check["detail"], check
    # a reader cannot build: one line naming what it lacks, exit 2, not "a wikimem bug"
    (vault / "concepts" / "Walrus.md").write_text("# Walrus\n\nA walrus hauls out.\n", encoding="utf-8")
    denied = wikimem(url, "wikimem_reader", vault, "index", str(vault))
    assert denied.returncode == 2 and "wikimem bug" not in denied.stderr, denied.stderr
    assert "GRANT CREATE ON SCHEMA public TO wikimem_reader" in denied.stderr
    # the grants survive a rebuild (a new schema swapped in) and the rebuild's new tables keep them
    rebuilt = wikimem(url, "wikimem_builder", vault, "index", str(vault), "--rebuild")
    assert rebuilt.returncode == 0, rebuilt.stderr
    found = _hits(wikimem(url, "wikimem_reader", vault, "search", "walrus", "--vault", str(vault), "--json"))
    assert "concepts/Walrus.md" in found
    rebuilt = wikimem(url, "wikimem_builder", vault, "index", str(vault), "--rebuild")  # twice: defaults carried too
    assert rebuilt.returncode == 0, rebuilt.stderr
    assert "concepts/Walrus.md" in _hits(wikimem(url, "wikimem_reader", vault, "search", "walrus", "--vault",
                                                 str(vault), "--json"))
    # 5. another vault with a builder of its own: it builds beside the first, sharing the embedding
    # cache, and the first vault's reader is refused it
    run_block(url, blocks[3])
    run_block(url, blocks[4])
    ops = copy_vault(ROOT / "examples", tmp_path / "ops-vault")
    (ops / "concepts" / "Pager.md").write_text("# Pager\n\nThe pager rota.\n", encoding="utf-8")
    built = wikimem(url, "wikimem_builder_ops", ops, "index", str(ops), vault_id="ops")
    assert built.returncode == 0, built.stderr
    assert "concepts/Pager.md" in _hits(wikimem(url, "wikimem_builder_ops", ops, "search", "pager rota", "--vault",
                                                str(ops), "--json", vault_id="ops"))
    check = _database_check(wikimem(url, "wikimem_builder_ops", ops, "doctor", str(ops), "--json", vault_id="ops"))
    assert check["status"] == "ok" and "(builds this vault)" in check["detail"], check
    other = wikimem(url, "wikimem_reader", ops, "search", "pager rota", "--vault", str(ops), vault_id="ops")
    assert other.returncode == 2 and "may not use the vault's schema wm_ops_" in other.stderr, other.stderr


def test_an_embedder_change_keeps_the_readers_select_on_the_vectors(roles, tmp_path, monkeypatch):
    """A new embedder makes the vectors' table again (in the live schema): its grants are given again."""
    import psycopg

    from wikimem.api import open_vault
    from wikimem.embed import fake
    url = roles
    blocks = recipe()
    run_block(url, blocks[0])
    run_block(url, blocks[1])
    vault = copy_vault(ROOT / "examples", tmp_path / "team-vault")
    builder = as_role(url, "wikimem_builder", "wiki")
    open_vault(vault, embedder="fake", store="postgres", database_url=builder, vault_id="team").index()
    make_token(url, vault)
    run_block(url, blocks[2])
    with psycopg.connect(builder, autocommit=True) as db:  # no default privileges: only the grants on the tables
        db.execute("ALTER DEFAULT PRIVILEGES IN SCHEMA wm_team_ca8b22d0db REVOKE SELECT ON TABLES FROM wikimem_reader")
    monkeypatch.setattr(fake.FakeEmbedder.__init__, "__defaults__", (32,))  # another embedder identity
    report = open_vault(vault, embedder="fake", store="postgres", database_url=builder, vault_id="team").index()
    assert any("embedder changed" in n for n in report.notices), report.notices
    reader = open_vault(vault, embedder="fake", store="postgres", database_url=as_role(url, "wikimem_reader", "wiki"),
                        vault_id="team")
    hits = reader.search("hybrid search", mode="vector").hits
    assert hits and reader.status()["vectors"] > 0
    reader.close()


def test_a_privilege_error_names_the_grant():
    import psycopg

    from wikimem.stores.pg_grants import explain

    def refused(text: str):
        return psycopg.errors.InsufficientPrivilege(text)

    assert "GRANT USAGE ON SCHEMA wm_x TO bob" in str(explain(refused("permission denied for schema wm_x"), "bob"))
    said = str(explain(refused("permission denied for table wikimem_embeddings\nLINE 1: INSERT INTO wikimem_embed"),
                       "bob"))
    assert "GRANT INSERT ON wikimem_embeddings TO bob" in said
    said = str(explain(refused("permission denied for table files\nLINE 1: SELECT path FROM files"), "bob"))
    assert "GRANT SELECT ON files TO bob" in said and "wikimem status" in said
    assert "GRANT CREATE ON DATABASE wiki TO bob" in str(explain(refused('permission denied for database wiki'), "bob"))
    assert "superuser" in str(explain(refused('permission denied to create extension "vector"'), "bob"))
    assert explain(ValueError("permission denied"), "bob") is None
    assert explain(refused("permission denied for schema s"), "bob").exit_code == 2


def test_a_schema_of_an_older_version_made_again_keeps_the_readers_grants(roles, tmp_path):
    import psycopg

    from wikimem.api import open_vault
    url = roles
    blocks = recipe()
    run_block(url, blocks[0])
    run_block(url, blocks[1])
    vault = copy_vault(ROOT / "examples", tmp_path / "team-vault")
    builder = as_role(url, "wikimem_builder", "wiki")
    open_vault(vault, embedder="fake", store="postgres", database_url=builder, vault_id="team").index()
    make_token(url, vault)
    run_block(url, blocks[2])
    with psycopg.connect(builder, autocommit=True) as db:  # a version no migration starts from: dropped, made again
        db.execute("UPDATE wikimem_schema SET version = 0 WHERE component = 'vault:wm_team_ca8b22d0db'")
    report = open_vault(vault, embedder="fake", store="postgres", database_url=builder, vault_id="team").index()
    assert report.added == 41, report
    reader = open_vault(vault, embedder="fake", store="postgres", database_url=as_role(url, "wikimem_reader", "wiki"),
                        vault_id="team")
    assert "concepts/Hybrid Search.md" in {h.path for h in reader.search("hybrid search").hits}
    reader.close()
