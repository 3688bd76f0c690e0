"""communities --write / --obsidian-graph as a user sees them (issue 26 items 12 and 20): the
user's colour groups come first, the page and the command count the same communities, and
wikimem's own writes leave the cache current."""
from __future__ import annotations

import json
import re

from typer.testing import CliRunner

from wikimem.api import open_vault
from wikimem.cli import app

runner = CliRunner()


def _vault(make_vault):
    """Two linked triangles and one page nothing links to (a singleton community)."""
    files = {
        "a1.md": "# A1\n\n[[a2]] [[a3]]\n", "a2.md": "# A2\n\n[[a3]] [[a1]]\n", "a3.md": "# A3\n\n[[a1]]\n",
        "b1.md": "# B1\n\n[[b2]] [[b3]]\n", "b2.md": "# B2\n\n[[b3]] [[b1]]\n", "b3.md": "# B3\n\n[[b1]]\n",
        "lonely.md": "# Lonely\n\nNo links here.\n",
        "log.md": "# Log\n",
    }
    root = make_vault(files)
    v = open_vault(root, embedder="none")
    v.index()
    return root, v


def test_user_colour_groups_stay_first(make_vault):
    root, v = _vault(make_vault)
    (root / ".obsidian").mkdir()
    mine = {"query": "tag:#mine", "color": {"a": 1, "rgb": 1}}
    (root / ".obsidian" / "graph.json").write_text(json.dumps({"colorGroups": [mine]}), encoding="utf-8")
    v.communities(obsidian_graph=True)
    groups = json.loads((root / ".obsidian" / "graph.json").read_text())["colorGroups"]
    assert groups[0] == mine  # Obsidian colours a page by the first group that matches it
    assert len(groups) == 3
    v.communities(obsidian_graph=True)  # ours replaced, the user's still first
    assert json.loads((root / ".obsidian" / "graph.json").read_text())["colorGroups"] == groups


def test_page_and_command_count_the_same_communities(make_vault):
    root, v = _vault(make_vault)
    result = runner.invoke(app, ["communities", str(root), "--write"])
    assert result.exit_code == 0, result.output
    said = int(re.search(r"(\d+) communities over (\d+) pages", result.stdout).group(1))
    text = (root / "communities.md").read_text(encoding="utf-8")
    written = int(re.search(r"(\d+) communities over (\d+) pages", text).group(1))
    assert said == written == 3
    assert "1 of them a single page" in text
    assert "[[lonely|Lonely]]" in text.split("## Unclustered", 1)[1]


def _stale(root) -> list[str]:
    v = open_vault(root, embedder="none")
    try:
        return v.status().get("stale_files") or []
    finally:
        v.close()


def test_own_writes_leave_the_cache_current(make_vault):
    root, v = _vault(make_vault)
    v.communities(write=True)
    assert _stale(root) == []
    v.communities(obsidian_graph=True)  # logs a line in log.md
    assert _stale(root) == []
    result = runner.invoke(app, ["doctor", str(root), "--embedder", "none", "--json"])
    checks = {c["name"]: c for c in json.loads(result.stdout)["checks"]}
    assert checks["freshness"]["status"] == "ok", checks["freshness"]


def test_a_folder_of_unlinked_notes_is_told_why_every_page_is_its_own_community(make_vault):
    # Was: 320 tldr pages without links listed "318 communities over 320 pages" and nothing else
    root, v = _vault(make_vault)
    assert not v.communities().notices  # 1 of 7 pages alone: a normal vault says nothing
    files = {f"n{i}.md": f"# Note {i}\n\nplain text {i}\n" for i in range(6)}
    files["n0.md"] = "# Note 0\n\n[[n1]]\n"
    loose = open_vault(make_vault(files, name="loose"), embedder="none")
    loose.index()
    notices = loose.communities().notices
    assert any("4 of 6 pages link to no other page" in n and "--semantic" in n for n in notices), notices
    result = runner.invoke(app, ["communities", "-V", str(loose.root)])
    assert "4 of 6 pages link to no other page" in result.output
