"""Renderings of a LintReport that are not the CLI's rich tables: SARIF 2.1.0 for code-scanning
tools (GitHub, VS Code's SARIF viewer)."""
from __future__ import annotations

from typing import Any

from .registry import all_rules

_LEVEL = {"error": "error", "warning": "warning", "info": "note"}


def to_sarif(report) -> dict[str, Any]:
    from .. import __version__
    rules = all_rules()
    used = [c for c in report.rules if c in rules]
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
                "locations": [{"physicalLocation": {"artifactLocation": {"uri": f.path, "uriBaseId": "VAULT"},
                                                    "region": {"startLine": f.line, "startColumn": f.column}}}],
            } for f in report.findings],
            "invocations": [{"executionSuccessful": True,
                             "toolExecutionNotifications": [{"message": {"text": n}, "level": "note"}
                                                            for n in report.notices]}],
        }],
    }
