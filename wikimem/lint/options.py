"""Lint settings from the vault itself: a ``lint:`` mapping in SCHEMA.md's YAML frontmatter.

SCHEMA.md is where a vault already states its rules for people and agents (taxonomy, thresholds,
naming), so the linter's knobs live beside them rather than in the cache folder::

    ---
    lint:
      select: [WM1, WM2]        # prefixes; default: every rule
      ignore: [WM502]
      fail_on: warning          # exit 1 at or above this severity (info | warning | error)
      severity: {WM401: info}   # per-rule severity
      today: 2026-01-31         # pin "today" for the age rules (WM407, WM508); default: the date
      show_infos: true          # report info findings in every run (default: only when asked)
      rules:                    # per-rule options (see each docs/rules/WMxxx.md)
        WM501: {min_pages: 3}
        WM503: {threshold: 0.97}
    ---

A bad value is a configuration error (exit 2), never silently ignored.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping

from ..errors import ConfigError
from ..parse import frontmatter as fm
from .registry import SEVERITIES


@dataclass(frozen=True)
class LintOptions:
    select: tuple[str, ...] = ()
    ignore: tuple[str, ...] = ()
    fail_on: str = "warning"
    severity: Mapping[str, str] = field(default_factory=dict)
    rules: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    today: str | None = None  # pins "today" for the age rules (tests, doc examples)
    show_infos: bool = False  # report info findings without being asked (see runner)

    def rule_options(self, code: str) -> Mapping[str, Any]:
        return self.rules.get(code, {})


def _codes(value: Any, key: str) -> tuple[str, ...]:
    if value is None:
        return ()
    if isinstance(value, str):
        value = [v for v in value.replace(",", " ").split()]
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ConfigError(f"SCHEMA.md lint.{key}: expected a list of rule codes or prefixes (e.g. [WM1, WM502])")
    return tuple(v.strip().upper() for v in value if v.strip())


def check_severity(value: Any, where: str) -> str:
    if not isinstance(value, str) or value.strip().lower() not in SEVERITIES:
        raise ConfigError(f"{where}: {value!r} is not one of {', '.join(SEVERITIES)}")
    return value.strip().lower()


def parse_options(data: Any) -> LintOptions:
    """The ``lint:`` mapping -> LintOptions (ConfigError on anything malformed)."""
    if data is None:
        return LintOptions()
    if not isinstance(data, dict):
        raise ConfigError("SCHEMA.md lint: expected a mapping (select, ignore, fail_on, severity, rules)")
    unknown = sorted(set(map(str, data)) - {"select", "ignore", "fail_on", "severity", "rules", "today",
                                         "show_infos"})
    if unknown:
        raise ConfigError(f"SCHEMA.md lint: unknown key(s) {', '.join(unknown)}")
    severity = data.get("severity") or {}
    rules = data.get("rules") or {}
    if not isinstance(severity, dict) or not isinstance(rules, dict) or \
            not all(isinstance(v, dict) for v in rules.values()):
        raise ConfigError("SCHEMA.md lint.severity / lint.rules: expected mappings keyed by rule code")
    return LintOptions(
        select=_codes(data.get("select"), "select"),
        ignore=_codes(data.get("ignore"), "ignore"),
        fail_on=check_severity(data.get("fail_on", "warning"), "SCHEMA.md lint.fail_on"),
        severity={str(k).upper(): check_severity(v, f"SCHEMA.md lint.severity.{k}") for k, v in severity.items()},
        rules={str(k).upper(): dict(v) for k, v in rules.items()},
        today=str(data["today"]) if data.get("today") else None,
        show_infos=_flag(data.get("show_infos", False), "SCHEMA.md lint.show_infos"),
    )


def _flag(value: Any, where: str) -> bool:
    if not isinstance(value, bool):
        raise ConfigError(f"{where}: {value!r} is not true or false")
    return value


def load_options(schema_text: str | None) -> LintOptions:
    if not schema_text:
        return LintOptions()
    front, _ = fm.parse(schema_text.replace("\r\n", "\n"))
    if front.error:
        return LintOptions()  # reported as WM201 on SCHEMA.md itself
    return parse_options(front.data.get("lint"))


def number(options: Mapping[str, Any], key: str, default: float, where: str) -> float:
    """A numeric rule option (a threshold, a count), ConfigError when it is not a number."""
    value = options.get(key, default)
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ConfigError(f"{where}: option {key}: {value!r} is not a number")
    return value
