"""The server's fast SDK import (``wikimem.mcp.import_server_sdk``), each case in a fresh interpreter:
the test session itself has imported the whole SDK already."""
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
{before}
from wikimem.mcp import import_server_sdk
import_server_sdk()
from pydantic import ValidationError
from pydantic._internal._config import config_defaults
from mcp.server import MCPServer
from mcp.types import CallToolResult, TextContent
result = CallToolResult(content=[TextContent(type="text", text="no")], is_error=True)
try:
    TextContent(type="text")
    rejected = False
except ValidationError:
    rejected = True
print(json.dumps({{
    "client_loaded": "mcp.client" in sys.modules,
    "defer_build_default": config_defaults.get("defer_build", False),
    "dumped": result.model_dump(by_alias=True, exclude_none=True),
    "rejects_missing_text": rejected,
    "server_class": MCPServer.__name__,
}}))
"""


def probe(before: str = "") -> dict:
    proc = subprocess.run([sys.executable, "-c", PROBE.format(before=before)], capture_output=True, text=True,
                          timeout=120, cwd=str(ROOT), env={"PYTHONPATH": str(ROOT), "PATH": ""})
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def check_models_work(info: dict) -> None:
    assert info["server_class"] == "MCPServer"
    assert info["dumped"]["content"] == [{"type": "text", "text": "no"}] and info["dumped"]["isError"] is True
    assert info["rejects_missing_text"]  # a model built late still validates
    assert info["defer_build_default"] is False  # pydantic's default is back for everything else


def test_fast_import_loads_the_server_side_only():
    info = probe()
    check_models_work(info)
    assert not info["client_loaded"]


def test_fast_import_falls_back_to_the_ordinary_import():
    """A pydantic whose defaults cannot be changed: the whole SDK is imported the usual way."""
    before = """
from pydantic._internal import _config
class Fixed(dict):
    def __setitem__(self, key, value):
        raise TypeError("read-only defaults")
_config.config_defaults = Fixed(_config.config_defaults)
"""
    info = probe(before)
    check_models_work(info)
    assert info["client_loaded"]  # mcp/__init__.py ran: the package is complete


def test_fast_import_leaves_an_imported_sdk_alone():
    info = probe("import mcp")
    check_models_work(info)
    assert info["client_loaded"]
