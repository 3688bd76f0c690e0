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
