"""wikimem stats: every count checked against a small vault counted by hand."""
from __future__ import annotations

import json

from typer.testing import CliRunner

from wikimem.api import open_vault
from wikimem.cli import app

runner = CliRunner()

FILES = {
    "entities/x.md": "---\ntags: [t1]\n---\n# X\n\nSee [[concepts/y]] and [[missing page]].\n",
    "concepts/y.md": "---\ntags: [t1, t2]\n---\n# Y\n\nBack to [[entities/x]].\n",
    "concepts/old.md": "---\nstatus: superseded\n---\n# Old\n\nOutdated.\n",
    "concepts/orphan.md": "# Orphan\n\nNobody links here, but index.md lists it.\n",
    "queries/q.md": "# Q\n\nAnswered by [[concepts/y]].\n",
    "memories/m1.md": "---\ntype: memory\nkind: preference\n---\nLikes tea.\n",
    "memories/m2.md": "---\ntype: memory\n---\nMet Bob.\n",
    "raw/articles/src.md": "# Source\n\nRaw text.\n",
    "raw/assets/img.png": b"\x89PNG\r\n\x1a\n0000",
    "index.md": "# Index\n\n- [[concepts/orphan]]\n",
}


def test_stats_counts(make_vault):
    v = open_vault(make_vault(FILES), embedder="fake")
    v.index()
    s = v.stats()
    assert s["pages"] == 9
    assert s["by_type"]["memory"] == 2 and s["by_type"]["query"] == 1 and s["by_type"]["entity"] == 1
    assert s["by_folder"] == {".": 1, "concepts/": 3, "entities/": 1, "memories/": 2, "queries/": 1, "raw/": 1}
    assert {t["tag"]: t["pages"] for t in s["top_tags"]} == {"t1": 2, "t2": 1}
    assert s["links"]["total"] == 5 and s["links"]["resolved"] == 4 and s["links"]["broken"] == 1
    # orphans as lint's WM401 counts them: listed in index.md, superseded, memories and raw/ are not
    assert s["orphans"]["pages"] == ["queries/q.md"]
    assert s["superseded"] == {"count": 1, "pages": ["concepts/old.md"]}
    assert s["hubs"][:2] == [{"path": "concepts/y.md", "inbound": 2}, {"path": "entities/x.md", "inbound": 1}]
    assert s["raw_sources"]["files"] == 2 and s["raw_sources"]["notes"] == 1
    assert s["query_pages"] == 1
    assert s["memories"] == {"count": 2, "by_kind": {"episodic": 1, "preference": 1}}
    assert s["embedding"]["coverage"] == 1.0 and s["embedding"]["embedder"].startswith("fake")
    assert s["cache_bytes"] > 0
    assert s["communities"]["count"] >= 1 and s["communities"]["largest"] >= 2


def test_stats_follow_an_edit(make_vault):
    root = make_vault(FILES)
    v = open_vault(root, embedder="none")
    v.index()
    assert "queries/q.md" in v.stats(communities=False)["orphans"]["pages"]  # now kept for this state
    (root / "concepts" / "orphan.md").write_text("# Orphan\n\nNow links [[queries/q]].\n", encoding="utf-8")
    v.index()
    s = v.stats(communities=False)
    assert "communities" not in s
    assert "queries/q.md" not in s["orphans"]["pages"]
    assert s["links"]["resolved"] == 5
    # the embedder "none": no embedder named, no vectors, coverage 0 (not "unknown")
    assert s["embedding"]["embedder"] is None
    assert s["embedding"]["vectors"] == 0 and s["embedding"]["coverage"] == 0.0


def test_stats_cli(make_vault):
    root = make_vault(FILES)
    open_vault(root, embedder="none").index()
    result = runner.invoke(app, ["stats", str(root), "--json"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["pages"] == 9
    table = runner.invoke(app, ["stats", str(root)])
    assert table.exit_code == 0 and "orphans" in table.stdout and "by type" in table.stdout
    empty = make_vault({"a.md": "# A\n"}, name="never-indexed")
    missing = runner.invoke(app, ["stats", str(empty)])
    assert missing.exit_code == 1 and "wikimem index" in missing.output


def test_stats_and_lint_count_the_same_orphans(make_vault):
    """issue 26 item 19: stats said 14 orphans where lint said 8; one definition (orphan_pages)."""
    from wikimem.lint import lint
    files = {**FILES,
             "concepts/named.md": "# Named\n\nOnly log.md and communities.md link here.\n",
             "concepts/newer.md": "---\nsupersedes: \"[[concepts/gone]]\"\n---\n# Newer\n\n[[entities/x]]\n",
             "concepts/gone.md": "# Gone\n\nSuperseded by a current page, not marked.\n",
             "log.md": "# Log\n\n- [[concepts/named]]\n",
             "communities.md": "# Communities\n\n[[concepts/named]] [[concepts/newer]]\n"}
    v = open_vault(make_vault(files), embedder="none")
    v.index()
    stats_orphans = v.stats(communities=False)["orphans"]
    linted = sorted(f.path for f in lint(v, select=["WM401"]).findings)
    assert stats_orphans["pages"] == linted == ["concepts/named.md", "concepts/newer.md", "queries/q.md"]
    assert stats_orphans["count"] == 3
    v.close()
