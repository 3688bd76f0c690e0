"""What an agent sees of its memories (issue 53): dates, open conflicts, and a listing without a query.

Every memory note carries ``created``; a fact ``remember`` was unsure about carries
``possible_update`` (the earlier memories it may replace). While both memories of such a pair are
active they conflict: each hit on one names the other in ``conflicts_with``, ``prime_context``
briefs the pair as a conflict rather than two truths, and one ``supersede`` (or ``restore``)
settles it. ``recall`` lists the memories current now (or valid at a date) with what each replaced.

The notes are the truth: this reads memories/ (a few hundred small notes), kept in memory until a
file there changes (names, sizes and mtimes).
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from ..errors import UsageError, WikimemError
from ..parse import frontmatter as fm
from ..parse import parse_page

FOLDER = "memories"


@dataclass(frozen=True)
class MemoryInfo:
    path: str
    fact: str
    kind: str
    about: str | None
    created: str | None
    superseded: bool
    superseded_by: str | None
    superseded_on: str | None
    supersedes: tuple[str, ...]
    possible_update: tuple[str, ...]


_CACHE: dict[str, tuple[tuple, dict[str, MemoryInfo]]] = {}


def _link_path(link: str, names: dict[str, str]) -> str | None:
    target = str(link).strip().strip("[]").split("|", 1)[0].split("#", 1)[0].strip()
    target = target[:-3] if target.endswith(".md") else target
    return names.get(target.casefold()) or names.get(target.rsplit("/", 1)[-1].casefold())


def load(ctx) -> dict[str, MemoryInfo]:
    """path -> MemoryInfo for every note in memories/."""
    folder = ctx.files.abspath(FOLDER)
    if not folder.is_dir():
        return {}
    files = sorted(folder.glob("*.md"))
    key = tuple((p.name, st.st_mtime_ns, st.st_size) for p in files for st in [p.stat()])
    kept = _CACHE.get(str(ctx.root))
    if kept is not None and kept[0] == key:
        return kept[1]
    pages = {}
    for p in files:
        rel = f"{FOLDER}/{p.name}"
        try:
            pages[rel] = parse_page(rel, ctx.files.read_note(rel).text)
        except WikimemError:
            continue
    names = {}
    for rel in pages:
        stem = rel[:-3]
        names[stem.casefold()] = rel
        names.setdefault(stem.rsplit("/", 1)[-1].casefold(), rel)
    out = {}
    for rel, page in pages.items():
        f = page.frontmatter
        links = lambda key: tuple(p for p in (_link_path(v, names) for v in fm.as_list(f.get(key))) if p and p != rel)  # noqa: E731
        by = links("superseded_by")
        out[rel] = MemoryInfo(rel, page.body.strip(), str(f.get("kind") or "episodic").strip().lower(),
                              (str(f.get("about")) if f.get("about") else None), _text(f.get("created")),
                              page.status == "superseded", by[0] if by else None, _text(f.get("superseded_on")),
                              links("supersedes"), links("possible_update"))
    _CACHE[str(ctx.root)] = (key, out)
    return out


def _text(value: Any) -> str | None:
    return None if value is None or value == "" else str(value)


def conflicts(infos: dict[str, MemoryInfo]) -> dict[str, list[str]]:
    """path -> the active memories it conflicts with (a possible_update pair, both still active)."""
    out: dict[str, set[str]] = {}
    for rel, info in infos.items():
        if info.superseded:
            continue
        for other in info.possible_update:
            o = infos.get(other)
            if o is not None and not o.superseded:
                out.setdefault(rel, set()).add(other)
                out.setdefault(other, set()).add(rel)
    return {k: sorted(v) for k, v in out.items()}


def annotate(ctx, result):
    """``result`` (a SearchResult) with each memory hit's ``created`` and ``conflicts_with``."""
    if not any(h.path.startswith(f"{FOLDER}/") for h in result.hits):
        return result
    infos = load(ctx)
    clash = conflicts(infos)
    hits = []
    for h in result.hits:
        info = infos.get(h.path)
        if info is not None:
            h = replace(h, created=info.created, conflicts_with=tuple(clash.get(h.path, ())))
        hits.append(h)
    return replace(result, hits=tuple(hits))


def recall(ctx, kind: str | None = None, about: str | None = None, as_of: str | None = None,
           include_all: bool = False) -> list[dict[str, Any]]:
    """The memories current now (``as_of``: valid at that date or moment; ``include_all``: every
    memory, superseded ones marked), newest first, each with its date, what it replaced and the
    memories it conflicts with. ``about``: the ``about`` page or a word of the fact."""
    from ..search.timeline import as_of_moment, moment
    from .memory import KINDS
    if kind is not None and kind.strip().lower() not in KINDS:
        raise UsageError(f"unknown memory kind {kind!r} (choose one of {', '.join(KINDS)})")
    when = as_of_moment(as_of) if as_of else None
    infos = load(ctx)
    clash = conflicts(infos)
    needle = (about or "").strip().strip("[]").casefold()
    newer: dict[str, list[str]] = {}
    for rel, info in infos.items():
        for old in info.supersedes:
            newer.setdefault(old, []).append(rel)
    out = []
    for rel, info in infos.items():
        if kind and info.kind != kind.strip().lower():
            continue
        if needle and needle not in (info.about or "").casefold() and needle not in info.fact.casefold():
            continue
        if when is not None:
            start = moment(info.created)
            ends = [moment(info.superseded_on)] + [moment(infos[n].created) for n in newer.get(rel, ())]
            ends = [e for e in ends if e and (start is None or e >= start)]
            if (start and start > when) or (ends and min(ends) <= when) or (info.superseded and not ends):
                continue
        elif info.superseded and not include_all:
            continue
        row = {"path": rel, "fact": info.fact, "kind": info.kind, "created": info.created,
               "replaced": list(info.supersedes), "conflicts_with": clash.get(rel, []) if not info.superseded else []}
        if info.about:
            row["about"] = info.about
        if info.superseded:
            row.update(status="superseded", superseded_by=info.superseded_by, superseded_on=info.superseded_on)
        out.append(row)
    out.sort(key=lambda r: (moment(r["created"]) or "", r["path"]), reverse=True)
    return out
