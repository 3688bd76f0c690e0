"""The smaller edges of issue 35 item 13: a full disk is not corruption, --since past the year 1,
a frontmatter with 100k keys, Rich markup never printed literally off a terminal."""
from __future__ import annotations

import sqlite3

import pytest
from typer.testing import CliRunner

from wikimem.api import open_vault
from wikimem.errors import DiskFullError, UsageError


@pytest.mark.local_store
def test_a_full_disk_is_reported_as_such_and_nothing_is_rebuilt(make_vault, monkeypatch):
    # Was: "manifest is corrupt (database or disk is full)", and a rebuild on a full disk
    v = open_vault(make_vault({"SCHEMA.md": "# S\n", "a.md": "# A\n\nalpha\n"}), embedder="none")
    v.index()
    from wikimem.stores.local.manifest import LocalManifest

    def full(self):
        raise sqlite3.OperationalError("database or disk is full")
    monkeypatch.setattr(LocalManifest, "table_names", full)
    with pytest.raises(DiskFullError, match="not damaged"):
        v.ctx.cache.manifest_problem()
    with pytest.raises(DiskFullError):
        v.status()
    monkeypatch.undo()
    assert v.status()["pages"] == 2  # the cache is still there, untouched


def test_a_since_past_the_year_one_is_a_usage_error(make_vault):
    # Was: "unexpected OverflowError"
    v = open_vault(make_vault({"SCHEMA.md": "# S\n"}), embedder="none")
    with pytest.raises(UsageError, match="year 1"):
        v.recent(since="99999999d")


def test_a_frontmatter_with_100k_keys_says_so_not_yaml_aliases():
    from wikimem.parse import frontmatter as fm
    text = "---\n" + "".join(f"k{i}: {i}\n" for i in range(100_000)) + "---\n# T\n"
    front, body = fm.parse(text)
    assert front.error and "more than" in front.error and "keys" in front.error
    assert body.startswith("# T")


def test_markup_is_rendered_never_printed_literally_off_a_terminal(make_vault, monkeypatch):
    # Was: "[yellow]warning:[/]" printed as is when stderr was not a terminal
    from wikimem.cli import app
    monkeypatch.setenv("WIKIMEM_EMBEDDER", "none")
    root = make_vault({"SCHEMA.md": "# S\n", "a.md": "# A\n", "b.md": "# B\n"})
    from wikimem.api import Vault
    real = Vault.supersede

    def with_warning(self, old, new, **kw):
        res = real(self, old, new, **kw)
        from dataclasses import replace
        return replace(res, warnings=list(res.warnings) + ["a [bold]bracketed[/bold] word"])
    monkeypatch.setattr(Vault, "supersede", with_warning)
    result = CliRunner().invoke(app, ["supersede", "a.md", "b.md", "-V", str(root)])
    text = result.output + (result.stderr if result.stderr_bytes is not None else "")
    assert "warning:" in text and "[yellow]" not in text and "[/]" not in text
    assert "a [bold]bracketed[/bold] word" in text  # the message's own brackets are shown as written
