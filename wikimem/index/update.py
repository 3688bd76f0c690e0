"""Bringing the cache up to date, as every caller below the facade asks for it.

``update`` is ``build`` plus the one courtesy a build owes a running watcher: a full build beside
one waits for the watcher's short commits instead of failing, and says so. ``current_pages`` is
what a pass that reads every page starts from (lint, moves, listings): the cache's pages, its
lexical side brought up to date first when this process may write it.
"""
from __future__ import annotations

import logging
import os
from typing import TYPE_CHECKING, Iterable

from ..errors import LockError
from ..model import BuildReport, Page
from .build import LOCK_WAIT_S, build
from ..stores.sidefiles import watcher_pid

if TYPE_CHECKING:
    from ..core import Context

log = logging.getLogger(__name__)


def update(ctx: "Context", *, rebuild: bool = False, embed: bool = True, progress=None,
           paths: Iterable[str] | None = None, wait: float = 0.0, passages: str = "all") -> BuildReport:
    """Bring the cache up to date. ``paths``: only these vault-relative files changed (a watcher
    or a write-back knows); default: a full incremental scan. ``embed=False`` commits the lexical
    index and graph and leaves new vectors to ``embed_pending``. ``wait``: seconds to wait for
    another writer before LockError. ``passages``: "all" embeds every missing vector (but the held
    passages a running background job holds); "wait" waits for that job too; "background" leaves
    many missing held passages to a detached job once every chunk is in (passages_job.py)."""
    watcher = watcher_pid(ctx.root) if paths is None else None
    beside = watcher is not None and watcher != os.getpid()
    if beside or _passages_job_runs(ctx):  # their commits are short: wait for one, do not fail
        wait = max(wait, LOCK_WAIT_S)
    report = build(ctx, rebuild=rebuild, embed=embed, progress=progress, wait=wait, paths=paths, passages=passages)
    if beside:
        report.notices.append(f"a watcher (pid {watcher}) follows this vault: this build committed beside it "
                              "and never held it up (`wikimem watch --status` shows its state)")
    return report


def _passages_job_runs(ctx: "Context") -> bool:
    """Whether another process's passages job (passages_job.py) runs: it commits every few seconds."""
    from .passages_job import job_pid
    pid = job_pid(ctx.root)
    return pid is not None and pid != os.getpid()


def current_pages(ctx: "Context", paths: Iterable[str] | None = None, refresh: bool = True) -> dict[str, Page]:
    """Every note parsed and resolved, served from the cache (nothing is re-parsed that the cache
    holds). ``refresh``: bring the cache's lexical side up to date first, when this process may
    write it; otherwise the last committed state is used."""
    if refresh:
        refresh_lexical(ctx)
    return ctx.cache.pages(paths)


def refresh_lexical(ctx: "Context", *, unless_watched: bool = False) -> None:
    """Bring the cache's lexical side up to date before a read, when this process may write it;
    another process building meanwhile leaves its last commit as what there is. ``unless_watched``:
    skip it when a watcher follows the vault (it keeps the cache current already)."""
    if not ctx.cache.writable() or (unless_watched and watcher_pid(ctx.root) is not None):
        return
    try:
        update(ctx, embed=False, wait=5.0)
    except LockError:
        log.info("another process is updating the cache; using its last committed state")
