"""Run the registered rules over a vault: bring the cache up to date (lexical side), read the
parsed pages it holds, run every selected rule, then filter (paths, per-page suppression),
apply severities and sort by (path, line, code).

Info findings are suggestions (an unlinked mention, a stale page, a phone-number-like string), so
a default run reports warnings and errors only and says in a notice how many infos it left out
(``LintReport.hidden``, ``summary.hidden_info`` in JSON). They are reported with ``show_infos``
(``--show-infos``; SCHEMA.md ``lint: {show_infos: true}``), with an explicit ``select`` (the user
asked for those rules), or when they fail the run (``fail_on: info``). Every format (text, JSON,
SARIF, MCP) reports the same findings; the exit code never depends on a hidden finding."""
from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterable

from ..errors import NoteReadError, UsageError
from ..index.update import current_pages
from ..parse.schema import VaultSchema
from .context import LintContext
from .options import LintOptions, check_severity, load_options
from .registry import SEVERITIES, Finding, Rule, all_rules, matches, severity_rank

if TYPE_CHECKING:
    from ..core import Context

log = logging.getLogger(__name__)


@dataclass
class LintReport:
    findings: list[Finding]
    rules: list[str]
    fail_on: str = "warning"
    notices: list[str] = field(default_factory=list)
    fixed: list[str] = field(default_factory=list)
    pages: int = 0
    seconds: float = 0.0
    rule_seconds: dict[str, float] = field(default_factory=dict)
    hidden: dict[str, int] = field(default_factory=dict)  # info findings left out, by code
    root: str | None = None  # the vault folder (SARIF's VAULT base URI)

    @property
    def failed(self) -> bool:
        """Findings at or above the ``fail_on`` severity (exit code 1)."""
        bar = severity_rank(self.fail_on)
        return any(severity_rank(f.severity) >= bar for f in self.findings)

    def counts(self) -> dict[str, int]:
        out = {s: 0 for s in reversed(SEVERITIES)}
        for f in self.findings:
            out[f.severity] += 1
        return out

    def to_dict(self) -> dict[str, Any]:
        by_code: dict[str, int] = {}
        for f in self.findings:
            by_code[f.code] = by_code.get(f.code, 0) + 1
        return {"findings": [f.to_dict() for f in self.findings],
                "summary": {"pages": self.pages, "findings": len(self.findings), **self.counts(),
                            "by_code": dict(sorted(by_code.items())), "fail_on": self.fail_on,
                            "failed": self.failed, "hidden_info": sum(self.hidden.values()),
                            "hidden_by_code": dict(sorted(self.hidden.items()))},
                "rules": self.rules, "notices": self.notices, "fixed": self.fixed}


def select_rules(select: Iterable[str], ignore: Iterable[str], options: LintOptions) -> list[Rule]:
    rules = all_rules()
    select = [s.strip().upper() for s in select if s.strip()] or list(options.select)
    ignore = [s.strip().upper() for s in ignore if s.strip()] + list(options.ignore)
    for prefix in select + ignore:
        if not any(code.startswith(prefix) for code in rules):
            raise UsageError(f"no lint rule matches {prefix!r} (codes are WM101...WM5xx; see docs/rules/)")
    return [r for code, r in rules.items() if (not select or matches(code, select)) and not matches(code, ignore)]


def _suppressed(page) -> tuple[str, ...]:
    """``wikimem: {ignore: [WM101]}`` in a page's frontmatter."""
    if page is None:
        return ()
    meta = page.frontmatter.data.get("wikimem")
    value = meta.get("ignore") if isinstance(meta, dict) else None
    if isinstance(value, str):
        value = value.replace(",", " ").split()
    return tuple(str(v).upper() for v in value) if isinstance(value, list) else ()


def _in_paths(path: str, paths: list[str]) -> bool:
    return not paths or any(p in ("", ".") or path == p or path.startswith(p.rstrip("/") + "/") for p in paths)


def load_context(ctx: "Context", refresh: bool = True) -> LintContext:
    """Pages from the cache, brought up to date first (lexical part: embedding is not lint's job)."""
    pages = current_pages(ctx, refresh=refresh)  # lexical build first when this process may write the cache
    files = ctx.cache.manifest.file_hashes()
    schema_text, schema, notices = None, VaultSchema(), []
    if (Path(ctx.root) / "SCHEMA.md").exists():
        try:
            schema_text = ctx.files.read_note("SCHEMA.md").text
            schema = ctx.schema()
        except NoteReadError as exc:  # binary, not UTF-8, too large: lint the rest without it
            notices.append(f"SCHEMA.md not read ({exc}); taxonomy, thresholds and lint options not applied")
    lint_ctx = LintContext(ctx.cache, pages, files, schema, load_options(schema_text))
    lint_ctx.notices.extend(notices)
    return lint_ctx


def run_rules(ctx: LintContext, rules: list[Rule], paths: list[str],
              timings: dict[str, float] | None = None) -> list[Finding]:
    findings: list[Finding] = []
    for r in rules:
        started = time.perf_counter()
        ctx.code = r.code
        override = ctx.options.severity.get(r.code)
        for f in r.check(ctx):
            if not _in_paths(f.path, paths):
                continue
            ignored = _suppressed(ctx.pages.get(f.path))
            if ignored and matches(f.code, ignored):
                continue
            findings.append(replace(f, severity=override or f.severity or r.severity))
        if timings is not None:
            timings[r.code] = timings.get(r.code, 0.0) + time.perf_counter() - started
    ctx.memo.save(page.sha256 for page in ctx.pages.values())
    findings.sort(key=Finding.sort_key)
    return findings


def shows_infos(show_infos: bool | None, select: list[str], bar: str, options: LintOptions) -> bool:
    """Whether info findings are reported (see the module docstring)."""
    if show_infos is not None:
        return show_infos
    return options.show_infos or bool(select) or bar == "info"


def split_hidden(findings: list[Finding], show: bool) -> tuple[list[Finding], dict[str, int]]:
    if show:
        return findings, {}
    hidden: dict[str, int] = {}
    for f in findings:
        if f.severity == "info":
            hidden[f.code] = hidden.get(f.code, 0) + 1
    return [f for f in findings if f.severity != "info"], dict(sorted(hidden.items()))


def lint(ctx: "Context", paths: Iterable[str] = (), select: Iterable[str] = (), ignore: Iterable[str] = (),
         fix: bool = False, fail_on: str | None = None, refresh: bool = True,
         show_infos: bool | None = None) -> LintReport:
    """Lint the vault (findings only for ``paths``, vault-relative files or folders, when given).
    ``show_infos``: report info findings too (None: only when ``select`` is given, ``fail_on``
    is info or SCHEMA.md sets ``lint.show_infos``)."""
    start = time.perf_counter()
    paths = [p.replace("\\", "/").strip("/") for p in paths]
    select = [s for s in select if s.strip()]
    lint_ctx = load_context(ctx, refresh)
    rules = select_rules(select, ignore, lint_ctx.options)
    bar = check_severity(fail_on, "--fail-on") if fail_on else lint_ctx.options.fail_on
    show = shows_infos(show_infos, select, bar, lint_ctx.options)
    timings: dict[str, float] = {"load": time.perf_counter() - start}
    findings = run_rules(lint_ctx, rules, paths, timings)
    fixed: list[str] = []
    if fix:
        from .fix import apply_fixes
        fixed = apply_fixes(ctx, findings)
        if fixed:  # report what is left, on the vault as it is now
            lint_ctx = load_context(ctx, refresh)
            findings = run_rules(lint_ctx, rules, paths)
    findings, hidden = split_hidden(findings, show)
    if hidden:
        lint_ctx.notices.append(f"{sum(hidden.values())} info finding(s) not shown ("
                                + ", ".join(f"{code} {n}" for code, n in hidden.items())
                                + "): suggestions, not problems; --show-infos (or --select, --fail-on info) shows them")
    return LintReport(findings, [r.code for r in rules], bar, lint_ctx.notices, fixed, len(lint_ctx.pages),
                      time.perf_counter() - start, timings, hidden, str(ctx.root))


def locate(paths: list[str], vault_path: str | None) -> tuple[str, list[str]]:
    """(vault root, vault-relative paths) for ``wikimem lint [PATHS]``: the vault is ``--vault``,
    else the nearest folder at or above the first PATH (or the current folder) that holds
    SCHEMA.md or .wikimem/, else the first PATH when it is a folder, else the current folder."""
    import os
    if vault_path:
        root = Path(vault_path).expanduser()
    else:
        env = os.environ.get("WIKIMEM_VAULT")
        start = Path(paths[0]).expanduser() if paths else Path(env or ".")
        start = start if start.is_dir() else start.parent
        root = next((d for d in (start.resolve(), *start.resolve().parents)
                     if (d / "SCHEMA.md").is_file() or (d / ".wikimem").is_dir()), None)
        if root is None:
            root = Path(paths[0]) if paths and Path(paths[0]).is_dir() else Path(env or ".")
    if not root.is_dir():
        raise UsageError(f"not a vault folder: {root}")
    rels = []
    base = root.resolve()
    here = Path.cwd().resolve()
    inside = here == base or base in here.parents
    for p in paths:
        given = Path(p).expanduser()
        # relative to the current folder when it is inside the vault, else to the vault; the other
        # reading is tried second, so `lint -V vault concepts/a.md` works from anywhere
        tries = [given] if given.is_absolute() else ([here / given, base / given] if inside else [base / given, here / given])
        full = next((t for t in tries if t.exists()), None)
        if full is None:
            raise UsageError(f"no such file or folder: {p} (paths are relative to the vault, or to the current "
                             "folder inside it)")
        try:
            rel = full.resolve().relative_to(base).as_posix()
        except ValueError:
            raise UsageError(f"{p} is not inside the vault {root}") from None
        rels.append("" if rel == "." else rel)
    return str(root), rels
