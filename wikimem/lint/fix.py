"""``wikimem lint --fix``: apply the safe, mechanical fixes findings carry, through the writer
path (index.md via ``add_to_index``, frontmatter via the conflict-checked ``update_frontmatter``),
and log each in log.md. raw/ is never touched; a page changed since lint read it is skipped (the
next run reports it again). Applying the fixes twice changes nothing the second time."""
from __future__ import annotations

import logging

from typing import TYPE_CHECKING

from ..errors import WikimemError
from ..knowledge.writer import add_to_index, append_log, update_frontmatter
from ..vault.files import is_raw_path
from .registry import Finding

if TYPE_CHECKING:
    from ..core import Context

log = logging.getLogger(__name__)


def _apply(ctx: "Context", finding: Finding) -> bool:
    fix = finding.fix
    path = fix.args[0]
    if is_raw_path(path):
        return False
    if fix.kind == "add_to_index":
        return bool(add_to_index(ctx, path))
    expected = fix.args[1] or None
    if fix.kind == "mark_superseded":
        page = ctx.parse_file(path)
        changes = {"status": "superseded"}
        if not page.frontmatter.data.get("superseded_by"):
            changes["superseded_by"] = fix.args[2]
        update_frontmatter(ctx, path, changes, expected_sha256=expected)
        return True
    if fix.kind == "tag_case":
        update_frontmatter(ctx, path, {"tags": list(fix.args[2])}, expected_sha256=expected)
        return True
    raise ValueError(f"unknown fix kind {fix.kind!r}")  # a rule bug, not user input


def apply_fixes(ctx: "Context", findings: list[Finding]) -> list[str]:
    """Apply every finding's fix once; returns "path: what" for each change made."""
    done: list[str] = []
    seen: set[tuple] = set()
    for f in findings:
        if f.fix is None or (f.fix.kind, f.fix.args[0]) in seen:
            continue
        seen.add((f.fix.kind, f.fix.args[0]))
        try:
            changed = _apply(ctx, f)
        except WikimemError as exc:
            log.warning("%s: %s not applied: %s", f.path, f.fix.description, exc)
            continue
        if changed:
            entry = f"{f.path}: {f.fix.description} ({f.code})"
            done.append(entry)
            append_log(ctx, "lint --fix", entry)
    return done
