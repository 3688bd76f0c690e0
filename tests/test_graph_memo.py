"""The stored results behind `stats`, `communities` and `search --community` are shortcuts only:
served or not, fresh or stale, intact or damaged, the answer equals a fresh computation."""
from __future__ import annotations

import json

from wikimem.api import open_vault
from wikimem.graph import communities as C
from wikimem.graph import stats as S
from wikimem.graph.pagegraph import load_page_graph

FILES = {
    "a/a1.md": "---\ntags: [alpha]\n---\n# A1\n\n[[a2]] [[a3]] [[b1]]\n",
    "a/a2.md": "---\ntags: [alpha]\n---\n# A2\n\n[[a1]] [[a3]]\n",
    "a/a3.md": "---\ntags: [alpha, shared]\n---\n# A3\n\n[[a1]] [[a2]] [[a2]]\n",
    "b/b1.md": "---\ntags: [beta]\n---\n# B1\n\n[[b2]] [[b3]]\n",
    "b/b2.md": "---\ntags: [beta, shared]\n---\n# B2\n\n[[b1]] [[b3]] [[missing]]\n",
    "b/b3.md": "---\ntags: [beta]\nsupersedes: \"[[b2]]\"\n---\n# B3\n\n[[b1]]\n",
    "index.md": "# Index\n\n[[a1]] [[b1]]\n",
}


def fresh(v) -> dict:
    return C.detect(v, reuse=False).to_dict()


def stored_files(v):
    return [v.cache.dir / C.RESULT_FILE, v.cache.dir / S.RESULT_FILE]


def without_size(s: dict) -> dict:
    return {k: val for k, val in s.items() if k != "cache_bytes"}


def test_served_from_the_memo_equals_fresh(make_vault):
    v = open_vault(make_vault(FILES), embedder="none")
    v.index()
    first = v.stats()
    assert all(p.exists() for p in stored_files(v))
    assert without_size(v.stats()) == without_size(first)  # read back
    assert v.communities().to_dict() == fresh(v)
    members = {c["id"]: set(c["members"]) for c in fresh(v)["communities"]}
    from wikimem.graph import community_members
    assert all(community_members(v, n) == paths for n, paths in members.items())
    for p in stored_files(v):
        p.unlink()
    assert without_size(v.stats()) == without_size(first)  # recomputed: the same


def test_corrupt_memo_is_ignored_and_rewritten(make_vault):
    v = open_vault(make_vault(FILES), embedder="none")
    v.index()
    before = without_size(v.stats())
    for p in stored_files(v):
        p.write_text('{"build": "x", "data": ', encoding="utf-8")  # truncated
    assert without_size(v.stats()) == before
    for p in stored_files(v):
        json.loads(p.read_text(encoding="utf-8"))  # rewritten whole


def test_memo_of_another_state_or_with_wrong_data_is_not_trusted(make_vault):
    v = open_vault(make_vault(FILES), embedder="none")
    v.index()
    v.stats()
    # a memo whose keys match but whose data is a lie would be served: so the keys must change
    # with the state; after a build that changes a link, both are recomputed
    (v.root / "a" / "a1.md").write_text("# A1\n\n[[a2]]\n", encoding="utf-8")
    v.index()
    s = v.stats()
    assert s["communities"] == {k: val for k, val in S.stats(v)["communities"].items()}
    assert v.communities().to_dict() == fresh(v)
    planted = json.loads(stored_files(v)[0].read_text(encoding="utf-8"))
    planted["build"], planted["key"] = "old", "old"  # an older state's result
    planted["data"]["communities"][0]["label"] = "planted"
    stored_files(v)[0].write_text(json.dumps(planted), encoding="utf-8")
    assert v.communities().to_dict() == fresh(v)
    assert all(c.label != "planted" for c in v.communities().communities)


def test_a_tag_edit_changes_the_labels(make_vault):
    """Labels come from tags: a tag change with the links unchanged must not reuse old labels."""
    v = open_vault(make_vault(FILES), embedder="none")
    v.index()
    assert any("#alpha" in c.label for c in v.communities().communities)
    for name in ("a1", "a2", "a3"):
        path = v.root / "a" / f"{name}.md"
        path.write_text(path.read_text(encoding="utf-8").replace("alpha", "gamma"), encoding="utf-8")
    v.index()
    labels = [c.label for c in v.communities().communities]
    assert any("#gamma" in label for label in labels) and not any("#alpha" in label for label in labels)
    assert v.communities().to_dict() == fresh(v)


def test_page_graph_arrays_match_the_edge_table(make_vault):
    v = open_vault(make_vault(FILES), embedder="none")
    v.index()
    graph = load_page_graph(v)
    rows = v.cache.db.execute("SELECT src, dst, type, weight FROM edges WHERE type != 'tagged' "
                              "AND src != dst ORDER BY src, dst, type").fetchall()
    expected = [r for r in rows if r[0] in graph.paths and r[1] in graph.paths]
    assert graph.edges() == [(s, d, t, float(w)) for s, d, t, w in expected]
    assert "index.md" not in graph.paths
    assert ("b/b3.md", "b/b2.md", "supersedes", 2.0) in graph.edges()
    tags = {graph.paths[p]: set() for p in graph.tag_page.tolist()}
    for p, t in zip(graph.tag_page.tolist(), graph.tag_code.tolist()):
        tags[graph.paths[p]].add(graph.tag_names[t])
    assert tags["a/a3.md"] == {"alpha", "shared"} and tags["b/b3.md"] == {"beta"}
    assert graph.titles[graph.paths.index("a/a1.md")] == "A1"
    assert graph.fingerprint() == load_page_graph(v).fingerprint()


def test_links_follow_a_target_created_later(make_vault):
    """A link to a page that did not exist yet becomes resolved once the page is built, as in a
    fresh rebuild (the linking page's stored record is not re-parsed)."""
    root = make_vault(FILES)
    v = open_vault(root, embedder="none")
    v.index()
    assert v.stats(communities=False)["links"]["broken"] == 1
    (root / "missing.md").write_text("# Missing\n\nNow here.\n", encoding="utf-8")
    v.index()
    after = v.stats(communities=False)["links"]
    assert after["broken"] == 0 and after["resolved"] == after["total"]
    rebuilt = open_vault(root, embedder="none")
    rebuilt.index(rebuild=True)
    assert rebuilt.stats(communities=False)["links"] == after
