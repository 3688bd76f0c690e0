"""Communities: planted clusters recovered, deterministic across runs and rebuilds, the JSON shape,
communities.md through the writer path, Obsidian colour groups, the search filter helper."""
from __future__ import annotations

import json
import random

import igraph
import pytest
from typer.testing import CliRunner

from wikimem.api import open_vault
from wikimem.cli import app
from wikimem.errors import IndexStaleError, UsageError, WikimemError
from wikimem.graph import community_members

runner = CliRunner()


def planted_vault(make_vault, clusters: int = 6, size: int = 15, inner: int = 4, cross: int = 10, seed: int = 7):
    """``clusters`` groups of ``size`` pages: each page links to ``inner`` random pages of its own
    group; ``cross`` random links join random pages of different groups."""
    rng = random.Random(seed)
    names = {(c, i): f"c{c}/page {c}-{i}" for c in range(clusters) for i in range(size)}
    links = {key: set() for key in names}
    for (c, i) in names:
        for j in rng.sample([j for j in range(size) if j != i], inner):
            links[(c, i)].add((c, j))
    for _ in range(cross):
        c1, c2 = rng.sample(range(clusters), 2)
        links[(c1, rng.randrange(size))].add((c2, rng.randrange(size)))
    files = {}
    for key, name in names.items():
        body = " ".join(f"[[{names[t]}]]" for t in sorted(links[key]))
        files[f"{name}.md"] = f"---\ntags: [group{key[0]}]\n---\n# Page {key[0]}-{key[1]}\n\nSee {body}.\n"
    files["index.md"] = "# Index\n\n" + "\n".join(f"- [[{n}]]" for n in names.values()) + "\n"
    root = make_vault(files)
    truth = {f"{name}.md": c for (c, _), name in names.items()}
    return root, truth


def indexed(root, embedder="none"):
    v = open_vault(root, embedder=embedder)
    v.index()
    return v


def ari(report, truth: dict[str, int]) -> float:
    found = report.membership()
    paths = sorted(truth)
    return igraph.compare_communities([truth[p] for p in paths], [found[p] for p in paths], method="adjusted_rand")


def test_planted_clusters_are_recovered(make_vault):
    root, truth = planted_vault(make_vault)
    v = indexed(root)
    report = v.communities()
    assert ari(report, truth) >= 0.9
    assert "index.md" not in report.membership()  # the catalogue links everything: left out
    for c in report.communities:
        assert list(c.members) == sorted(c.members)
        assert c.size == len(c.members)
        assert set(c.hubs) <= set(c.members)
        # the label names the planted group's tag, which only that group carries
        assert c.tags and c.label.startswith(f"#{c.tags[0]}")


def test_planted_clusters_with_hubs_and_bridges(make_vault):
    root, truth = planted_vault(make_vault, clusters=4, size=12, cross=12, seed=3)
    report = indexed(root).communities()
    assert ari(report, truth) >= 0.9
    ids = {c.id for c in report.communities}
    membership = report.membership()
    bridged = [b for c in report.communities for b in c.bridges]
    assert bridged, "cross links must show up as bridges"
    for c in report.communities:
        for b in c.bridges:
            assert b.community in ids and b.community != c.id
            assert membership[b.strongest[0]] == c.id and membership[b.strongest[1]] == b.community
            assert b.links >= 1 and b.weight > 0


def test_results_stable_across_runs_and_a_rebuild(make_vault):
    root, _ = planted_vault(make_vault, seed=11)
    v = indexed(root)
    first = v.communities().to_dict()
    from wikimem.graph.communities import detect
    again = detect(v, reuse=False).to_dict()  # computed afresh, not read back
    assert again == first
    v.index(rebuild=True)
    assert detect(v, reuse=False).to_dict() == first
    other = open_vault(root, embedder="none")
    assert other.communities().to_dict() == first


def test_seed_and_resolution_are_used(make_vault):
    root, _ = planted_vault(make_vault, clusters=3, size=10)
    v = indexed(root)
    coarse = v.communities(resolution=0.05)
    fine = v.communities(resolution=5.0)
    assert len(fine.communities) > len(coarse.communities)
    with pytest.raises(UsageError):
        v.communities(resolution=0)


def test_json_shape_from_the_cli(make_vault):
    root, truth = planted_vault(make_vault, clusters=3, size=8)
    indexed(root)
    result = runner.invoke(app, ["communities", str(root), "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert isinstance(data["communities"], list) and data["count"] == len(data["communities"])
    seen = []
    for c in data["communities"]:
        assert {"id", "members", "label", "hubs", "size", "bridges"} <= set(c)
        assert c["members"] == sorted(c["members"]) and c["size"] == len(c["members"])
        seen += c["members"]
    assert sorted(seen) == sorted(truth)  # every page exactly once
    assert [c["id"] for c in data["communities"]] == list(range(1, len(data["communities"]) + 1))
    table = runner.invoke(app, ["communities", str(root)])
    assert table.exit_code == 0 and "communities over" in table.stdout


def test_write_compiles_communities_page_and_logs_it(make_vault):
    root, _ = planted_vault(make_vault, clusters=3, size=8)
    (root / "log.md").write_text("# Log\n", encoding="utf-8")
    v = indexed(root)
    before = v.communities().to_dict()
    result = runner.invoke(app, ["communities", str(root), "--write", "--json"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["page"]["written"] is True
    text = (root / "communities.md").read_text(encoding="utf-8")
    assert "```mermaid" in text and "graph LR" in text
    for c in before["communities"]:
        assert f"## {c['id']}. " in text
        for member in c["members"]:
            assert f"[[{member[:-3]}" in text
    assert "communities.md" in (root / "log.md").read_text(encoding="utf-8")
    # the compiled page is not part of the graph: the next result is the same, the page unchanged
    v2 = open_vault(root, embedder="none")
    v2.index()
    assert v2.communities().to_dict() == before
    again = runner.invoke(app, ["communities", str(root), "--write", "--json"])
    assert json.loads(again.stdout)["page"]["written"] is False


def test_write_refuses_a_secret_and_keeps_the_page(make_vault, monkeypatch):
    root, _ = planted_vault(make_vault, clusters=2, size=6)
    v = indexed(root)
    from wikimem.graph import compile as compile_mod
    monkeypatch.setattr(compile_mod, "render", lambda report, info: "AKIAIOSFODNN7EXAMPLE secret\n")
    with pytest.raises(WikimemError):
        v.communities(write=True)
    assert not (root / "communities.md").exists()


def test_obsidian_graph_keeps_settings_and_user_groups(make_vault):
    root, _ = planted_vault(make_vault, clusters=3, size=8)
    settings = {"showTags": True, "scale": 0.7,
                "colorGroups": [{"query": "tag:#mine", "color": {"a": 1, "rgb": 1}}]}
    (root / ".obsidian").mkdir()
    original = json.dumps(settings, indent=4).encode()
    (root / ".obsidian" / "graph.json").write_bytes(original)
    v = indexed(root)
    report, written = v.communities(obsidian_graph=True)
    data = json.loads((root / ".obsidian" / "graph.json").read_text())
    assert data["showTags"] is True and data["scale"] == 0.7
    groups = data["colorGroups"]
    assert groups[0]["query"] == "tag:#mine"  # the user's groups first: Obsidian's first match wins
    ours = groups[1:]
    assert len(ours) == len([c for c in report.communities if c.size >= 2]) == written["obsidian_graph"].groups
    assert all(f'path:"{m}"' in ours[0]["query"] for m in report.communities[0].members)
    assert (root / ".obsidian" / "graph.json.bak").read_bytes() == original
    v.communities(obsidian_graph=True)  # a second run replaces its own groups, keeps the user's
    again = json.loads((root / ".obsidian" / "graph.json").read_text())["colorGroups"]
    assert again == groups


def test_obsidian_graph_refuses_invalid_json(make_vault):
    root, _ = planted_vault(make_vault, clusters=2, size=6)
    (root / ".obsidian").mkdir()
    (root / ".obsidian" / "graph.json").write_text("{not json", encoding="utf-8")
    indexed(root)
    result = runner.invoke(app, ["communities", str(root), "--obsidian-graph"])
    assert result.exit_code == 1 and "not valid JSON" in result.output
    assert (root / ".obsidian" / "graph.json").read_text() == "{not json"


def test_semantic_without_vectors_says_so(make_vault):
    root, _ = planted_vault(make_vault, clusters=2, size=6)
    v = indexed(root)
    report = v.communities(semantic=True)
    assert report.semantic and report.semantic_edges == 0
    assert any("--semantic skipped" in n for n in report.notices)


def test_semantic_edges_join_an_unlinked_page(make_vault):
    words = {0: "leiden graph clustering community modularity", 1: "bm25 lexical ranking tokens inverted"}
    files = {}
    for c in (0, 1):
        for i in range(6):
            others = " ".join(f"[[g{c}-{j}]]" for j in range(6) if j != i)
            files[f"g{c}-{i}.md"] = f"# G{c} {i}\n\n{words[c]} {words[c]}. {others}\n"
    files["lonely.md"] = f"# Lonely\n\n{words[0]} {words[0]} {words[0]}\n"
    root = make_vault(files)
    v = indexed(root, embedder="fake")
    plain = v.communities()
    assert [c.size for c in plain.communities if "lonely.md" in c.members] == [1]
    report = v.communities(semantic=True, k=3)
    assert report.semantic_edges > 0 and not report.notices
    home = next(c for c in report.communities if "lonely.md" in c.members)
    assert home.size > 1


def test_community_members_for_the_search_filter(make_vault):
    root, _ = planted_vault(make_vault, clusters=3, size=8)
    v = indexed(root)
    report = v.communities()
    assert community_members(v, 1) == set(report.communities[0].members)
    with pytest.raises(UsageError):
        community_members(v, len(report.communities) + 1)


def test_no_cache_is_a_clear_error(make_vault):
    root = make_vault({"a.md": "# A\n"})
    result = runner.invoke(app, ["communities", str(root)])
    assert result.exit_code == 1 and "wikimem index" in result.output
    with pytest.raises(IndexStaleError):
        open_vault(root, embedder="none").communities()


def test_empty_vault(make_vault):
    root = make_vault({"README.txt": "no notes"})
    report = indexed(root).communities()
    assert report.communities == () and report.pages == 0


def test_stored_result_follows_an_edit(make_vault):
    root, truth = planted_vault(make_vault, clusters=3, size=8, seed=5)
    v = indexed(root)
    before = v.communities()
    moved = "c0/page 0-0.md"
    targets = " ".join(f"[[c1/page 1-{i}]]" for i in range(8))
    (root / moved).write_text(f"# Moved\n\nNow about group one: {targets}\n", encoding="utf-8")
    v.index()
    from wikimem.graph.communities import detect
    after = v.communities()
    assert after.to_dict() == detect(v, reuse=False).to_dict()  # the stored copy is never stale
    assert before.membership()[moved] == before.membership()["c0/page 0-1.md"]
    assert after.membership()[moved] == after.membership()["c1/page 1-0.md"]


def test_search_filters_by_community(make_vault):
    """`wikimem search --community N` keeps to that community's pages."""
    files = {}
    for group in ("a", "b"):
        for i in range(4):
            links = " ".join(f"[[{group}{j}]]" for j in range(4) if j != i)
            files[f"{group}/{group}{i}.md"] = f"# {group}{i}\n\nShared word tomatoes. {links}\n"
    v = open_vault(make_vault(files), embedder="none")
    v.index()
    members = {c["id"]: set(c["members"]) for c in v.communities().to_dict()["communities"]}
    for n, paths in members.items():
        hits = v.search("tomatoes", limit=20, community=n).hits
        assert hits and {h.path for h in hits} <= paths
