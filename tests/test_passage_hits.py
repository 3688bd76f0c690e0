"""The passage shown with a search hit (Hit.passage, search/fusion.py), end to end: the title prefix
stripped once, following edits, deletions, retitles and another process's edit, none in lexical mode
or with passages off, only allowed pages' under a folder filter, never a thematic break."""
from __future__ import annotations

import pytest

from wikimem.api import open_vault


def _passage_rows(vault) -> dict[str, list[str]]:
    rows: dict[str, list[str]] = {}
    for path, title, text in vault.cache.db.execute(
            "SELECT c.path, c.title, p.text FROM passages p JOIN chunks c ON c.vid = p.vid"):
        rows.setdefault(path, []).append(text[len(title) + 2:])
    return rows


@pytest.mark.adversarial
def test_a_title_that_also_starts_a_paragraph_is_stripped_once(make_vault):
    title = "Re: C++ (v2) [draft]*"
    root = make_vault({"weird.md": f"---\ntitle: \"{title}\"\n---\n"
                                   f"{title} explains zebra crossing lights at night.\n\n"
                                   "Apples and pears grow in orchards.\n\nPlums ripen late in summer.\n"})
    vault = open_vault(root, embedder="fake", embed_passages="all")
    vault.index()
    hit = vault.search(f"{title} zebra crossing lights at night", mode="vector").hits[0]
    assert hit.title == title
    assert hit.passage == f"{title} explains zebra crossing lights at night."
    vault.close()


ZEBRA_PAGES = {
    "a.md": "# a\n\n- zebra crossing lights at night\n\n- apples grow on trees\n\n- pears are green\n",
    "b.md": "# b\n\n- unrelated cooking notes\n\n- recipes for soup\n",
}


def test_the_passage_shown_follows_edits_and_deletions(make_vault):
    root = make_vault(dict(ZEBRA_PAGES))
    vault = open_vault(root, embedder="fake", embed_passages="all")
    vault.index()
    hit = vault.search("zebra crossing lights", mode="vector").hits[0]
    assert hit.path == "a.md" and hit.passage == "- zebra crossing lights at night"
    (root / "a.md").write_text("# a\n\n- zebra crossing lights were fixed today\n\n- apples grow on trees\n\n"
                               "- kiwis are brown\n", encoding="utf-8")
    vault.index()
    hit = vault.search("zebra crossing lights", mode="vector").hits[0]
    assert hit.path == "a.md" and hit.passage == "- zebra crossing lights were fixed today"
    assert hit.passage in hit.text
    (root / "a.md").unlink()
    vault.index()
    result = vault.search("zebra crossing lights", mode="vector")
    assert all(h.path == "b.md" for h in result.hits)
    assert all(h.passage is None or h.passage in _passage_rows(vault)["b.md"] for h in result.hits)
    assert "a.md" not in _passage_rows(vault)
    vault.close()


def test_lexical_mode_and_no_passages_give_no_passage(make_vault):
    files = {"a.md": "# a\n\n- zebra crossing lights at night\n\n- apples grow on trees\n"}
    root = make_vault(files)
    vault = open_vault(root, embedder="fake", embed_passages="all")
    vault.index()
    for h in vault.search("zebra crossing", mode="lexical").hits:
        assert h.passage is None and h.components["vector_passage"] is None and h.components["vector_whole"] is None
    assert vault.search("zebra crossing", mode="hybrid").hits[0].passage == "- zebra crossing lights at night"
    vault.close()
    vault = open_vault(root, embedder="fake", embed_passages="none")
    vault.index()
    assert vault.cache.db.execute("SELECT count(*) FROM passages").fetchone()[0] == 0
    for mode in ("vector", "hybrid"):
        hits = vault.search("zebra crossing", mode=mode).hits
        assert hits and all(h.passage is None and h.components["vector_passage"] is None for h in hits)
        assert hits[0].components["vector_whole"] is not None
    vault.close()


def test_a_folder_filter_shows_passages_of_allowed_pages_only(make_vault):
    root = make_vault({
        "in/a.md": "# a\n\n- zebra crossing lights at night\n\n- apples grow on trees\n",
        "in/b.md": "# b\n\n- a zebra crossing by the school\n\n- soup recipes\n",
        "out/c.md": "# c\n\n- zebra crossing lights at night exactly\n\n- pears are green\n",
    })
    vault = open_vault(root, embedder="fake", embed_passages="all")
    vault.index()
    rows = _passage_rows(vault)
    unfiltered = vault.search("zebra crossing lights at night", mode="vector", limit=10).hits
    assert any(h.path == "out/c.md" for h in unfiltered)
    hits = vault.search("zebra crossing lights at night", mode="vector", folder="in", limit=10).hits
    assert {h.path for h in hits} == {"in/a.md", "in/b.md"}
    for h in hits:
        assert h.passage in rows[h.path]
    vault.close()


@pytest.mark.adversarial
def test_another_vaults_edit_changes_the_passage_shown(make_vault):
    root = make_vault(dict(ZEBRA_PAGES))
    reader = open_vault(root, embedder="fake", embed_passages="all")
    reader.index()
    assert reader.search("zebra crossing lights", mode="vector").hits[0].passage == "- zebra crossing lights at night"
    writer = open_vault(root, embedder="fake", embed_passages="all")
    (root / "a.md").write_text("# a\n\n- zebra crossing lights were broken again\n\n- apples grow on trees\n\n"
                               "- figs\n", encoding="utf-8")
    writer.index(embed=False)  # lexical first: the edited page has no vector yet
    result = reader.search("zebra crossing lights", mode="vector")
    assert "vectors_partial" in result.degraded
    assert all(h.path != "a.md" for h in result.hits)
    writer.embed_pending()
    result = reader.search("zebra crossing lights", mode="vector")
    assert result.degraded == ()
    top = result.hits[0]
    assert top.path == "a.md" and top.passage == "- zebra crossing lights were broken again"
    assert top.passage in top.text
    writer.close()
    reader.close()


def test_a_retitled_note_has_its_passages_embedded_again(make_vault):
    body = "Controllers reconcile custom resources in a loop.\n\nHelm charts package manifests for release.\n"
    root = make_vault({"n.md": "---\ntitle: Alpha\n---\n" + body})
    vault = open_vault(root, embedder="fake", embed_passages="all")
    vault.index()
    (root / "n.md").write_text("---\ntitle: Zebra Quagga\n---\n" + body, encoding="utf-8")
    vault.index()
    embedder = vault.cache.embedder()
    index = vault.cache.vectors(embedder.identity.dim)
    try:
        rows = vault.cache.db.execute("SELECT pid, text FROM passages").fetchall()
        assert len(rows) == 2 and all(text.startswith("Zebra Quagga: ") for _, text in rows)
        for pid, text in rows:
            stored = index.vectors([pid])[pid]
            assert float(stored @ embedder.embed_passages([text])[0]) > 0.999, text
    finally:
        vault.close()


@pytest.mark.adversarial
def test_a_thematic_break_is_never_the_passage_shown(make_vault):
    root = make_vault({"Kubernetes Operators.md": (
        "# Kubernetes Operators\n\nControllers reconcile custom resources in a loop.\n\n---\n\n"
        "Helm charts package manifests for release.\n")})
    vault = open_vault(root, embedder="fake", embed_passages="all")
    vault.index()
    try:
        hit = vault.search("Kubernetes Operators", mode="vector").hits[0]
        assert hit.passage != "---"
        assert hit.passage in ("Controllers reconcile custom resources in a loop.",
                               "Helm charts package manifests for release.")
    finally:
        vault.close()
