"""Contradictions go to a person (compile holds them back; review, lint WM509 and MCP review show both
sentences, both citations and lines, each quote checked) and stale compiled sections join the review
queue (a cited source changed or gone), which `review --refresh` compiles again."""
from __future__ import annotations

import json

from typer.testing import CliRunner

from conftest import write_vault
from wikimem.api import open_vault
from wikimem.cli import app
from wikimem.compile.contradict import Contradiction, verified

runner = CliRunner()
PAGE = "entities/Tool X.md"
PERSON = "---\ntype: entity\n---\n# Tool X\n\nTool X listens on port 8080 by default.\n\nMy own line.\n"
SOURCE = "# Release notes\n\nTool X listens on port 9090 by default.\n\nTool X is written in Rust.\n"


def vault(tmp_path):
    root = write_vault(tmp_path / "v", {PAGE: PERSON, "raw/articles/release.md": SOURCE,
                                        "raw/articles/other.md": "# Other\n\nTool X runs on Linux and macOS.\n"})
    return root, open_vault(root, embedder="none")


def test_a_contradiction_is_held_back_and_reviewed(tmp_path):
    root, v = vault(tmp_path)
    report = v.compile()
    [c] = report.contradictions
    assert (c.page, c.page_sentence) == (PAGE, "Tool X listens on port 8080 by default.")
    assert (c.source, c.source_line, c.source_link) == ("raw/articles/release.md", 3, "[[raw/articles/release]]")
    text = (root / PAGE).read_text(encoding="utf-8")
    assert "9090" not in text  # not written over, nor beside, the person's sentence
    assert "- Tool X is written in Rust. [[raw/articles/release]]" in text and "My own line." in text
    assert text.split("\n")[c.page_line - 1] == c.page_sentence
    review = v.review()
    assert [x.to_dict() for x in review.contradictions] == [c.to_dict()]
    result = runner.invoke(app, ["review", "-V", str(root)])
    assert result.exit_code == 1
    assert f"page {PAGE}:{c.page_line}: Tool X listens on port 8080" in result.output
    assert "source raw/articles/release.md:3: Tool X listens on port 9090 by default. [[raw/articles/release]]" \
        in result.output
    lint = v.lint(select=["WM509"])
    assert [(f.path, f.line) for f in lint.findings] == [(PAGE, c.page_line)]
    from wikimem.mcp.tools import Tools
    assert Tools(v).review()["contradictions"][0]["source_sentence"] == "Tool X listens on port 9090 by default."
    # the person resolves it: the page says what the source says; the sentence is compiled then
    (root / PAGE).write_text(text.replace("8080", "9090"), encoding="utf-8")
    v.index(embed=False)
    again = v.compile()
    assert again.contradictions == [] and "- Tool X listens on port 9090 by default." in \
        (root / PAGE).read_text(encoding="utf-8")
    assert v.review().contradictions == [] and v.lint(select=["WM509"]).findings == []
    v.close()


def test_a_finding_whose_quote_is_not_there_is_dropped():
    files = {"p.md": "# P\n\nTool X listens on port 8080 by default.\n", "s.md": "Tool X listens on port 9090.\n"}
    real = Contradiction("p.md", 1, "Tool X listens on port 8080 by default.", "s.md", 1,
                         "Tool X listens on port 9090.", "[[s]]")
    made_up = Contradiction("p.md", 1, "Tool X listens on port 7070 by default.", "s.md", 1,
                            "Tool X listens on port 9090.", "[[s]]")
    kept, dropped = verified([real, made_up], files.__getitem__)
    assert [k.page_line for k in kept] == [3] and dropped == 1  # the line read from the file, not taken


def test_stale_compiled_sections_are_reviewed_and_refreshed(tmp_path):
    root, v = vault(tmp_path)
    v.compile()
    assert v.review().stale == []
    raw = root / "raw/articles/other.md"
    raw.write_text("# Other\n\nTool X runs on Linux, macOS and Windows.\n", encoding="utf-8")
    v.index(embed=False)
    [stale] = v.review().stale
    assert stale.path == PAGE and stale.reasons[0].kind == "text-changed"
    assert stale.reasons[0].changed[0].old == "Tool X runs on Linux and macOS."
    result = runner.invoke(app, ["review", "-V", str(root), "--refresh", "--all", "--json"])
    data = json.loads(result.output)
    [done] = data["refreshed"]
    assert done["status"] == "refreshed" and done["removed"] and done["added"]
    assert data["stale"] == []
    text = (root / PAGE).read_text(encoding="utf-8")
    assert "Tool X runs on Linux, macOS and Windows." in text and "Linux and macOS." not in text
    assert "My own line." in text
    raw.unlink()  # the source went
    v.index(embed=False)
    assert [r.kind for r in v.review().stale[0].reasons] == ["missing"]
    refreshed = v.refresh_stale([PAGE]).refreshed
    assert refreshed[0].status == "refreshed" and v.review().stale == []
    assert "runs on Linux" not in (root / PAGE).read_text(encoding="utf-8")
    v.close()
