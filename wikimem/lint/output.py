"""Renderings of a LintReport that are not the CLI's rich tables: SARIF 2.1.0 for code-scanning
tools (GitHub, VS Code's SARIF viewer).

Artifact URIs are relative references percent-encoded from the vault-relative path (spaces, ``#``,
``?``, ``%`` and non-ASCII as UTF-8 escapes), resolved against ``VAULT``, which
``originalUriBaseIds`` defines as the vault's absolute ``file://`` URI (ending in ``/``) when the
report knows its vault. tests/test_sarif.py validates the output against the SARIF 2.1.0 schema."""
from __future__ import annotations

from pathlib import Path
from typing import Any
from urllib.parse import quote

from .registry import all_rules

_LEVEL = {"error": "error", "warning": "warning", "info": "note"}


def artifact_uri(path: str) -> str:
    """A vault-relative path as a relative URI reference: ``concepts/My Page.md`` ->
    ``concepts/My%20Page.md``."""
    return quote(path, safe="/")


def base_uri(root) -> str:
    uri = Path(root).resolve().as_uri()
    return uri if uri.endswith("/") else uri + "/"


def to_sarif(report) -> dict[str, Any]:
    from .. import __version__
    rules = all_rules()
    used = [c for c in report.rules if c in rules]
    root = getattr(report, "root", None)
    bases = {"originalUriBaseIds": {"VAULT": {"uri": base_uri(root),
                                              "description": {"text": "the vault folder"}}}} if root else {}
    location = (lambda path: {"uri": artifact_uri(path), "uriBaseId": "VAULT"}) if root else \
        (lambda path: {"uri": artifact_uri(path)})
    return {
        "$schema": "https://json.schemastore.org/sarif-2.1.0.json",
        "version": "2.1.0",
        "runs": [{
            "tool": {"driver": {
                "name": "wikimem", "version": __version__,
                "rules": [{"id": c, "name": rules[c].slug, "shortDescription": {"text": rules[c].summary},
                           "help": {"text": f"docs/rules/{c}.md"},
                           "defaultConfiguration": {"level": _LEVEL[rules[c].severity]}} for c in used],
            }},
            "results": [{
                "ruleId": f.code, "ruleIndex": used.index(f.code) if f.code in used else -1,
                "level": _LEVEL[f.severity], "message": {"text": f.message},
                "locations": [{"physicalLocation": {"artifactLocation": location(f.path),
                                                    "region": {"startLine": f.line, "startColumn": f.column}}}],
            } for f in report.findings],
            **bases,
            "invocations": [{"executionSuccessful": True,
                             "toolExecutionNotifications": [{"message": {"text": n}, "level": "note"}
                                                            for n in report.notices]}],
        }],
    }
