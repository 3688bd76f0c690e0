"""wikimem lint: golden output for the fixture vault, Obsidian anchors, no false broken links on
examples/, --fix (idempotent, raw/ untouched, logged), options, suppression, CLI exit codes."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from conftest import EXAMPLES, FIXTURES, copy_vault, golden
from wikimem.api import open_vault
from wikimem.cli import app

runner = CliRunner()


@pytest.fixture
def lint_vault(tmp_path) -> Path:
    root = tmp_path / "vault"
    copy_vault(FIXTURES / "lint" / "vault", root)
    return root


def _lint(root, **kw):
    """Every finding, infos included (a default run hides them: tests/test_lint_quiet.py)."""
    from wikimem.lint import lint
    v = open_vault(root, embedder="fake")
    try:
        return lint(v.ctx, **{"show_infos": True, **kw})
    finally:
        v.close()


def test_fixture_vault_matches_golden(lint_vault):
    report = _lint(lint_vault)
    data = report.to_dict()
    assert [f["path"] for f in data["findings"]] == sorted(f["path"] for f in data["findings"])
    golden("lint-fixture", {"findings": data["findings"], "summary": data["summary"], "notices": data["notices"]})


def test_obsidian_headings_blocks_and_table_links_are_not_broken(lint_vault):
    """The issue's cases: [[Functions#hasTag]] for ### `hasTag()`, [[FAQ#How large ...]] for a
    heading ending in '?', [[#Minecraft The Video Game]], a block id straight after an embed."""
    findings = _lint(lint_vault, select=["WM1"]).findings
    assert not [f for f in findings if f.path == "concepts/Minecraft.md"]
    broken = {(f.code, f.message.split(" ")[1]) for f in findings if f.code in ("WM102", "WM103")}
    assert broken == {("WM102", "'Variants'"), ("WM103", "'^nope'")}


def test_examples_have_no_broken_link_findings(tmp_path):
    root = tmp_path / "examples"
    copy_vault(EXAMPLES, root)
    findings = _lint(root, select=["WM1", "WM301", "WM403"]).findings
    assert findings == []


def test_messages_name_the_target(lint_vault):
    by_code = {}
    for f in _lint(lint_vault).findings:
        by_code.setdefault(f.code, []).append(f.message)
    assert any("No Such Page" in m for m in by_code["WM101"])
    assert any("Variants" in m for m in by_code["WM102"])
    assert any("nope" in m for m in by_code["WM103"])
    assert any("#vectors" in m for m in by_code["WM203"])
    assert any("missing-diagram.png" in m for m in by_code["WM106"])


def test_select_ignore_and_paths(lint_vault):
    only = _lint(lint_vault, select=["WM10"], ignore=["WM101"])
    assert only.findings and {f.code for f in only.findings} <= {"WM102", "WM103", "WM104", "WM105", "WM106"}
    assert only.rules == ["WM102", "WM103", "WM104", "WM105", "WM106"]
    scoped = _lint(lint_vault, paths=["queries"])
    assert scoped.findings and {f.path for f in scoped.findings} == {"queries/Old Question.md"}


def test_page_suppression_and_schema_options(lint_vault):
    codes = {(f.path, f.code) for f in _lint(lint_vault).findings}
    assert ("notes/Secret.md", "WM507") in codes
    assert ("notes/Secret.md", "WM401") not in codes and ("notes/Secret.md", "WM402") not in codes
    schema = lint_vault / "SCHEMA.md"
    schema.write_text(schema.read_text().replace("lint:\n", "lint:\n  ignore: [WM5]\n  severity: {WM401: error}\n"))
    report = _lint(lint_vault)
    assert not [f for f in report.findings if f.code.startswith("WM5")]
    assert {f.severity for f in report.findings if f.code == "WM401"} == {"error"}


def test_bad_lint_options_are_config_errors(lint_vault):
    from wikimem.errors import ConfigError
    schema = lint_vault / "SCHEMA.md"
    schema.write_text(schema.read_text().replace("lint:\n", "lint:\n  fail_on: sometimes\n"))
    with pytest.raises(ConfigError):
        _lint(lint_vault)
    result = runner.invoke(app, ["lint", str(lint_vault), "--json"])
    assert result.exit_code == 2


def _tree(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*"))
            if p.is_file() and ".wikimem" not in p.parts}


def test_fix_is_safe_idempotent_logged_and_never_touches_raw(lint_vault):
    raw_before = {k: v for k, v in _tree(lint_vault).items() if k.startswith("raw/")}
    first = _lint(lint_vault, fix=True)
    assert any("add to index.md" in f for f in first.fixed)
    assert any("mark superseded" in f for f in first.fixed)
    assert any("normalise tag case" in f for f in first.fixed)
    remaining = {f.code for f in first.findings}
    assert not remaining & {"WM402", "WM304"}
    assert "tags: [Retrieval" not in (lint_vault / "concepts/BM25.md").read_text()
    old = (lint_vault / "concepts/BM25 (early notes).md").read_text()
    assert "status: superseded" in old and "superseded_by" in old
    assert "lint --fix" in (lint_vault / "log.md").read_text()
    after_first = _tree(lint_vault)
    second = _lint(lint_vault, fix=True)
    assert second.fixed == []
    assert _tree(lint_vault) == after_first
    assert {k: v for k, v in after_first.items() if k.startswith("raw/")} == raw_before


def test_fix_skips_a_page_changed_since_it_was_read(lint_vault, monkeypatch):
    from wikimem.lint import fix as fixmod
    real = fixmod._apply

    def edit_first(vault, finding):
        if finding.fix.kind == "tag_case":
            (lint_vault / finding.fix.args[0]).write_text("---\ntags: [Retrieval]\n---\n# changed meanwhile\n")
        return real(vault, finding)
    monkeypatch.setattr(fixmod, "_apply", edit_first)
    report = _lint(lint_vault, fix=True, select=["WM206"])
    assert report.fixed == []
    assert "changed meanwhile" in (lint_vault / "concepts/BM25.md").read_text()


def test_raw_changed_after_first_seen(lint_vault):
    assert not [f for f in _lint(lint_vault, select=["WM506"]).findings]
    (lint_vault / "raw/articles/bm25.md").write_text("# Notes on BM25\n\nEdited.\n")
    found = _lint(lint_vault, select=["WM506"]).findings
    assert [(f.path, f.code, f.severity) for f in found] == [("raw/articles/bm25.md", "WM506", "error")]


def test_near_duplicates_with_vectors_and_notice_without(tmp_path):
    text = "Hybrid search fuses a keyword ranking and a vector ranking into one list of results for the reader."
    root = tmp_path / "v"
    (root / "concepts").mkdir(parents=True)
    (root / "concepts/A.md").write_text(f"# A\n\n{text}\n")
    (root / "concepts/B.md").write_text(f"# B\n\n{text}\n")
    (root / "concepts/C.md").write_text("# C\n\nLeiden refines partitions of a graph until communities are connected.\n")
    report = _lint(root, select=["WM503"])
    assert report.findings == [] and any("no vectors" in n for n in report.notices)
    v = open_vault(root, embedder="fake")
    v.index()
    v.close()
    found = _lint(root, select=["WM503"]).findings
    assert [(f.path, f.code) for f in found] == [("concepts/A.md", "WM503")] and "concepts/B.md" in found[0].message


def test_cli_json_exit_codes_and_sarif(lint_vault, tmp_path, monkeypatch):
    result = runner.invoke(app, ["lint", str(lint_vault), "--json"])
    assert result.exit_code == 1, result.output
    data = json.loads(result.stdout)
    assert {"path", "line", "column", "code", "severity", "message"} <= set(data["findings"][0])
    assert runner.invoke(app, ["lint", str(lint_vault), "--exit-zero", "--json"]).exit_code == 0
    assert runner.invoke(app, ["lint", str(lint_vault), "--select", "WM999"]).exit_code == 2
    assert runner.invoke(app, ["lint", str(lint_vault), "--fail-on", "often"]).exit_code == 2
    sarif = json.loads(runner.invoke(app, ["lint", str(lint_vault), "--format", "sarif"]).stdout)
    assert sarif["version"] == "2.1.0" and sarif["runs"][0]["results"]
    text = runner.invoke(app, ["lint", str(lint_vault / "concepts")])
    assert "concepts/BM25.md" in text.stdout and "queries/" not in text.stdout
    clean = tmp_path / "clean"
    (clean / "concepts").mkdir(parents=True)
    (clean / "SCHEMA.md").write_text("# Schema\n")
    (clean / "index.md").write_text("# Index\n\n## Concepts\n- [[A]]\n")
    (clean / "concepts/A.md").write_text("# A\n\nA page with a few words of prose.\n")
    ok = runner.invoke(app, ["lint", str(clean), "--json"])
    assert ok.exit_code == 0, ok.stdout
    assert json.loads(ok.stdout)["findings"] == []
    monkeypatch.chdir(clean / "concepts")
    assert runner.invoke(app, ["lint", "--json"]).exit_code == 0  # the vault is found above the folder


def test_secret_scan_results_follow_the_file(lint_vault):
    first = [f for f in _lint(lint_vault, select=["WM507"]).findings]
    assert [f.path for f in first] == ["notes/Secret.md"]
    assert (lint_vault / ".wikimem" / "lint-pages.json").is_file()
    assert _lint(lint_vault, select=["WM507"]).findings == first  # served from the memo, same answer
    (lint_vault / "notes/Secret.md").write_text("# Secret\n\nDeploy with the token from the password manager.\n")
    assert _lint(lint_vault, select=["WM507"]).findings == []


@pytest.mark.parametrize("link,heading,ok", [
    ("Functions#hasTag", "### `hasTag()`", True),
    ("FAQ#How large can each remote vault be", "### How large can each remote vault be?", True),
    ("M#Minecraft The Video Game", "# Minecraft: The Video Game", True),
    ("M#a b c", "## a/b.(c)", True),
    ("M#中文 标题", "## 中文：标题", True),
    ("M#hasTags", "### `hasTag()`", False),
    ("M#Minecraft", "# Minecraft: The Video Game", False),
])
def test_heading_anchors_match_like_obsidian(link, heading, ok):
    from wikimem.parse import Resolver, parse_page
    target = link.split("#")[0]
    files = {f"{target}.md": f"{heading}\n\ntext\n", "s.md": f"[[{link}]]"}
    pages = {p: parse_page(p, t) for p, t in files.items()}
    resolved = Resolver(files, pages).resolve_page(pages["s.md"]).links[0]
    assert resolved.resolved == f"{target}.md" and resolved.anchor_ok is ok


def test_block_id_straight_after_an_embed():
    from wikimem.parse import parse_page
    page = parse_page("p.md", "![[image.png]]^block-id\n\ntext ^other\n\nnot]]^ a block\n")
    assert [b.id for b in page.blocks] == ["block-id", "other"]


def test_tag_case_inline_reported_and_crlf_kept_by_fix(tmp_path):
    root = tmp_path / "v"
    (root / "concepts").mkdir(parents=True)
    (root / "concepts/A.md").write_bytes(b"---\r\ntags: [Graph]\r\n---\r\n# A\r\n\r\nAbout #Retrieval and #graph.\r\n")
    found = _lint(root, select=["WM206"]).findings
    assert [f.line for f in found] == [2, 6] and "#Retrieval" in found[1].message and found[0].fix
    _lint(root, select=["WM206"], fix=True)
    data = (root / "concepts/A.md").read_bytes()
    assert b"graph\r\n---\r\n" in data and b"Graph" not in data and b"\n" not in data.replace(b"\r\n", b"")
    assert b"#Retrieval" in data  # body tags are reported, never rewritten
    assert [f.line for f in _lint(root, select=["WM206"]).findings] == [7]  # the list is now a block list


def test_memoised_mentions_follow_new_page_names(tmp_path):
    root = tmp_path / "v"
    (root / "concepts").mkdir(parents=True)
    (root / "concepts/A.md").write_text("# A\n\nRanked with Reciprocal Rank Fusion, then filtered.\n")
    assert _lint(root, select=["WM502"]).findings == []
    assert _lint(root, select=["WM502"]).findings == []  # warm: from the memo
    (root / "concepts/Reciprocal Rank Fusion.md").write_text("# Reciprocal Rank Fusion\n\nSum of 1/(k+rank).\n")
    found = _lint(root, select=["WM502"]).findings
    assert [(f.path, f.line) for f in found] == [("concepts/A.md", 3)] and "Reciprocal Rank Fusion" in found[0].message


def test_query_citing_changed_text(tmp_path):
    root = tmp_path / "examples"
    copy_vault(EXAMPLES, root)
    v = open_vault(root, embedder="fake")
    try:
        v.index()
        answer = v.query("What does the b parameter of BM25 do?")
    finally:
        v.close()
    assert answer.page, "the extractive answer is filed under queries/"
    before = [f for f in _lint(root, select=["WM408"]).findings if f.path == answer.page]
    assert before == []
    front = (root / answer.page).read_text(encoding="utf-8")
    cited = front.split("sources:", 1)[1].split("[[", 1)[1].split("]]", 1)[0].split("#")[0].split("|")[0]
    target = next(p for p in root.rglob("*.md") if p.relative_to(root).with_suffix("").as_posix() == cited
                  or p.stem == cited)
    target.write_text("# Rewritten\n\nEvery sentence of this page is different now.\n", encoding="utf-8")
    after = [f for f in _lint(root, select=["WM408"]).findings if f.path == answer.page]
    assert after and "changed after this page was written" in after[0].message
