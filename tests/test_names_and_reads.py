"""One name check at every door, and reads that follow the writes' rules (issue 35 items 7-8, 13)."""
from __future__ import annotations

import os

import pytest

from wikimem.api import open_vault
from wikimem.errors import PathEscapeError, UsageError, WikimemError
from wikimem.knowledge.secrets import SecretError

STRIPE = "sk_live_" + "4eC39HqLyjWDarjtT1zdp7dc9a"
NOTES = {"SCHEMA.md": "# Schema\n", "concepts/A.md": "# A\n\nalpha [[B]]\n", "concepts/B.md": "# B\n\nbeta\n"}


@pytest.fixture
def vault(make_vault):
    root = make_vault(dict(NOTES))
    v = open_vault(root, embedder="fake")
    v.index()
    return v


def _sha(v, rel):
    return v.read_page(rel)["sha256"]


# -- item 7: reads ------------------------------------------------------------------------------
@pytest.mark.parametrize("rel, content", [
    (".wikimem/config.toml", 'llm_api_key = "secret-value-123"\n'),
    (".git/config", "[remote]\n url = https://user:pw@example.com/r.git\n"),
    (".trash/gone.md", "# Gone\n\nsecret-value-123\n"),
    (".obsidian/app.json", '{"secret": "secret-value-123"}'),
    ("notes.txt", "secret-value-123\n"),
    ("private/diary.md", "# Diary\n\nsecret-value-123\n"),  # hidden by .wikimemignore
])
def test_read_page_refuses_what_is_not_a_note_of_the_wiki(vault, rel, content):
    # Was: read_page read any file under the vault folder, the cache's keys and .git's remotes included
    (vault.root / ".wikimemignore").write_text("private/\n")
    path = vault.root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(content)
    with pytest.raises(UsageError) as err:
        vault.read_page(rel)
    assert "secret-value-123" not in str(err.value)


def test_read_page_refuses_a_symlink_out_of_the_vault(vault, tmp_path):
    outside = tmp_path / "outside.md"
    outside.write_text("# Out\n")
    os.symlink(outside, vault.root / "concepts/out.md")
    with pytest.raises(PathEscapeError):
        vault.read_page("concepts/out.md")


def test_a_note_is_still_read_and_so_is_a_resource(vault):
    from wikimem.mcp.resources import page_resource_text
    assert vault.read_page("concepts/A.md")["title"] == "A"
    assert vault.read_page("concepts/A")["path"] == "concepts/A.md"  # .md added as before
    assert "alpha" in page_resource_text(vault, "concepts/A.md")
    (vault.root / ".wikimem" / "config.toml").write_text('llm_api_key = "k"\n')
    with pytest.raises(UsageError):
        page_resource_text(vault, ".wikimem/config.toml")


# -- item 8: one name check ---------------------------------------------------------------------
def test_a_move_to_a_name_holding_a_secret_is_refused_and_nothing_moves(vault):
    # Was: write_page refused the name, move_page accepted it and log.md then skipped its line
    log_before = (vault.root / "log.md").read_text() if (vault.root / "log.md").exists() else ""
    with pytest.raises(SecretError):
        vault.move_page("concepts/B.md", f"concepts/{STRIPE}.md", expected_sha256=_sha(vault, "concepts/B.md"))
    assert (vault.root / "concepts/B.md").exists() and not (vault.root / f"concepts/{STRIPE}.md").exists()
    assert ((vault.root / "log.md").read_text() if (vault.root / "log.md").exists() else "") == log_before


@pytest.mark.parametrize("name", ["~/x.md", "~", "concepts/evil\u202egpj.md", "concepts/a\u2066b.md",
                                  "concepts/zero\u200bwidth.md"])
def test_tilde_and_bidi_and_format_characters_are_refused_by_write_and_move(vault, name):
    with pytest.raises(UsageError):
        vault.write_page(name, "# X\n")
    with pytest.raises(UsageError):
        vault.move_page("concepts/B.md", name, expected_sha256=_sha(vault, "concepts/B.md"))
    assert not (vault.root / "~").exists()
    assert (vault.root / "concepts/B.md").exists()


def test_names_people_write_in_their_scripts_still_pass(vault):
    for name in ("concepts/笔记.md", "concepts/Café au lait.md", "concepts/~draft.md", "concepts/क्षि.md",
                 "concepts/\u0646\u200c\u0627.md"):  # ZWNJ is part of Persian spelling
        vault.write_page(name, "# X\n")
        assert (vault.root / name).exists()


def test_the_writer_itself_refuses_a_bidi_name(vault):
    from wikimem.knowledge.writer import write_page
    with pytest.raises(UsageError):
        write_page(vault.ctx, "concepts/x\u202e.md", "# X\n")


# -- item 13 (part): the append limit is on what the call writes --------------------------------
def test_a_small_append_to_a_large_note_works_and_a_huge_append_names_the_limit(vault):
    big = "# Big\n\n" + ("word " * 19 + "\n") * 14_000  # ~1.4 MB
    vault.write_page("concepts/Big.md", big)
    sha = _sha(vault, "concepts/Big.md")
    # Was: refused, the whole resulting note measured against the one-write limit
    done = vault.edit_page("concepts/Big.md", "append", expected_sha256=sha, content="8 bytes")
    assert (vault.root / "concepts/Big.md").read_text().endswith("8 bytes\n")
    with pytest.raises(UsageError, match="limit for one write"):
        vault.edit_page("concepts/Big.md", "append", expected_sha256=done.sha256, content="x" * 1_100_000)


def test_a_path_out_of_the_vault_is_a_usage_error_on_the_command_line(vault, monkeypatch):
    """Exit codes: 0 ok, 1 findings, 2 usage. A path escaping the vault cannot be run as given."""
    from typer.testing import CliRunner

    from wikimem.cli import app
    monkeypatch.setenv("WIKIMEM_EMBEDDER", "fake")
    got = CliRunner().invoke(app, ["read", "../../etc/passwd", "-V", str(vault.root)])
    assert got.exit_code == 2, got.output
    assert "escapes the vault" in got.output
    assert PathEscapeError("x").exit_code == 2
