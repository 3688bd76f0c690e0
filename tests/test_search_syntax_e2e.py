"""Obsidian's search operators through `wikimem search` (issue 30 items 1 and 3): one end-to-end
test per operator on a small vault with the fake embedder, plus deep links (path:line, vimgrep)."""
from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from wikimem.cli import app

runner = CliRunner()

NOTES = {
    "projects/launch.md": "---\ntags: [project/active]\nstatus: active\nupdated: 2026-03-01\nrating: 4\n---\n"
                          "# Launch\n\nThe launch plan covers the budget and the risks.\n\n"
                          "## Decisions\n\nWe decided the budget and the date.\n",
    "projects/draft.md": "---\ntags: [project]\nstatus: draft\nupdated: 2026-02-01\nrating: 2\n---\n"
                         "# Draft launch\n\nA draft of the launch plan; budget unknown.\n",
    "meetings/weekly.md": "---\nupdated: 2026-01-15\n---\n# Weekly\n\nBudget review for the launch.\n\n"
                          "Risks: budget\nand staffing on another line.\n",
    "notes/zh.md": "---\ntags: [项目/进行中]\n状态: 进行中\nupdated: 2025-12-01\n---\n# 预算\n\n会议纪要：预算和风险。\n",
    "notes/old.md": "---\nupdated: 2025-01-01\n---\n# Old budget\n\nAn old budget note about the launch.\n",
}


@pytest.fixture
def vault(make_vault, monkeypatch):
    monkeypatch.setenv("WIKIMEM_EMBEDDER", "fake")
    root = make_vault(NOTES)
    assert runner.invoke(app, ["index", str(root)]).exit_code == 0
    return root


def search(root, query: str, *extra: str) -> dict:
    # after "--": a query may begin with "-" (an exclude), which the shell would pass as an option
    got = runner.invoke(app, ["search", "--vault", str(root), "--json", *extra, "--", query])
    assert got.exit_code in (0, 1), got.output
    return json.loads(got.output)


def paths(root, query: str, *extra: str) -> list[str]:
    return [h["path"] for h in search(root, query, *extra)["hits"]]


def test_plain_query_is_ranked_as_typed(vault):
    data = search(vault, "launch budget")
    assert "query_read" not in data  # no operators: the JSON is as before
    assert {"projects/launch.md", "projects/draft.md", "meetings/weekly.md"} <= set(p for p in paths(vault, "launch budget"))


def test_tag(vault):
    assert set(paths(vault, "tag:project budget")) == {"projects/launch.md", "projects/draft.md"}  # nested too
    assert paths(vault, "tag:#project/active budget") == ["projects/launch.md"]
    assert paths(vault, "tag:项目 预算") == ["notes/zh.md"]
    data = search(vault, "tag:project budget")
    assert any("tagged #project" in line for line in data["query_read"])


def test_path_and_file(vault):
    assert set(paths(vault, "path:projects budget")) == {"projects/launch.md", "projects/draft.md"}
    assert paths(vault, "file:weekly budget") == ["meetings/weekly.md"]
    assert "projects/launch.md" not in paths(vault, "-path:projects budget")


def test_phrase(vault):
    assert set(paths(vault, '"launch plan" budget')) == {"projects/launch.md", "projects/draft.md"}


def test_a_phrase_no_note_holds_ranks_its_words_and_says_so(vault):
    """Required as in Obsidian while some note holds it; when none does, its words are ranked (a
    question quoting a title the notes never spell out found nothing at all) and a notice says so."""
    data = search(vault, 'what is in the "plan for the launch" budget')
    assert data["hits"] and "projects/launch.md" in [h["path"] for h in data["hits"]]
    assert any('exact phrase "plan for the launch"' in n for n in data["notices"])
    assert any("ranked as words instead" in line for line in data["query_read"])
    held = search(vault, '"launch plan" budget')  # a phrase some note holds still filters
    assert not any("exact phrase" in n for n in held.get("notices", []))
    assert "meetings/weekly.md" not in [h["path"] for h in held["hits"]]
    mixed = search(vault, '"launch plan" "plan for the launch"')  # only the absent one is relaxed
    assert {h["path"] for h in mixed["hits"]} <= {"projects/launch.md", "projects/draft.md"} and mixed["hits"]
    assert any('"plan for the launch"' in n for n in mixed["notices"])
    assert not any('"launch plan"' in n for n in mixed["notices"])


@pytest.mark.parametrize("query", [
    '"xyzzy plugh"',  # in no note, and neither are its words: nothing, not the vector side's neighbours
    '"launch plan" -budget',  # in two notes, which the exclude removes: nothing, and no claim it is absent
    '"launch plan" path:meetings',
    '"plan for the launch" tag:nosuchtag',  # page conditions are never relaxed
])
def test_a_phrase_search_that_should_find_nothing_still_finds_nothing(vault, query):
    data = search(vault, query)
    assert data["hits"] == [] and not any("exact phrase" in n for n in data.get("notices", []))


def test_exclude(vault):
    found = paths(vault, "launch budget -draft")
    assert "projects/draft.md" not in found and "projects/launch.md" in found


def test_or(vault):
    found = paths(vault, "budget risks OR staffing")
    assert found and all(p in ("projects/launch.md", "meetings/weekly.md", "notes/zh.md") for p in found)
    assert "projects/draft.md" not in found and "notes/old.md" not in found


def test_property(vault):
    assert paths(vault, "[status:active] budget") == ["projects/launch.md"]
    assert set(paths(vault, "[status:active OR draft] budget")) == {"projects/launch.md", "projects/draft.md"}
    assert set(paths(vault, "[rating:>=3] budget")) == {"projects/launch.md"}
    assert set(paths(vault, "[updated:<2026-01-01] budget")) == {"notes/zh.md", "notes/old.md"}
    assert paths(vault, "[状态:进行中] 预算") == ["notes/zh.md"]


def test_line_and_section(vault):
    # "budget" and "staffing" are in the weekly note, but on two lines
    assert "meetings/weekly.md" not in paths(vault, "line:(budget staffing)")
    assert paths(vault, "line:(budget review)") == ["meetings/weekly.md"]
    assert "meetings/weekly.md" in paths(vault, "section:(budget staffing)")


def test_content(vault):
    assert paths(vault, "content:staffing", "--mode", "lexical") == paths(vault, "staffing", "--mode", "lexical")


def test_filters_only_list_pages_by_recency(vault):
    data = search(vault, "tag:project")
    assert [h["path"] for h in data["hits"]] == ["projects/launch.md", "projects/draft.md"]  # newest first
    assert data["hits"][0]["found_by"] == ["filter"] and data["hits"][0]["components"] == {"recency": "2026-03-01"}
    assert data["query_read"][0].startswith("no ranked text")
    assert paths(vault, "-tag:project -path:notes") == ["meetings/weekly.md"]


def test_operators_combine_with_filter_options(vault):
    assert set(paths(vault, "tag:project budget", "--folder", "projects")) == {"projects/launch.md",
                                                                                "projects/draft.md"}
    assert paths(vault, "tag:project budget", "--since", "2026-02-15") == ["projects/launch.md"]
    assert paths(vault, "tag:project budget", "--folder", "meetings") == []


def test_limit_is_met_after_post_filters(make_vault, monkeypatch):
    monkeypatch.setenv("WIKIMEM_EMBEDDER", "fake")
    files = {f"n/{i:02}.md": f"# N{i}\n\nbudget {'keep' if i % 3 == 0 else 'drop'} note {i}\n" for i in range(60)}
    root = make_vault(files)
    runner.invoke(app, ["index", str(root)])
    found = paths(root, "budget -drop", "-k", "15")
    assert len(found) == 15 and all(int(p[2:4]) % 3 == 0 for p in found)


def test_explain_shows_how_the_query_was_read(vault):
    shown = runner.invoke(app, ["search", 'tag:project "launch plan" -draft', "--vault", str(vault), "--explain"])
    assert shown.exit_code == 0, shown.output
    assert "query: ranked text: launch plan" in shown.output
    assert 'not (contains "draft")' in shown.output and "bm25_rank=" in shown.output


def test_hits_print_path_line_and_vimgrep(vault, monkeypatch):
    monkeypatch.chdir(vault)
    shown = runner.invoke(app, ["search", "decided the date", "--vault", str(vault), "--mode", "lexical", "-k", "1"])
    # one chunk from "# Launch" (line 7); the hit points at the paragraph that matched, under its heading
    # (issue 36: a lexical hit pointed at the chunk's first line)
    assert "projects/launch.md:13 # Launch > Decisions" in shown.output, shown.output
    grep = runner.invoke(app, ["search", "decided the date", "--vault", str(vault), "--mode", "lexical", "-k", "1",
                               "--format", "vimgrep"])
    (line,) = grep.output.splitlines()
    assert line.startswith("projects/launch.md:13:1:") and "decided the budget" in line
    bad = runner.invoke(app, ["search", "x", "--vault", str(vault), "--format", "xml"])
    assert bad.exit_code == 2


def test_an_excluded_word_leaves_out_the_whole_note(make_vault):
    """Issue 47 item 7: ``encryption -sync`` left out only the chunks holding "sync"; a Sync page
    whose first section is about encryption came first. As in Obsidian, the note is left out."""
    from wikimem.api import open_vault
    filler = " ".join(f"word{i}" for i in range(120))
    root = make_vault({
        "Sync security.md": f"# Sync security\n\n## Encryption\n\nEnd-to-end encryption with AES-256 keys. {filler}\n\n"
                            f"## Devices\n\nSync keeps every device the same. {filler}\n",
        "Vault encryption.md": "# Vault encryption\n\nEncryption of a vault on disk is up to your device.\n",
        "Publish.md": "# Publish\n\nPublish shows notes on the web; no encryption there.\n"})
    v = open_vault(root, embedder="fake", chunk_max=400, chunk_min=100)
    v.index()
    first = v.search("AES-256", mode="lexical").hits[0]
    assert first.path == "Sync security.md" and "sync" not in first.text.lower().replace("sync security", "")
    for mode in ("hybrid", "lexical"):
        paths = [h.path for h in v.search("encryption -sync", mode=mode).hits]
        assert "Sync security.md" not in paths, (mode, paths)
        assert "Vault encryption.md" in paths and "Publish.md" in paths
        assert [h.path for h in v.search("encryption -aes", mode=mode).hits].count("Sync security.md") == 0
    assert "Sync security.md" in [h.path for h in v.search("encryption", mode="lexical").hits]
