"""The README tells the truth about the CLI (issue 26 item 2), as sqlite-utils tests its docs:
every command is in the README's command table, every flag the table names exists on that
command, and every option of a command is documented in the README or docs/."""
import re
from pathlib import Path

import typer

from wikimem.cli import app

ROOT = Path(__file__).parent.parent
README = (ROOT / "README.md").read_text(encoding="utf-8")
DOCS = README + "".join(p.read_text(encoding="utf-8") for p in sorted((ROOT / "docs").glob("*.md")))
ROW = re.compile(r"^\| `wikimem (?P<name>[a-z-]+)(?:[^|`]|\\\|)*` \|(?P<text>.*)\|\s*$", re.M)
FLAG = re.compile(r"(?<![\w-])(--[a-z][a-z0-9-]*)")


def _commands():
    return typer.main.get_command(app).commands


def _flags(cmd) -> set[str]:
    """A command's options; a group's (``wikimem token``) are its subcommands' too."""
    own = {opt for p in cmd.params if getattr(p, "param_type_name", "") == "option"
           for opt in (*p.opts, *p.secondary_opts)}
    for sub in getattr(cmd, "commands", {}).values():
        own |= _flags(sub)
    return own


def test_every_command_is_in_the_readme_table():
    rows = {m.group("name") for m in ROW.finditer(README)}
    assert set(_commands()) <= rows, sorted(set(_commands()) - rows)


def test_every_flag_the_table_names_exists():
    commands = _commands()
    wrong = []
    for m in ROW.finditer(README):
        name = m.group("name")
        row = m.group(0)
        flags = _flags(commands[name]) | {"--help"}
        wrong += [(name, f) for f in FLAG.findall(row) if f not in flags]
    assert wrong == []


def test_every_option_is_documented_somewhere():
    missing = [(name, opt) for name, cmd in _commands().items() for opt in sorted(_flags(cmd))
               if opt.startswith("--") and opt not in ("--help", "--json") and opt not in DOCS]
    assert missing == []


def test_the_quick_start_has_exactly_two_commands_that_install_from_the_clone():
    start = README.split("## Quick start", 1)[1].split("\n## ", 1)[0]
    blocks = re.findall(r"```bash\n(.*?)```", start, re.S)
    assert len(blocks) == 2 and all(b.strip().count("\n") == 0 for b in blocks)
    assert blocks[0].startswith("pip install -e .") and "wikimem index examples" in blocks[0]
    assert blocks[1].strip() == 'pip install -e ".[test]" && pytest'
    assert "pip install 'wikimem[" not in README  # wikimem is installed from a clone, not from PyPI


def _quick_start() -> list[str]:
    start = README.split("## Quick start", 1)[1].split("\n## ", 1)[0]
    return [b.strip() for b in re.findall(r"```bash\n(.*?)```", start, re.S)]


def test_ci_runs_the_quick_start_commands_in_order_as_written():
    """Issue 47 item 1: CI runs the README's first command before its second, exactly as written, so
    the suite is run after a user's `wikimem index examples` left its cache in the clone."""
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    first, second = _quick_start()
    assert first in ci and second in ci
    assert ci.index(first) < ci.index(second)


def test_fixture_copies_leave_out_what_a_users_commands_left_in_the_repo(tmp_path, monkeypatch):
    """Issue 47 item 1: the README's first command indexes examples/ in place (and Obsidian or a
    watcher leave more there); a test's copy of examples/ must be the vault as the repo holds it."""
    from conftest import EXAMPLES, copy_vault
    from wikimem.api import open_vault
    from wikimem.cli import app as cli_app
    from typer.testing import CliRunner
    monkeypatch.setenv("WIKIMEM_EMBEDDER", "fake")
    repo_examples = copy_vault(EXAMPLES, tmp_path / "repo" / "examples")
    done = CliRunner().invoke(cli_app, ["index", str(repo_examples), "--quiet"])  # the README's first command
    assert done.exit_code == 0, done.output
    (repo_examples / ".trash").mkdir()
    (repo_examples / ".trash" / "Deleted.md").write_text("# Deleted\n\nA note Obsidian moved to its bin.\n")
    (repo_examples / ".obsidian").mkdir(exist_ok=True)
    (repo_examples / ".obsidian" / "workspace.json").write_text("{}")
    assert (repo_examples / ".wikimem").is_dir()
    copy = copy_vault(repo_examples, tmp_path / "copy")
    assert not (copy / ".wikimem").exists() and not (copy / ".trash").exists()
    assert not (copy / ".obsidian" / "workspace.json").exists()
    assert open_vault(copy, embedder="fake").status()["state"] == "no cache yet"


def test_no_test_copies_a_repo_vault_by_hand():
    """Every copy of examples/ or a fixture folder goes through conftest.copy_vault (issue 47 item 1)."""
    by_hand = re.compile(r"shutil\.copytree\((?:EXAMPLES|FIXTURES|ROOT\s*/\s*\"examples\"|HERE)")
    offenders = [p.name for p in sorted((ROOT / "tests").glob("*.py"))
                 if p.name != "conftest.py" and by_hand.search(p.read_text(encoding="utf-8"))]
    assert offenders == []


def test_the_json_sentence_names_the_commands_without_json():
    """Issue 47 item 16: "every command takes --json" was not true."""
    def walk(group, prefix=""):
        for name, sub in group.commands.items():
            if hasattr(sub, "commands"):
                yield from walk(sub, f"{prefix}{name} ")
            else:
                yield f"{prefix}{name}", "--json" in _flags(sub)
    without = sorted(name for name, has in walk(typer.main.get_command(app)) if not has)
    sentence = README.split("takes `--json` for scripts", 1)[0].rsplit("\n\n", 1)[-1]
    assert sorted(re.findall(r"`([a-z ]+)`", sentence)) == without


def test_the_readme_names_every_mcp_tool():
    """Issue 47 item 16: the README's MCP row named 16 of the 22 tools."""
    from wikimem.mcp.listing import load
    tools = {t["name"] for t in load()["read-write"]["legacy"]["tools/list"]["tools"]}
    row = next(line for line in README.splitlines() if line.startswith("| `wikimem mcp"))
    named = set(re.findall(r"`([a-z_]+)`", row.split("; keeps the vault warm", 1)[0]))
    assert tools - named == set() and named - tools == set()
