"""Issue 26, items 14-16: one way to name the vault and pages, help that reads like a person wrote it."""
import json
import re

import pytest
import typer
from typer.testing import CliRunner

from wikimem.cli import app
from wikimem.errors import AmbiguousPageError, PageNotFoundError
from wikimem.parse.names import find_page

runner = CliRunner()


def _commands():
    group = typer.main.get_command(app)
    return {name: cmd for name, cmd in group.commands.items()}


def test_every_command_that_takes_a_vault_accepts_dash_v():
    # Was: the vault was positional in 8 commands and `-V` only in 10 (`wikimem status -V vault` failed)
    for name, cmd in _commands().items():
        if name == "init":  # init's PATH is the folder to create, not a vault
            continue
        takes_vault = any(p.name in ("vault", "vault_option") for p in cmd.params)
        if not takes_vault:
            continue
        flags = {opt for p in cmd.params if getattr(p, "param_type_name", "") == "option" for opt in p.opts}
        assert {"-V", "--vault"} <= flags, name


def test_status_takes_the_vault_either_way(make_vault):
    root = make_vault({"a.md": "# A\n"})
    for args in (["status", str(root), "--json"], ["status", "-V", str(root), "--json"]):
        result = runner.invoke(app, args)
        assert result.exit_code == 0, result.output
        assert json.loads(result.output)["vault"] == str(root)


def test_two_different_vaults_are_a_usage_error(make_vault, tmp_path):
    root = make_vault({"a.md": "# A\n"})
    result = runner.invoke(app, ["status", str(root), "-V", str(tmp_path)])
    assert result.exit_code == 2 and "two vaults given" in result.output


def test_help_shows_no_python_types():
    # Was: `<bool>` on every flag, `<str>`, `<list[str]>`, `<int range>` and `{query}` in the usage line
    for name in _commands():
        result = runner.invoke(app, [name, "--help"], terminal_width=200)
        assert result.exit_code == 0, name
        for bad in ("<bool>", "<str>", "<int>", "<float>", "list[", "{"):
            assert bad not in result.output, (name, bad)
    search = runner.invoke(app, ["search", "--help"], terminal_width=200).output
    assert "QUERY" in search and "--limit" in search and " N " in search and "DATE" in search


PAGES = {
    "concepts/Reciprocal Rank Fusion.md": ("Reciprocal Rank Fusion", ("RRF",)),
    "concepts/BM25.md": ("Okapi BM25", ()),
    "a/Dup.md": ("Dup in a", ()),
    "b/Dup.md": ("Dup in b", ()),
    "deep/er/Dup2.md": ("Short", ()),
    "x/Dup2.md": ("Same", ("shared",)),
    "y/Other.md": ("Same", ("shared",)),
}


@pytest.mark.parametrize("name, path", [
    ("concepts/BM25.md", "concepts/BM25.md"),
    ("concepts/BM25", "concepts/BM25.md"),
    ("./concepts/BM25.md", "concepts/BM25.md"),
    ("bm25", "concepts/BM25.md"),                       # file name, case-insensitive
    ("[[BM25|shown]]", "concepts/BM25.md"),             # a wikilink as written in a note
    ("okapi bm25", "concepts/BM25.md"),                 # title
    ("rrf", "concepts/Reciprocal Rank Fusion.md"),      # alias
    ("Dup2", "x/Dup2.md"),                              # shortest path wins, as for a link
    ("a/Dup", "a/Dup.md"),
])
def test_a_page_is_named_by_path_file_name_title_or_alias(name, path):
    assert find_page(name, PAGES) == path


@pytest.mark.parametrize("name, candidates", [
    ("Dup", ("a/Dup.md", "b/Dup.md")),
    ("same", ("x/Dup2.md", "y/Other.md")),
    ("shared", ("x/Dup2.md", "y/Other.md")),
])
def test_an_ambiguous_name_lists_the_candidates(name, candidates):
    with pytest.raises(AmbiguousPageError) as caught:
        find_page(name, PAGES)
    assert caught.value.candidates == candidates
    assert all(c in str(caught.value) for c in candidates)


def test_an_unknown_name_is_a_clear_error():
    with pytest.raises(PageNotFoundError, match="page not found: .nothing.") as caught:
        find_page("nothing", PAGES)
    assert "did you mean" not in str(caught.value)


@pytest.mark.parametrize("typo, suggested", [
    ("bm52", "'BM25'"),                                  # a file name
    ("Okapi BM26", "'Okapi BM25'"),                      # a title
    ("concepts/Reciprocal Rank Fusoin", "'Reciprocal Rank Fusion'"),
    ("Dupp", "'a/Dup.md'"),                              # a name two pages share: one of their paths
])
def test_a_typo_is_answered_with_the_names_near_it(typo, suggested):
    # Was: "page not found: 'gzp'" with no hint that the vault has gzip
    with pytest.raises(PageNotFoundError, match="did you mean") as caught:
        find_page(typo, PAGES)
    assert suggested in str(caught.value)
    assert find_page(suggested.strip("'"), PAGES)  # what it suggests is a name find_page takes


def test_read_of_a_name_no_page_has_says_not_found_not_not_a_note(make_vault):
    # Was: `wikimem read gzp` -> "gzp: not a note; only Markdown notes (.md) can be read as pages"
    root = make_vault({"SCHEMA.md": "# Schema\n", "tools/gzip.md": "# gzip\n\nCompress files.\n"})
    result = runner.invoke(app, ["read", "gzp", "-V", str(root)])
    assert result.exit_code == 1 and "page not found: 'gzp'" in result.output and "'gzip'" in result.output
    assert "Compress files." in runner.invoke(app, ["read", "gzip", "-V", str(root)]).output


def _vault(make_vault):
    return make_vault({
        "SCHEMA.md": "# Schema\n",
        "concepts/Fusion.md": "---\ntitle: Rank Fusion\naliases: [RRF]\n---\n# Fusion\nSee [[Hybrid]].\n",
        "concepts/Hybrid.md": "# Hybrid\nUses [[Fusion]].\n",
        "new/Fusion 2.md": "---\nsupersedes: \"[[Fusion]]\"\n---\n# Fusion 2\n",
    })


def test_history_supersede_neighbors_and_parse_take_titles_and_aliases(make_vault, monkeypatch):
    monkeypatch.setenv("WIKIMEM_EMBEDDER", "none")
    root = _vault(make_vault)
    assert runner.invoke(app, ["index", str(root)]).exit_code == 0
    history = runner.invoke(app, ["history", "RRF", "-V", str(root), "--json"])
    assert history.exit_code == 0, history.output
    assert [v["path"] for v in json.loads(history.output)["versions"]] == ["concepts/Fusion.md", "new/Fusion 2.md"]
    near = runner.invoke(app, ["neighbors", "rank fusion", "-V", str(root), "--json"])
    assert near.exit_code == 0 and json.loads(near.output)["page"] == "concepts/Fusion.md"
    parsed = runner.invoke(app, ["parse", str(root), "--page", "RRF"])
    assert parsed.exit_code == 0 and "concepts/Fusion.md" in parsed.output
    assert not parsed.output.lstrip().startswith("{")  # Was: raw JSON without --json
    assert "line 5: Hybrid → concepts/Hybrid.md" in parsed.output
    missing = runner.invoke(app, ["history", "nothing here", "-V", str(root)])
    assert missing.exit_code == 1 and "page not found" in missing.output


def test_lint_paths_are_relative_to_the_vault_from_outside_it(make_vault, monkeypatch, tmp_path):
    monkeypatch.setenv("WIKIMEM_EMBEDDER", "none")
    root = _vault(make_vault)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    result = runner.invoke(app, ["lint", "-V", str(root), "concepts/Hybrid.md", "--json", "--exit-zero"])
    assert result.exit_code == 0, result.output
    assert {f["path"] for f in json.loads(result.output)["findings"]} <= {"concepts/Hybrid.md"}
    monkeypatch.chdir(root / "concepts")  # inside the vault: relative to the current folder
    inside = runner.invoke(app, ["lint", "Hybrid.md", "--json", "--exit-zero"])
    assert inside.exit_code == 0, inside.output


def test_a_default_lint_of_the_bundled_examples_is_quiet_and_passes(tmp_path, monkeypatch):
    """Issue 26 item 17: a healthy vault lints clean by default; --show-infos brings the suggestions."""
    from conftest import EXAMPLES, copy_vault
    monkeypatch.setenv("WIKIMEM_EMBEDDER", "fake")
    root = tmp_path / "examples"
    copy_vault(EXAMPLES, root)
    quiet = runner.invoke(app, ["lint", str(root), "--json"])
    assert quiet.exit_code == 0, quiet.output
    data = json.loads(quiet.stdout)
    assert [f for f in data["findings"] if f["severity"] != "info"] == []
    shown = runner.invoke(app, ["lint", str(root), "--show-infos", "--json"])
    assert shown.exit_code == 0 and any(f["severity"] == "info" for f in json.loads(shown.stdout)["findings"])


def test_query_and_supersede_say_what_they_create_in_a_plain_folder_of_notes(tmp_path, monkeypatch):
    """Issue 47 item 14: in a folder of notes with no .obsidian/, status suggests `wikimem index .`
    (init would scaffold the team's vault), and query and supersede say when they create log.md,
    index.md or queries/."""
    monkeypatch.setenv("WIKIMEM_EMBEDDER", "fake")
    root = tmp_path / "notes"
    root.mkdir()
    (root / "Compost.md").write_text("# Compost\n\nCompost wants three parts brown to one part green.\n")
    (root / "Compost v2.md").write_text("# Compost v2\n\nCompost wants two parts brown to one part green.\n")
    monkeypatch.chdir(root)
    status = runner.invoke(app, ["status"])
    assert status.exit_code == 2 and "wikimem index ." in status.output and "wikimem init ." not in status.output
    assert runner.invoke(app, ["index", "."]).exit_code == 0
    asked = runner.invoke(app, ["query", "How much brown does compost want?"])
    assert asked.exit_code == 0, asked.output
    assert "this vault had no log.md, index.md, queries/: created them" in " ".join(asked.output.split())
    again = runner.invoke(app, ["query", "How much green does compost want?"])
    assert "this vault had no" not in again.output  # said once, when made
    (root / "log.md").unlink()
    done = runner.invoke(app, ["supersede", "Compost", "Compost v2"])
    assert done.exit_code == 0, done.output
    assert "this vault had no log.md: created it" in " ".join(done.output.split())
    empty = tmp_path / "empty"
    empty.mkdir()
    monkeypatch.chdir(empty)
    assert "wikimem init ." in runner.invoke(app, ["status"]).output


def test_search_and_query_take_the_vault_after_the_words_as_ripgrep_takes_its_path(make_vault, monkeypatch, tmp_path):
    # Was: `wikimem search tar archive ~/notes` searched for "tar archive ~/notes" in the current folder
    root = make_vault({"SCHEMA.md": "# Schema\n", "tar.md": "# Tar\n\nExtract a tar archive with tar -xf.\n"})
    (root / "concepts").mkdir()  # a vault's subfolder holds no marker: a word naming it stays a word
    monkeypatch.chdir(tmp_path)
    assert runner.invoke(app, ["index", str(root)]).exit_code == 0
    found = runner.invoke(app, ["search", "extract", "tar", str(root), "--json", "--mode", "lexical"])
    assert found.exit_code == 0, found.output
    assert json.loads(found.output)["hits"][0]["path"] == "tar.md"
    assert json.loads(found.output)["query"] == "extract tar"
    answered = runner.invoke(app, ["query", "how to extract a tar archive", str(root), "--no-write", "--json"])
    assert answered.exit_code == 0, answered.output
    monkeypatch.chdir(root)
    kept = runner.invoke(app, ["search", "tar", "concepts", "--json", "--mode", "lexical"])
    assert json.loads(kept.output)["query"] == "tar concepts"


def test_brackets_in_option_help_are_shown_not_read_as_markup():
    # Was: "[property:value]" vanished from `wikimem search --help` (rich read it as a style tag)
    for name, cmd in _commands().items():
        shown = " ".join(runner.invoke(app, [name, "--help"], terminal_width=1000).output.split())
        for param in cmd.params:
            text = (getattr(param, "help", None) or "").replace("\\[", "[")
            for bracketed in re.findall(r"\[[^\[\]]+\]", text):
                assert bracketed in shown, (name, param.name, bracketed)


def test_command_help_flows_to_the_terminal_width():
    # Was: a docstring's line breaks (written at 100 columns) were kept, so `wikimem --help` broke
    # `remember`'s help mid-sentence at 80 columns ("... in the same order" / "are a duplicate ...")
    listing = runner.invoke(app, ["--help"], terminal_width=80).output
    assert "The same words in the same order are a duplicate" in " ".join(
        line.strip(" │") for line in listing.splitlines())
    for name, cmd in _commands().items():
        for paragraph in (cmd.help or "").split("\n\n"):
            assert "\n" not in paragraph, name
