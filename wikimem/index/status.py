"""``wikimem status``: what the cache holds and how far it is behind the vault. Reads only."""
from __future__ import annotations

import time
from typing import Any

from ..model import coverage_degraded, coverage_split
from ..stores.protocol import Stores
from ..stores.sidefiles import raise_if_not_damage


def vector_coverage(meta, chunks: int, vectors: int | None = None,
                    passages: int | None = None) -> tuple[float, float | None]:
    """``model.coverage_split`` from the manifest's wants (``chunks``: the wants of a manifest that
    never recorded them). ``vectors``/``passages``: counts held, by default the manifest's."""
    vectors = int(meta.get("vectors") or 0) if vectors is None else vectors
    passages = int(meta.get("passages_held") or 0) if passages is None else passages
    return coverage_split(vectors, int(meta.get("vectors_wanted") or chunks), passages,
                          int(meta.get("passages_wanted") or 0))


def vector_degraded(meta, coverage: float, passage_coverage: float | None) -> str | None:
    """``model.coverage_degraded`` with the pending flags a build left in the manifest."""
    return coverage_degraded(coverage, passage_coverage, bool(meta.get("vectors_pending")),
                             bool(meta.get("passages_pending")))


def status(ctx) -> dict[str, Any]:
    cache: Stores = ctx.cache
    info: dict[str, Any] = {"vault": str(ctx.root), "cache": cache.location}
    problem = cache.manifest_problem()
    if problem:
        info.update({"state": problem, "hint": "run `wikimem index`"})
        return info
    try:
        return _status(ctx, cache, info)
    except cache.damage_errors as exc:
        raise_if_not_damage(exc)
        info.update({"state": f"manifest is corrupt ({exc})", "hint": "run `wikimem index` to rebuild it"})
        return info


def _status(ctx, cache: Stores, info: dict[str, Any]) -> dict[str, Any]:
    manifest = cache.manifest
    meta = manifest.meta()
    pages = manifest.page_count()
    chunks = manifest.chunk_rows()
    damaged = cache.artifact_problems(meta)
    vectors = int(meta.get("vectors") or 0) if meta.get("embedder") and "faiss" not in damaged else 0
    coverage, passage_coverage = vector_coverage(meta, chunks, vectors, None if vectors else 0)
    scan = ctx.files.scan()
    known = manifest.file_stats()
    current = {f.path: (f.size, f.mtime_ns) for f in scan.files}
    skipped = [(s.path, s.kind, s.reason) for s in scan.skipped]
    changed = [p for p, st in current.items() if known.get(p) != st]
    for path in changed:  # a note the build could not read (binary, too large, not UTF-8) is skipped, not stale
        if path.lower().endswith((".md", ".markdown")):
            problem = ctx.files.check_note(path)
            if problem is not None:
                skipped.append((problem.path, problem.kind, problem.reason))
    skipped.sort()
    unreadable = {p for p, _, _ in skipped}
    stale = sorted(p for p in changed if p not in unreadable)
    gone = sorted(set(known) - set(current))
    problems = sorted((path, json_list(errors)) for path, errors in manifest.page_problems())
    degraded = []
    embedder_name = ctx.settings.embedder
    if embedder_name == "none" or meta.get("embedder") is None:
        degraded.append("vectors_unavailable")
    elif partial := vector_degraded(meta, coverage, passage_coverage):
        degraded.append(partial)
    if damaged:
        degraded.append("vectors_damaged")
    holder = cache.lock_holder()
    info.update({
        "state": "interrupted build (next index repairs it)" if meta.get("dirty") else "ok",
        "pages": pages,
        "chunks": chunks,
        "passages": manifest.passage_rows(),
        "vectors": vectors,  # one per chunk and one per passage
        "vector_coverage": round(coverage, 4),  # of what search scans: chunks, transcript turns' passages
        "passage_coverage": None if passage_coverage is None else round(passage_coverage, 4),  # notes' held passages
        # a note's held passages embedded by a detached job after `wikimem index` returned (passages_job.py)
        "passages_job": _job(ctx, meta),
        "embedder": meta.get("embedder"),
        "configured_embedder": embedder_name,
        # where the team's embedding cache is (never its password); not asked: status stays offline
        # (a vault whose stores are on PostgreSQL keeps its embeddings in that database, shared)
        "shared_embedding_cache": _server(ctx.settings.embedding_cache_url or (
            ctx.settings.database_url if ctx.settings.store == "postgres" else "")),
        "cache_bytes": cache.size_bytes(),
        "last_build": time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(meta["last_build"])) if meta.get("last_build") else None,
        "writer": f"pid {holder}" if holder else None,
        "stale_files": stale + gone,
        "skipped_files": [{"path": p, "kind": k, "reason": r} for p, k, r in skipped],
        "page_problems": [{"path": p, "problems": e} for p, e in problems],
        "damaged": damaged,
        "degraded": degraded,
        "schema_version": meta.get("schema_version"),
        "wikimem_version": meta.get("wikimem_version"),
    })
    return info


def _job(ctx, meta) -> dict[str, Any] | None:
    """The passages job: running or its last state, and the held passages in / wanted now."""
    from .passages_job import read_state
    job = read_state(ctx.root)
    if job is None:
        return None
    job.update(passages_held=int(meta.get("passages_held") or 0), passages_wanted=int(meta.get("passages_wanted") or 0))
    return job


def _server(url: str) -> str | None:
    if not url:
        return None
    from ..stores.pg import server_name
    return server_name(url)


def json_list(text: str | None) -> list[str]:
    import json
    try:
        value = json.loads(text or "[]")
    except ValueError:
        return []
    return [str(v) for v in value] if isinstance(value, list) else []
