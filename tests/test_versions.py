"""supersede and history: frontmatter edits, refusals, search hiding, chains (with hypothesis)."""
from __future__ import annotations

import re

import json
import shutil
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from wikimem.api import init_vault, open_vault
from wikimem.cli import app
from wikimem.errors import ConflictError, PathEscapeError, ReadOnlyError, UsageError
from wikimem.knowledge import versions
from wikimem.knowledge.versions import PageNotFoundError, VersionChainError, order_chain


def page(title: str, body: str, extra: str = "") -> str:
    return f"---\ntitle: {title}\n{extra}---\n# {title}\n\n{body}\n"


@pytest.fixture
def vault(tmp_path):
    init_vault(tmp_path / "v")
    root = tmp_path / "v"
    (root / "concepts/a.md").write_text(page("A", "## Setup\n\nLeiden resolution one point zero.", "owner: me\n"))
    (root / "concepts/b.md").write_text(page("B", "## Setup\n\nLeiden resolution two.\n\n## Results\n\nBetter."))
    (root / "concepts/c.md").write_text(page("C", "Leiden resolution three."))
    v = open_vault(root, embedder="fake")
    v.index()
    yield v
    v.close()


def test_supersede_edits_both_pages_and_keeps_other_keys(vault):
    res = vault.supersede("concepts/a.md", "concepts/b.md")
    assert res.changed and res.warnings == []
    a = (vault.root / "concepts/a.md").read_text()
    assert re.match(r"---\ntitle: A\nowner: me\nstatus: superseded\nsuperseded_by: '\[\[b\]\]'\n"
                    r"superseded_on: '\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d'\n---\n# A\n", a), a
    b = vault.parse_file("concepts/b.md")
    assert b.supersedes == ("a",)
    assert "supersede · concepts/a.md → concepts/b.md" in (vault.root / "log.md").read_text()


def test_default_search_stops_returning_old_at_once(vault):
    before = {h.path for h in vault.search("leiden resolution", mode="lexical", per_page=1, limit=10)}
    assert "concepts/a.md" in before
    vault.supersede("concepts/a.md", "concepts/b.md")
    after = {h.path for h in vault.search("leiden resolution", mode="lexical", limit=10)}
    assert "concepts/a.md" not in after and "concepts/b.md" in after
    hybrid = {h.path for h in vault.search("leiden resolution", limit=10)}
    assert "concepts/a.md" not in hybrid
    assert "concepts/a.md" in {h.path for h in vault.search("leiden resolution", limit=10, include_superseded=True)}


def test_supersede_is_idempotent(vault):
    vault.supersede("concepts/a.md", "concepts/b.md")
    text = (vault.root / "concepts/b.md").read_text()
    again = vault.supersede("concepts/a.md", "concepts/b.md")
    assert not again.changed and (vault.root / "concepts/b.md").read_text() == text


def test_refusals_write_nothing(vault):
    vault.supersede("concepts/a.md", "concepts/b.md")
    snapshot = {p: p.read_bytes() for p in vault.root.rglob("*.md")}
    with pytest.raises(VersionChainError, match="cycle"):
        vault.supersede("concepts/b.md", "concepts/a.md")
    with pytest.raises(VersionChainError, match="already superseded by concepts/b.md"):
        vault.supersede("concepts/a.md", "concepts/c.md")
    with pytest.raises(VersionChainError, match="itself superseded"):
        vault.supersede("concepts/c.md", "concepts/a.md")
    with pytest.raises(PageNotFoundError, match="concepts/nope.md"):
        vault.supersede("concepts/nope.md", "concepts/b.md")
    with pytest.raises(ReadOnlyError):
        vault.supersede("raw/articles/x.md", "concepts/b.md")
    with pytest.raises(PathEscapeError):
        vault.supersede("../x.md", "concepts/b.md")
    with pytest.raises(UsageError):
        vault.supersede("concepts/c.md", "concepts/c.md")
    assert {p: p.read_bytes() for p in vault.root.rglob("*.md")} == snapshot


def test_old_changed_meanwhile_undoes_new(vault, monkeypatch):
    from wikimem.knowledge import versions as versions_mod
    real = versions_mod.update_frontmatter

    def racing(ctx, rel, changes, expected_sha256=None):
        if rel == "concepts/a.md":
            (vault.root / rel).write_text(page("A", "edited by someone else"))
        return real(ctx, rel, changes, expected_sha256=expected_sha256)

    before = (vault.root / "concepts/b.md").read_bytes()
    monkeypatch.setattr(versions_mod, "update_frontmatter", racing)
    with pytest.raises(ConflictError):
        vault.supersede("concepts/a.md", "concepts/b.md")
    assert (vault.root / "concepts/b.md").read_bytes() == before
    assert "edited by someone else" in (vault.root / "concepts/a.md").read_text()


def test_history_from_every_member(vault):
    vault.supersede("concepts/a.md", "concepts/b.md")
    vault.supersede("concepts/b.md", "concepts/c.md")
    chains = [vault.history(p) for p in ("concepts/a.md", "concepts/b.md", "concepts/c.md")]
    assert [[v.path for v in h.versions] for h in chains] == [["concepts/a.md", "concepts/b.md", "concepts/c.md"]] * 3
    h = chains[0]
    assert h.current == "concepts/c.md" and [v.status for v in h.versions] == ["superseded", "superseded", "active"]
    first = h.changes[0]
    assert (first.old, first.new) == ("concepts/a.md", "concepts/b.md")
    assert "Results" in first.sections_added and first.lines_added >= 1 and first.lines_removed >= 1
    second = h.changes[1]
    assert set(second.sections_removed) >= {"Setup", "Results"}


def test_history_of_a_page_without_versions(vault):
    h = vault.history("concepts/c.md")
    assert [v.path for v in h.versions] == ["concepts/c.md"] and h.changes == ()


def test_order_chain_puts_older_first():
    edges = {"n": ("m",), "m": ("o",)}
    assert order_chain({"n", "m", "o"}, edges, key=lambda p: p) == ["o", "m", "n"]


def test_cli_supersede_history_json(vault):
    runner = CliRunner()
    r = runner.invoke(app, ["supersede", "concepts/a.md", "concepts/b.md", "--vault", str(vault.root), "--json"])
    assert r.exit_code == 0, r.output
    assert json.loads(r.stdout) == {"old": "concepts/a.md", "new": "concepts/b.md", "changed": True, "warnings": []}
    r = runner.invoke(app, ["history", "concepts/b.md", "--vault", str(vault.root), "--json"])
    data = json.loads(r.stdout)
    assert [v["path"] for v in data["versions"]] == ["concepts/a.md", "concepts/b.md"]
    assert data["changes"][0]["lines_changed"] >= 2
    r = runner.invoke(app, ["supersede", "concepts/b.md", "concepts/a.md", "--vault", str(vault.root)])
    assert r.exit_code == 1 and "cycle" in r.output
    r = runner.invoke(app, ["history", "concepts/zz.md", "--vault", str(vault.root)])
    assert r.exit_code == 1 and "not found" in r.output


# -- hypothesis: random supersede sequences ------------------------------------------------------
N_PAGES = 5


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(ops=st.lists(st.tuples(st.integers(0, N_PAGES - 1), st.integers(0, N_PAGES - 1)), max_size=12))
def test_random_supersedes_never_cycle_and_history_is_the_same_from_every_member(ops):
    tmp = Path(tempfile.mkdtemp())
    try:
        root = tmp / "v"
        (root / "concepts").mkdir(parents=True)
        for i in range(N_PAGES):
            (root / f"concepts/p{i}.md").write_text(page(f"P{i}", f"text {i}"))
        v = open_vault(root, embedder="none")
        refresh = versions.refresh_cache
        versions.refresh_cache = lambda *a, **k: None  # the cache is not what this test is about
        try:
            for old, new in ops:
                try:
                    v.supersede(f"concepts/p{old}.md", f"concepts/p{new}.md")
                except (VersionChainError, UsageError):
                    pass
        finally:
            versions.refresh_cache = refresh
        pages = v.load().pages
        edges = versions.supersede_edges(pages)
        for start in edges:  # no page reaches itself
            todo, seen = list(edges[start]), set()
            while todo:
                p = todo.pop()
                assert p != start
                if p not in seen:
                    seen.add(p)
                    todo.extend(edges.get(p, ()))
        for i in range(N_PAGES):
            h = v.history(f"concepts/p{i}.md")
            paths = [x.path for x in h.versions]
            for member in paths:
                assert [x.path for x in v.history(member).versions] == paths
            for j, newer in enumerate(paths):  # oldest first: what a version supersedes comes before it
                assert set(versions.supersedes_of(pages[newer])) <= set(paths[:j])
            superseded = {o for p in paths for o in versions.supersedes_of(pages[p])}
            assert superseded == set(paths[:-1])  # one current version, the last one
            assert [pages[p].status for p in paths] == ["superseded"] * (len(paths) - 1) + ["active"]
    finally:
        shutil.rmtree(tmp)


def test_lint_fix_links_superseded_by_to_the_path_not_the_title(tmp_path):
    """Issue 27 item 11: WM304's fix wrote the new page's title, a broken link or one to another page."""
    from wikimem.api import open_vault
    root = tmp_path / "v"
    (root / "notes").mkdir(parents=True)
    (root / "SCHEMA.md").write_text("# S\n")
    (root / "notes/old.md").write_text("# Old\n")
    (root / "notes/new.md").write_text("---\ntitle: Shiny Title\nsupersedes: \"[[old]]\"\n---\n# New\n")
    v = open_vault(root, embedder="none")
    v.index()
    v.lint(fix=True)
    text = (root / "notes/old.md").read_text()
    assert 'superseded_by: "[[notes/new]]"' in text or "superseded_by: '[[notes/new]]'" in text or \
        "superseded_by: '[[notes/new]]'" in text or "[[notes/new]]" in text
    assert "Shiny Title" not in text


@pytest.mark.parametrize("name", ["a|b.md", "c#d.md", "e^f.md"])
def test_supersede_refuses_names_a_wikilink_cannot_hold(tmp_path, name):
    """Issue 27 item 12: such a name wrote links that never resolve."""
    from wikimem.api import open_vault
    from wikimem.errors import UsageError
    root = tmp_path / "v"
    (root / "notes").mkdir(parents=True)
    (root / "notes" / name).write_text("# Odd\n")
    (root / "notes/new.md").write_text("# New\n")
    v = open_vault(root, embedder="none")
    v.index()
    with pytest.raises(UsageError, match="cannot be a"):
        v.supersede(f"notes/{name}", "notes/new.md")
    assert "supersedes" not in (root / "notes/new.md").read_text()
