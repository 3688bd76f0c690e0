"""Related notes (pages nearest by meaning) and recent changes, through the API, the CLI and MCP."""
from __future__ import annotations

import datetime as dt
import json
import os
import time

import pytest
from typer.testing import CliRunner

from wikimem.api import open_vault
from wikimem.cli import app
from wikimem.errors import UsageError

runner = CliRunner()

NOTES = {
    "concepts/Apples.md": "# Apples\n\nApple orchards grow red apples and green apples in autumn orchards.\n",
    "concepts/Orchards.md": "# Orchards\n\nOrchards of apple trees; apples are picked in autumn. [[Apples]]\n",
    "concepts/Pears.md": "# Pears\n\nPear trees grow in orchards beside apple trees in autumn.\n",
    "concepts/Engines.md": "# Engines\n\nDiesel engines burn fuel; pistons, cylinders and crankshafts.\n",
    "concepts/Old apples.md": "---\nstatus: superseded\n---\n# Old apples\n\nApple orchards grow apples.\n",
    "index.md": "# Index\n\n- [[Apples]] apples orchards autumn\n",
}


@pytest.fixture
def vault(make_vault):
    v = open_vault(make_vault(NOTES), embedder="fake")
    v.index()
    yield v
    v.close()


def test_related_ranks_by_meaning_and_puts_unlinked_pages_first(vault):
    report = vault.related("Apples", limit=3)
    paths = [r.path for r in report.related]
    assert report.page == "concepts/Apples.md"
    scores = {r.path: r.score for r in report.related}
    assert min(scores, key=scores.get) == "concepts/Engines.md"  # the unrelated page is the farthest
    assert "index.md" not in paths and "concepts/Old apples.md" not in paths  # meta and superseded left out
    linked = [r.linked for r in report.related]
    assert linked == sorted(linked)  # unlinked (False) before linked (True)
    orchards = next(r for r in report.related if r.path == "concepts/Orchards.md")
    assert orchards.linked and orchards.link == "incoming"  # Orchards links to Apples
    assert "apples" in orchards.terms or "orchards" in orchards.terms
    assert all(-1.0 <= r.score <= 1.0 + 1e-6 for r in report.related)


def test_related_options_and_names(vault):
    assert "concepts/Orchards.md" not in [r.path for r in vault.related("Apples", include_linked=False).related]
    assert "concepts/Old apples.md" in [r.path for r in vault.related("Apples", limit=10,
                                                                     include_superseded=True).related]
    assert vault.related("concepts/Apples").page == "concepts/Apples.md"  # path without .md, as a wikilink
    with pytest.raises(UsageError):
        vault.related("Apples", limit=0)


def test_related_without_vectors_says_why(make_vault):
    v = open_vault(make_vault(NOTES), embedder="none")
    v.index()
    report = v.related("Apples")
    assert report.related == () and report.degraded == ("vectors_missing",) and "embedder" in report.notices[0]


def test_related_cli_json_has_the_documented_fields(vault, monkeypatch):
    monkeypatch.setenv("WIKIMEM_EMBEDDER", "fake")
    result = runner.invoke(app, ["related", "Apples", "-V", str(vault.root), "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["page"] == "concepts/Apples.md" and data["related"]
    assert {"path", "title", "score", "linked"} <= set(data["related"][0])
    text = runner.invoke(app, ["related", "Apples", "-V", str(vault.root)])
    assert text.exit_code == 0 and "concepts/Pears.md" in text.stdout


def _age(path, minutes: float) -> None:
    t = time.time() - minutes * 60
    os.utime(path, (t, t))


def test_recent_lists_edits_creations_and_wikimem_writes_newest_first(vault):
    root = vault.root
    for rel in NOTES:
        _age(root / rel, 3 * 24 * 60)  # three days old
    _age(root / "concepts/Pears.md", 90)
    (root / "concepts/Plums.md").write_text(f"---\ncreated: {dt.date.today()}\n---\n# Plums\n\nPlums.\n")
    vault.remember("The orchard opens at nine")
    report = vault.recent("1d")
    kinds = {c.path: c.kind for c in report.changes}
    assert kinds["concepts/Pears.md"] == "edited"
    assert kinds["concepts/Plums.md"] == "created"
    memory = next(p for p in kinds if p.startswith("memories/"))
    assert kinds[memory] == "written" and "remember" in next(c.summary for c in report.changes if c.path == memory)
    assert "concepts/Apples.md" not in kinds  # older than the window
    assert "log.md" not in kinds and "index.md" not in kinds
    whens = [c.when for c in report.changes]
    assert whens == sorted(whens, reverse=True)
    assert [c.path for c in vault.recent("1d", types=["concept"]).changes] == ["concepts/Plums.md",
                                                                             "concepts/Pears.md"]
    assert len(vault.recent("1d", limit=1).changes) == 1 and vault.recent("1d", limit=1).total == report.total


@pytest.mark.parametrize("bad", ["yesterday", "7x", ""])
def test_recent_rejects_an_unreadable_span(vault, bad):
    if bad == "":
        assert vault.recent(bad).since  # empty: the default window
        return
    with pytest.raises(UsageError, match="7d"):
        vault.recent(bad)


def test_recent_cli(vault, monkeypatch):
    monkeypatch.setenv("WIKIMEM_EMBEDDER", "fake")
    result = runner.invoke(app, ["recent", "-V", str(vault.root), "--since", "2w", "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["total"] >= 5 and {"path", "when", "kind", "summary"} <= set(data["changes"][0])
    bad = runner.invoke(app, ["recent", "-V", str(vault.root), "--since", "soon"])
    assert bad.exit_code == 2 and "Traceback" not in bad.output


def test_related_on_a_page_with_only_frontmatter_says_it_has_no_text(make_vault):
    """Issue 47 item 15: it said "run `wikimem index`", which never helps."""
    v = open_vault(make_vault({"Only.md": "---\ntitle: Only\ntags: [x]\n---\n", "B.md": "# B\n\nSome text.\n"}),
                   embedder="fake")
    v.index()
    report = v.related("Only.md")
    assert report.related == () and report.degraded == ("no_text",)
    assert "no text to compare" in report.notices[0] and "wikimem index" not in report.notices[0]
