"""``communities --obsidian-graph``: colour groups in ``.obsidian/graph.json`` so Obsidian's own
graph view colours pages by community.

Every other setting in the file is kept as it was; both writes are atomic. Groups wikimem wrote
are recognised in the file itself, by a clause that matches nothing and names us at the end of their
query (``-path:"wikimem:community"``), so a deleted cache cannot make a run add them again (it did:
7, 13, 19 groups). ``graph.json.bak`` holds the file as it was before wikimem first wrote groups
into it (it is not overwritten while the file holds groups of ours), and a user's own colour
groups stay, before ours: Obsidian colours a page by the first group that matches it, so the user's
groups keep winning for the pages they match and ours colour the rest. The log line this writes in
log.md is indexed at once (``refresh_cache``), so the cache stays current with wikimem's own writes.
"""
from __future__ import annotations

import json
from dataclasses import dataclass

from ..errors import WikimemError
from ..vault.files import sha256_bytes
from .communities import CommunityReport

GRAPH = ".obsidian/graph.json"
REMEMBERED = "obsidian-groups.json"
MAX_GROUPS = 12
# a colour-blind-safe qualitative palette (Okabe-Ito plus Tableau), as Obsidian's 0xRRGGBB ints
PALETTE = (0xE69F00, 0x56B4E9, 0x009E73, 0xF0E442, 0x0072B2, 0xD55E00, 0xCC79A7, 0x999999,
           0x4E79A7, 0xF28E2B, 0x59A14F, 0xB07AA1)


@dataclass(frozen=True)
class ObsidianResult:
    path: str
    backup: str | None
    groups: int
    kept_user_groups: int
    warnings: tuple[str, ...] = ()

    def to_dict(self) -> dict:
        return {"path": self.path, "backup": self.backup, "groups": self.groups,
                "kept_user_groups": self.kept_user_groups, "warnings": list(self.warnings)}


MARK = '-path:"wikimem:community"'  # excludes nothing (no note's path holds it); says whose group it is


def _query(members) -> str:
    return "(" + " OR ".join(f'path:"{p}"' for p in members) + ") " + MARK


def _is_ours(group, remembered: set[str]) -> bool:
    query = group.get("query") if isinstance(group, dict) else None
    return isinstance(query, str) and (query.rstrip().endswith(MARK) or query in remembered)


def colour_groups(report: CommunityReport) -> list[dict]:
    groups = []
    for i, c in enumerate([c for c in report.communities if c.size >= 2][:MAX_GROUPS]):
        groups.append({"query": _query(c.members), "color": {"a": 1, "rgb": PALETTE[i % len(PALETTE)]}})
    return groups


def _current_sha(ctx, rel: str) -> str | None:
    return ctx.files.file_sha256(rel) or None  # "" when missing (or unreadable: then a ConflictError)


def write_graph_settings(ctx, report: CommunityReport) -> ObsidianResult:
    target = ctx.root / GRAPH
    remembered_path = ctx.cache.dir / REMEMBERED
    old_bytes = None
    settings: dict = {}
    if target.exists():
        old_bytes = target.read_bytes()
        try:
            settings = json.loads(old_bytes.decode("utf-8")) if old_bytes.strip() else {}
        except (UnicodeDecodeError, ValueError) as exc:
            raise WikimemError(f"{GRAPH} is not valid JSON ({exc}); fix or remove it, then run again") from None
        if not isinstance(settings, dict):
            raise WikimemError(f"{GRAPH} does not hold a JSON object; fix or remove it, then run again")
    try:
        ours_before = set(json.loads(remembered_path.read_text(encoding="utf-8")))
    except (OSError, ValueError, TypeError):
        ours_before = set()
    existing = settings.get("colorGroups") if isinstance(settings.get("colorGroups"), list) else []
    user = [g for g in existing if not _is_ours(g, ours_before)]
    ours = colour_groups(report)
    settings["colorGroups"] = user + ours  # the first matching group wins in Obsidian: the user's first
    backup = None
    if old_bytes is not None:
        backup = GRAPH + ".bak"
        if len(user) == len(existing) or not (ctx.root / backup).exists():  # the user's own file, not ours
            ctx.files.write_file(backup, old_bytes, _current_sha(ctx, backup))
    ctx.files.write_file(GRAPH, (json.dumps(settings, ensure_ascii=False, indent=2) + "\n").encode("utf-8"),
                         None if old_bytes is None else sha256_bytes(old_bytes))
    if ctx.cache.dir.is_dir():
        ctx.cache.write_side_file(REMEMBERED, json.dumps(sorted(g["query"] for g in ours)).encode("utf-8"))
    from ..knowledge.writer import LOG_FILE, append_log, refresh_cache
    append_log(ctx, "communities", f"{GRAPH}: {len(ours)} colour groups by community")
    warning = refresh_cache(ctx, [LOG_FILE])  # our own write must not leave log.md stale in the cache
    return ObsidianResult(GRAPH, backup, len(ours), len(user), (warning,) if warning else ())
