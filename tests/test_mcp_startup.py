"""The server starts on the libraries' public API only (issue 29 item 6): it used to flip pydantic's
private ``defer_build`` default and stub ``sys.modules["mcp"]`` to start faster; measured, that bought
no time to the first answered tools/list (benchmarks/bench_mcp_start.py), so it went. Each case runs
in a fresh interpreter: the test session itself has imported the whole SDK already."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("mcp.server")

ROOT = Path(__file__).parent.parent

PROBE = """
import json, sys
from pydantic._internal._config import config_defaults
before = dict(config_defaults)
from wikimem.api import open_vault
from wikimem.mcp import build_server
vault = open_vault(sys.argv[1], embedder="none")
server = build_server(vault)
import mcp
print(json.dumps({
    "defaults_unchanged": dict(config_defaults) == before,
    "mcp_package_complete": hasattr(mcp, "Client") and hasattr(mcp, "__file__"),
    "server_class": type(server).__name__,
}))
"""


def test_building_the_server_patches_no_library(tmp_path):
    (tmp_path / "v").mkdir()
    (tmp_path / "v" / "A.md").write_text("# A\n\nx\n", encoding="utf-8")
    proc = subprocess.run([sys.executable, "-c", PROBE, str(tmp_path / "v")], capture_output=True, text=True,
                          timeout=120, cwd=str(ROOT), env={"PYTHONPATH": str(ROOT), "PATH": ""})
    assert proc.returncode == 0, proc.stderr
    info = json.loads(proc.stdout)
    assert info == {"defaults_unchanged": True, "mcp_package_complete": True, "server_class": "MCPServer"}


def test_the_server_code_touches_no_private_module_of_another_library():
    for source in (ROOT / "wikimem" / "mcp").glob("*.py"):
        text = source.read_text(encoding="utf-8")
        for private in ("pydantic._internal", "sys.modules[", "_tool_manager", "config_defaults"):
            assert private not in text, f"{source.name} uses {private}"
