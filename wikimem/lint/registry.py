"""The rule registry: every rule is a small generator registered with a stable code.

    @rule("WM101", "broken-link", severity="error")
    def broken_link(ctx):
        '''A link to a page that does not exist. Example: ``[[No Such Page]]``.'''
        yield ctx.finding(page, line, "...")

Codes never change meaning once published (users put them in ``--ignore`` lists and in page
frontmatter); the family is the code's first digit (WM1 links ... WM5 content).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Iterator, Mapping

SEVERITIES = ("info", "warning", "error")
FAMILIES = {"WM1": "links", "WM2": "frontmatter and schema", "WM3": "versions", "WM4": "graph and index",
            "WM5": "content"}


def severity_rank(severity: str) -> int:
    return SEVERITIES.index(severity)


@dataclass(frozen=True)
class Fix:
    """A safe, mechanical change ``--fix`` may apply. ``kind``: ``add_to_index`` (args: path),
    ``mark_superseded`` (args: path, superseded_by), ``tag_case`` (args: path, tags)."""

    kind: str
    args: tuple[Any, ...]
    description: str

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "description": self.description}


@dataclass(frozen=True)
class Finding:
    """One problem: where (vault-relative path, 1-based line and column), which rule, how bad,
    and a message that names the offending target (page, heading, block id, tag...)."""

    path: str
    line: int
    column: int
    code: str
    severity: str
    message: str
    fix: Fix | None = None

    def sort_key(self) -> tuple:
        return (self.path, self.line, self.code, self.column, self.message)

    def to_dict(self) -> dict[str, Any]:
        data = {"path": self.path, "line": self.line, "column": self.column, "code": self.code,
                "severity": self.severity, "message": self.message}
        if self.fix is not None:
            data["fix"] = self.fix.to_dict()
        return data


@dataclass(frozen=True)
class Rule:
    code: str
    slug: str
    severity: str
    check: Callable[..., Iterator[Finding]]

    @property
    def summary(self) -> str:
        """The docstring's first sentence."""
        doc = " ".join((self.check.__doc__ or "").split())
        return doc.split(". ", 1)[0].rstrip(".") + "."


RULES: dict[str, Rule] = {}


def rule(code: str, slug: str, severity: str = "warning"):
    """Register a rule function under ``code``; a duplicate code is a programming error."""
    if severity not in SEVERITIES:
        raise ValueError(f"{code}: unknown severity {severity!r}")

    def register(fn: Callable[..., Iterator[Finding]]):
        if code in RULES:
            raise ValueError(f"lint rule {code} registered twice")
        RULES[code] = Rule(code, slug, severity, fn)
        return fn
    return register


def all_rules() -> Mapping[str, Rule]:
    """Every registered rule, by code (importing the rule modules registers them)."""
    from . import rules  # noqa: F401 (import registers)
    return dict(sorted(RULES.items()))


def matches(code: str, prefixes) -> bool:
    return any(code.startswith(p.strip().upper()) for p in prefixes if p.strip())
