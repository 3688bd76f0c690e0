"""``wikimem lint --format sarif`` is valid SARIF 2.1.0 for code-scanning tools (issue 26 item 18):
checked against tests/fixtures/sarif-2.1.0-subset.schema.json (written from the specification: no
network, no PyPI package ships the schema), artifact URIs percent-encoded, every uriBaseId defined."""
from __future__ import annotations

import json
from pathlib import Path
from urllib.parse import unquote, urlsplit

import jsonschema
from typer.testing import CliRunner

from conftest import FIXTURES
from wikimem.cli import app

runner = CliRunner()
SCHEMA = json.loads((FIXTURES / "sarif-2.1.0-subset.schema.json").read_text(encoding="utf-8"))


def _sarif(root) -> dict:
    result = runner.invoke(app, ["lint", str(root), "--format", "sarif"])
    assert result.exit_code in (0, 1), result.output
    return json.loads(result.stdout)


def test_sarif_is_valid_with_spaces_and_non_ascii_in_paths(make_vault):
    root = make_vault({"concepts/My Page.md": "# My Page\n\nSee [[No Such Page]].\n",
                       "concepts/中文 笔记.md": "# 中文 笔记\n\n[[缺失]]\n",
                       "index.md": "# Index\n\n- [[My Page]]\n- [[中文 笔记]]\n"})
    data = _sarif(root)
    jsonschema.Draft7Validator(SCHEMA).validate(data)
    run = data["runs"][0]
    bases = run.get("originalUriBaseIds", {})
    base = bases["VAULT"]["uri"]
    assert base.startswith("file://") and base.endswith("/")
    assert Path(unquote(urlsplit(base).path)) == Path(root).resolve()
    uris = set()
    for r in run["results"]:
        loc = r["locations"][0]["physicalLocation"]["artifactLocation"]
        assert loc["uriBaseId"] in bases
        assert " " not in loc["uri"]
        uris.add(unquote(loc["uri"]))
    assert {"concepts/My Page.md", "concepts/中文 笔记.md"} <= uris


def test_sarif_rule_indexes_point_at_their_rules(make_vault):
    root = make_vault({"a b.md": "# A\n\n[[Missing]]\n"})
    run = _sarif(root)["runs"][0]
    rules = run["tool"]["driver"]["rules"]
    for r in run["results"]:
        assert rules[r["ruleIndex"]]["id"] == r["ruleId"]
