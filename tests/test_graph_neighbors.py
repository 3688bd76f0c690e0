"""neighbors and path on a small fixture graph whose answers are known by hand.

    a --2x links_to--> b --> c --> d        e --> a        a --supersedes--> f (weight 2)
    a carries #topic; index.md links to every page (a structural page: never a neighbour)
"""
from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from wikimem.api import open_vault
from wikimem.cli import app
from wikimem.errors import UsageError, WikimemError

runner = CliRunner()

FILES = {
    "a.md": "---\ntitle: Alpha\nsupersedes: \"[[f]]\"\n---\n# Alpha\n\nSee [[b]] and again [[b]]. #topic\n",
    "b.md": "# Beta\n\nOn to [[c]].\n",
    "c.md": "# Gamma\n\nOn to [[d]].\n",
    "d.md": "# Delta\n\nThe end.\n",
    "e.md": "# Epsilon\n\nBack to [[a]].\n",
    "f.md": "# Foxtrot\n\nThe old alpha.\n",
    "lone.md": "# Lone\n\nNo links.\n",
    "index.md": "# Index\n\n" + "".join(f"- [[{p}]]\n" for p in "abcdef"),
}


@pytest.fixture
def vault(make_vault):
    v = open_vault(make_vault(FILES), embedder="none")
    v.index()
    return v


def by_path(report):
    return {n.path: n for n in report.neighbors}


def test_depth_one_both_directions_with_types_and_weights(vault):
    report = vault.neighbors("a.md")
    found = by_path(report)
    assert set(found) == {"b.md", "e.md", "f.md"}  # index.md is structural: left out
    assert [(e.direction, e.type, e.weight) for e in found["b.md"].edges] == [("out", "links_to", 2.0)]
    assert [(e.direction, e.type, e.weight) for e in found["e.md"].edges] == [("in", "links_to", 1.0)]
    assert [(e.direction, e.type, e.weight) for e in found["f.md"].edges] == [("out", "supersedes", 2.0)]
    assert all(n.depth == 1 and n.via == "a.md" for n in report.neighbors)
    # strongest first, then by path
    assert [n.path for n in report.neighbors] == ["b.md", "f.md", "e.md"]


def test_deeper_levels(vault):
    two = by_path(vault.neighbors("a.md", depth=2))
    assert two["c.md"].depth == 2 and two["c.md"].via == "b.md"
    assert "d.md" not in two
    three = by_path(vault.neighbors("a", depth=3))
    assert three["d.md"].depth == 3 and three["d.md"].via == "c.md"
    assert "lone.md" not in three
    with pytest.raises(UsageError):
        vault.neighbors("a.md", depth=4)


def test_type_filter_min_weight_and_fanout(vault):
    assert [n.path for n in vault.neighbors("a.md", types="supersedes").neighbors] == ["f.md"]
    assert {n.path for n in vault.neighbors("a.md", min_weight=2).neighbors} == {"b.md", "f.md"}
    capped = vault.neighbors("a.md", fanout=1)
    assert [n.path for n in capped.neighbors] == ["b.md"]  # b and f tie at 2: path order
    assert capped.truncated == ("a.md",)
    tags = by_path(vault.neighbors("a.md", types=["tagged"]))
    assert tags["#topic"].kind == "tag" and tags["#topic"].edges[0].type == "tagged"
    with pytest.raises(UsageError):
        vault.neighbors("a.md", types="friends_with")


def test_page_names_resolve_and_unknown_pages_fail(vault):
    assert vault.neighbors("Alpha").page == "a.md"  # a title
    assert vault.neighbors("[[b]]").page == "b.md"
    with pytest.raises(WikimemError):
        vault.neighbors("nope")


def test_shortest_path(vault):
    report = vault.path("a.md", "d.md")
    assert report.found and [s.path for s in report.steps] == ["a.md", "b.md", "c.md", "d.md"]
    assert report.length == 3
    assert report.steps[1].edges[0].direction == "out"
    back = vault.path("d.md", "e.md")  # against the links' direction: found undirected...
    assert [s.path for s in back.steps] == ["d.md", "c.md", "b.md", "a.md", "e.md"]
    assert not vault.path("d.md", "e.md", directed=True).found  # ...not when following links only
    assert not vault.path("a.md", "lone.md").found
    # not through index.md, which would make everything two steps apart
    assert vault.path("b.md", "f.md").length == 2


def test_cli_neighbors_and_path(vault):
    root = str(vault.root)
    result = runner.invoke(app, ["neighbors", "a.md", "-V", root, "--depth", "2", "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["page"] == "a.md" and {n["path"] for n in data["neighbors"]} == {"b.md", "c.md", "e.md", "f.md"}
    assert runner.invoke(app, ["neighbors", "a.md", "-V", root]).exit_code == 0
    ok = runner.invoke(app, ["path", "a.md", "d.md", "-V", root, "--json"])
    assert ok.exit_code == 0 and json.loads(ok.stdout)["length"] == 3
    missing = runner.invoke(app, ["path", "a.md", "lone.md", "-V", root])
    assert missing.exit_code == 1 and "no link path" in missing.stdout
    bad = runner.invoke(app, ["neighbors", "a.md", "-V", root, "--type", "bogus"])
    assert bad.exit_code == 2
    unknown = runner.invoke(app, ["path", "a.md", "zzz", "-V", root])
    assert unknown.exit_code == 1 and "page not found" in unknown.output


def test_path_lengths_match_igraph_on_a_random_graph(make_vault):
    import random

    import igraph
    rng = random.Random(4)
    n = 40
    links = {i: rng.sample([j for j in range(n) if j != i], rng.choice([0, 1, 1, 2])) for i in range(n)}
    root = make_vault({f"p{i}.md": f"# P{i}\n\n" + " ".join(f"[[p{j}]]" for j in links[i]) + "\n" for i in range(n)})
    v = open_vault(root, embedder="none")
    v.index()
    g = igraph.Graph(n=n, edges=sorted({(min(i, j), max(i, j)) for i in links for j in links[i]}))
    gd = igraph.Graph(n=n, edges=[(i, j) for i in links for j in links[i]], directed=True)
    for s, t in [(rng.randrange(n), rng.randrange(n)) for _ in range(30)]:
        for graph, directed in ((g, False), (gd, True)):
            want = graph.distances(s, t, mode="out")[0][0]
            report = v.path(f"p{s}.md", f"p{t}.md", directed=directed)
            if want == float("inf"):
                assert not report.found
            else:
                assert report.found and report.length == want
                steps = [st.path for st in report.steps]
                if directed:  # edges are seen from the step before: all followed as written
                    assert all(e.direction == "out" for st in report.steps[1:] for e in st.edges)
                assert steps[0] == f"p{s}.md" and steps[-1] == f"p{t}.md"
                for x, y in zip(steps, steps[1:]):  # every step is a real link
                    i, j = int(x[1:-3]), int(y[1:-3])
                    assert j in links[i] if directed else (j in links[i] or i in links[j])
