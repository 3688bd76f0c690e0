"""`wikimem compile`, offline: sources under raw/ into entity and concept pages, each sentence cited
and found verbatim in its source at the recorded chunk hash; compile twice = byte-identical vault;
one changed source rewrites only the pages citing it; a person's text is never lost; no page for a
stop word, a heading or a date."""
from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from conftest import EXAMPLES, copy_vault, write_vault
from wikimem.api import init_vault, open_vault
from wikimem.cli import app
from wikimem.qa.answer import chunk_hash

runner = CliRunner()

GIT = """# git

> Distributed version control system.
> More information: <https://git-scm.com/docs/git>.

## Usage

- Create an empty Git repository in the current directory.
- Clone a remote Git repository from GitHub over SSH.
- Released on January 2020, the tool changed a lot.
"""
HUB = """# gh

> Work with GitHub from the command line.

## Usage

- Clone a GitHub repository locally, as Git would.
- Open the current repository in the browser.
- Released on January 2020 as a new tool.
"""
LAB = """# glab

> Work with GitLab merge requests.

## Usage

- Check out a merge request locally with Git.
- Create a new issue in the project.
"""


def tree(root: Path) -> dict[str, str]:
    return {p.relative_to(root).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file() and ".wikimem" not in p.relative_to(root).parts}


def fresh(tmp_path: Path, docs: dict[str, str]) -> Path:
    root = tmp_path / "vault"
    init_vault(root)
    srcs = write_vault(tmp_path / "in", docs)
    v = open_vault(root, embedder="none")
    report = v.ingest(sorted(str(srcs / n) for n in docs))
    assert report.ok, report.to_dict()
    v.close()
    return root


_CITED = re.compile(r"^- (.+) (\[\[(raw/[^\]#|]+)(?:#[^\]]*)?\]\])$", re.M)


def check_citations(root: Path, page: str) -> int:
    """Every compiled sentence stands verbatim in the raw file it cites, in a chunk whose hash the
    page's ``sources`` records. Returns how many sentences were checked."""
    v = open_vault(root, embedder="none")
    text = (root / page).read_text(encoding="utf-8")
    recorded = set(re.findall(r"sha256:([0-9a-f]{64})", text.split("\n---\n", 1)[0]))
    n = 0
    for sentence, link, target in _CITED.findall(text):
        raw = v.parse_file(target + ".md")
        chunks = [c for c in v.chunks(raw) if " ".join(sentence.split()) in " ".join(c.text.split())]
        assert chunks, f"{page}: {sentence!r} is not in {target}"
        assert any(chunk_hash(c.text) in recorded for c in chunks), f"{page}: no recorded hash for {sentence!r}"
        assert f"'{link} sha256:" in text
        n += 1
    v.close()
    return n


def test_new_entity_page_from_sources_on_a_fresh_vault(tmp_path):
    root = fresh(tmp_path, {"git.md": GIT, "gh.md": HUB, "glab.md": LAB})
    v = open_vault(root, embedder="none")
    report = v.compile()
    created = {p.path: p for p in report.pages if p.status == "created"}
    assert set(created) == {"entities/Git.md", "entities/GitHub.md"}  # named in 3 and 2 sources
    assert not (root / "entities/January.md").exists() and not (root / "entities/Usage.md").exists()
    text = (root / "entities/Git.md").read_text(encoding="utf-8")
    assert "type: entity" in text and "generated_by: wikimem" in text and text.count("<!-- wikimem:begin compiled") == 1
    assert "- Create an empty Git repository in the current directory. [[raw/articles/git#Usage]]" in text
    assert created["entities/Git.md"].sentences == check_citations(root, "entities/Git.md") == 4
    # grouped by source: the three sources, each once, sorted (same date) by path
    heads = re.findall(r"^### \[\[sources/(\w+) \(source\)", text, re.M)
    assert heads == ["gh", "git", "glab"]
    index = (root / "index.md").read_text(encoding="utf-8")
    assert "[[Git]]" in index and "[[GitHub]]" in index
    log = (root / "log.md").read_text(encoding="utf-8")
    assert "· compile · entities/Git.md" in log and "· compile · entities/GitHub.md" in log
    v.close()


def test_compile_twice_changes_nothing_and_one_source_rewrites_only_its_pages(tmp_path):
    root = fresh(tmp_path, {"git.md": GIT, "gh.md": HUB, "glab.md": LAB})
    v = open_vault(root, embedder="none")
    v.compile()
    before = tree(root)
    again = v.compile()
    assert tree(root) == before and not again.changed
    # glab speaks of Git only: changing it rewrites Git's page, not GitHub's
    raw = root / "raw/articles/glab.md"
    raw.chmod(0o644)
    raw.write_text(LAB.replace("with Git.", "with Git, fast."), encoding="utf-8")
    v.index(embed=False)
    third = v.compile()
    after = tree(root)
    changed = {p for p in after if after[p] != before.get(p)}
    assert changed == {"raw/articles/glab.md", "entities/Git.md", "log.md"}
    assert [p.path for p in third.changed] == ["entities/Git.md"]
    assert "with Git, fast." in (root / "entities/Git.md").read_text(encoding="utf-8")
    v.close()


def test_a_persons_text_and_edited_section_survive(tmp_path):
    root = fresh(tmp_path, {"git.md": GIT, "gh.md": HUB, "glab.md": LAB})
    v = open_vault(root, embedder="none")
    v.compile()
    page = root / "entities/Git.md"
    text = page.read_text(encoding="utf-8")
    text = text.replace("# Git\n", "# Git\n\nMy own note above.\n").replace(
        "- Check out a merge request", "- I edited this line. Check out a merge request") + "\nMy note below.\n"
    page.write_text(text, encoding="utf-8")
    v.index(embed=False)
    report = v.compile()
    after = page.read_text(encoding="utf-8")
    assert "My own note above." in after and "My note below." in after and "I edited this line." in after
    assert "edited by hand" in (report.pages[[p.path for p in report.pages].index("entities/Git.md")].notice or "")
    assert after.count("<!-- wikimem:begin compiled") == 1  # the edited one was kept unmarked
    before = tree(root)
    v.compile()
    assert tree(root) == before
    v.close()


def test_dry_run_writes_nothing(tmp_path):
    root = fresh(tmp_path, {"git.md": GIT, "gh.md": HUB})
    before = tree(root)
    v = open_vault(root, embedder="none")
    report = v.compile(dry_run=True)
    assert {p.status for p in report.pages} == {"would-create"} and tree(root) == before
    v.close()


def test_examples_vault_pages_updated_with_valid_citations(tmp_path):
    root = tmp_path / "examples"
    copy_vault(EXAMPLES, root)
    person = (root / "concepts/BM25.md").read_text(encoding="utf-8")
    v = open_vault(root, embedder="none")
    report = v.compile()
    assert {p.path for p in report.changed} >= {"concepts/BM25.md", "concepts/Leiden Algorithm.md"}
    after = (root / "concepts/BM25.md").read_text(encoding="utf-8")
    body = person.split("\n---\n", 1)[1]
    assert body.rstrip("\n") in after  # every line the person wrote, in place
    for p in report.changed:
        assert check_citations(root, p.path) == p.sentences > 0
    before = tree(root)
    assert not v.compile().changed and tree(root) == before
    v.close()


def test_cli_compile_json_and_unknown_source(tmp_path):
    root = fresh(tmp_path, {"git.md": GIT, "gh.md": HUB})
    result = runner.invoke(app, ["compile", "-V", str(root), "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert data["created"] == 2 and {p["path"] for p in data["pages"]} == {"entities/Git.md", "entities/GitHub.md"}
    result = runner.invoke(app, ["compile", "-V", str(root), "raw/articles/nope.md"])
    assert result.exit_code == 2 and "not a source of this vault" in result.output
    result = runner.invoke(app, ["compile", "-V", str(root), "sources/git (source).md"])
    assert result.exit_code == 0 and "0 page(s) written" in result.output


def test_ingest_compile_and_mcp_tool(tmp_path):
    root = tmp_path / "vault"
    init_vault(root)
    srcs = write_vault(tmp_path / "in", {"git.md": GIT, "gh.md": HUB})
    result = runner.invoke(app, ["ingest", "-V", str(root), "--compile", "--json", str(srcs / "git.md"),
                                 str(srcs / "gh.md")])
    assert result.exit_code == 0, result.output
    assert json.loads(result.output)["compiled"]["created"] == 2
    from wikimem.mcp.tools import Tools
    v = open_vault(root, embedder="none")
    out = Tools(v).compile(dry_run=True)
    assert out["pages"] and all(p["status"] == "unchanged" for p in out["pages"])
    v.close()


def test_no_page_for_openers_units_labels_or_hyphen_words(tmp_path):
    """Names that are no entity: a verb that opens sentences (also after a "[Label]"), a unit, an
    adjective made of a name ("Debian-based"); the real names beside them get their pages."""
    docs = {f"d{i}.md": f"# d{i}\n\n- [Interactive] Delete files {i} on Debian-based systems.\n"
                        f"- Delete a bucket on Debian quickly.\n- Split into parts of 36 MB with Debian tools.\n"
            for i in range(3)}
    root = fresh(tmp_path, docs)
    v = open_vault(root, embedder="none")
    created = sorted(p.title for p in v.compile().pages if p.status == "created")
    assert created == ["Debian"]
    v.close()


def test_sources_are_tracked_new_changed_compiled(tmp_path):
    root = fresh(tmp_path, {"git.md": GIT, "gh.md": HUB, "glab.md": LAB})
    v = open_vault(root, embedder="none")
    assert {s.path: s.status for s in v.compile(dry_run=True).sources} == {
        "raw/articles/gh.md": "new", "raw/articles/git.md": "new", "raw/articles/glab.md": "new"}
    v.compile()
    raw = root / "raw/articles/glab.md"
    raw.chmod(0o644)
    raw.write_text(LAB.replace("with Git.", "with Git, fast."), encoding="utf-8")
    report = v.compile(dry_run=True)
    assert {s.path: s.status for s in report.sources} == {
        "raw/articles/gh.md": "compiled", "raw/articles/git.md": "compiled", "raw/articles/glab.md": "changed"}
    assert report.sources[0].sha256 == hashlib.sha256((root / report.sources[0].path).read_bytes()).hexdigest()
    v.close()


@pytest.mark.parametrize("args,message", [(["--llm", "gpt"], "unknown llm 'gpt'"),
                                          (["--llm", "openai"], "needs a model (--llm-model)")])
def test_bad_llm_options_are_usage_errors(tmp_path, args, message):
    root = fresh(tmp_path, {"git.md": GIT})
    result = runner.invoke(app, ["compile", "-V", str(root), *args], env={"WIKIMEM_LLM_MODEL": ""})
    assert result.exit_code == 2 and message in result.output, result.output
