"""File events -> the set of vault paths a build must look at, debounced.

watchdog reports what the OS saw: an editor's save is a burst (temp file created, written, renamed
over the note, folder modified), a ``git checkout`` is hundreds of events, a folder moved away is
one event for the folder alone. ``Changes`` keeps only what matters to the build: the
vault-relative files that may have changed, whole folders that appeared or went (expanded when the
build is due, because a folder moved out of the vault reports nothing about its files), and a flag
for "something happened that a per-path build cannot follow" (the ignore rules changed, events
were lost): a full incremental scan then.

Paths the scan never indexes are dropped here with the scan's own rules (dot-names, ``.wikimem/``,
``.obsidian/``, ``.trash/``, ``.git/``, ``.wikimemignore`` patterns), so the watcher never reacts
to its own cache writes or to an editor's hidden swap files. Other temporary files (``note.md~``,
vim's ``4913``) are handled like any file: usually gone again before the quiet period ends, and if
one stays, the full scan would index it too, so the cache still equals a rebuild.

The same rules decide what is watched at all (``pruning_observer_class``, ``PathFilter.listdir``):
no inotify watch and no polling walk below a folder the scan never indexes.
"""
from __future__ import annotations

import inspect
import logging
import os
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from watchdog.events import (DirCreatedEvent, DirDeletedEvent, DirMovedEvent, FileAttribEvent, FileClosedEvent,
                             FileCreatedEvent, FileDeletedEvent, FileMovedEvent, FileModifiedEvent,
                             FileSystemEvent, FileSystemEventHandler)
from watchdog.observers import Observer as PLAIN_OBSERVER

from ..vault.files import ALWAYS_SKIPPED_DIRS, IgnoreRules

log = logging.getLogger(__name__)

IGNORE_FILE = ".wikimemignore"
CACHE_DIR = ".wikimem"

# What the observer asks the OS for. Opens and read-only closes are left out: every build reads
# the notes it indexes, and those reads must not wake the watcher.
EVENT_TYPES = [FileCreatedEvent, FileModifiedEvent, FileDeletedEvent, FileMovedEvent, FileClosedEvent,
               FileAttribEvent, DirCreatedEvent, DirDeletedEvent, DirMovedEvent]


@dataclass
class Batch:
    """One build's worth of changes, taken from ``Changes`` when the quiet period is over."""

    files: set[str] = field(default_factory=set)
    folders_gone: set[str] = field(default_factory=set)
    folders_new: set[str] = field(default_factory=set)
    full: str | None = None  # why a full incremental scan is needed (None: the paths suffice)
    events: int = 0

    def __bool__(self) -> bool:
        return bool(self.files or self.folders_gone or self.folders_new or self.full)


class Changes:
    """Thread-safe pending changes plus the debounce clock.

    ``due()`` says how long until a build should start: the quiet period after the last event, but
    never more than ``max_wait_s`` after the first one (a file appended to every 100 ms must not
    postpone the build forever)."""

    def __init__(self, debounce_s: float, max_wait_s: float | None = None):
        self.debounce_s = debounce_s
        self.max_wait_s = max_wait_s if max_wait_s is not None else max(2.0, 10 * debounce_s)
        self.cond = threading.Condition()
        self._batch = Batch()
        self._first = self._last = 0.0

    def _touch(self, was_empty: bool) -> None:
        now = time.monotonic()
        if was_empty:
            self._first = now
        self._last = now
        self._batch.events += 1
        self.cond.notify_all()

    def add_file(self, rel: str) -> None:
        with self.cond:
            was_empty = not self._batch
            self._batch.files.add(rel)
            self._touch(was_empty)

    def add_folder(self, rel: str, gone: bool) -> None:
        with self.cond:
            was_empty = not self._batch
            (self._batch.folders_gone if gone else self._batch.folders_new).add(rel)
            self._touch(was_empty)

    def need_full(self, reason: str) -> None:
        with self.cond:
            was_empty = not self._batch
            self._batch.full = self._batch.full or reason
            self._touch(was_empty)

    @property
    def last_event(self) -> float:
        """time.monotonic() of the last event (0.0: none yet)."""
        return self._last

    def pending(self) -> int:
        """How many paths (files and folders) wait for the next build."""
        with self.cond:
            b = self._batch
            return len(b.files) + len(b.folders_gone) + len(b.folders_new) + (1 if b.full else 0)

    def due(self, now: float | None = None) -> float | None:
        """Seconds until the pending changes should be built (0: now); None when nothing waits.
        Call with ``cond`` held."""
        if not self._batch:
            return None
        now = time.monotonic() if now is None else now
        return max(0.0, min(self._last + self.debounce_s, self._first + self.max_wait_s) - now)

    def take(self) -> Batch:
        """Hand the pending changes to a build. Call with ``cond`` held."""
        batch, self._batch = self._batch, Batch()
        return batch

    def put_back(self, batch: Batch) -> None:
        """A build failed: its changes wait for the next attempt (merged with any newer ones)."""
        with self.cond:
            b = self._batch
            was_empty = not b
            b.files |= batch.files
            b.folders_gone |= batch.folders_gone
            b.folders_new |= batch.folders_new
            b.full = b.full or batch.full
            b.events += batch.events
            if was_empty:
                self._first = time.monotonic()
            self._last = time.monotonic()
            self.cond.notify_all()


class PathFilter:
    """The scan's rules for which paths are indexed, applied to event paths."""

    def __init__(self, root: Path):
        self.root = root
        self.reload()

    def reload(self) -> None:
        self.rules = IgnoreRules.load(self.root)

    def relative(self, path: str) -> str | None:
        """Vault-relative POSIX path of an event path, or None when it is outside the vault."""
        try:
            rel = os.path.relpath(path, self.root)
        except ValueError:
            return None
        if rel == "." or rel.startswith(".." + os.sep) or rel == "..":
            return None
        return rel.replace(os.sep, "/")

    def indexed(self, rel: str, is_dir: bool) -> bool:
        parts = rel.split("/")
        if any(p.startswith(".") or p in ALWAYS_SKIPPED_DIRS for p in parts):
            return False
        if any(self.rules.ignored("/".join(parts[:i]), True) for i in range(1, len(parts))):
            return False
        return not self.rules.ignored(rel, is_dir)

    def unwatched(self, path: bytes | str) -> bool:
        """True for a folder (absolute path, as the observer walks it) the scan never indexes:
        nothing below it needs a watch. The vault root and paths outside it are never skipped."""
        rel = self.relative(os.fsdecode(path))
        return rel is not None and not self.indexed(rel, True)

    def listdir(self, path: str) -> list[os.DirEntry]:
        """``os.scandir`` less the folders ``unwatched`` names: what the polling observer's
        snapshot walks, so a poll does not stat every object in ``.git`` every time."""
        with os.scandir(path) as entries:
            return [e for e in entries if not (_is_dir(e) and self.unwatched(e.path))]


def _is_dir(entry: os.DirEntry) -> bool:
    try:
        return entry.is_dir()
    except OSError:
        return False


class EventHandler(FileSystemEventHandler):
    """watchdog callback: sorts each event into ``Changes`` (runs on watchdog's thread; cheap)."""

    def __init__(self, paths: PathFilter, changes: Changes, rules_changed: Callable[[], None] | None = None,
                 outside: Callable[[], None] | None = None):
        self.paths = paths
        self.changes = changes
        self.rules_changed = rules_changed  # called after the ignore rules were reloaded
        # called when the vault folder itself or the cache folder went (the watcher looks at once
        # whether it still holds them, instead of at its next idle check)
        self.outside = outside

    def on_any_event(self, event: FileSystemEvent) -> None:
        if event.event_type in ("opened", "closed_no_write"):
            return
        if event.event_type == "modified" and event.is_directory:
            return  # a folder's own mtime: the file events inside say what changed
        gone = event.event_type in ("deleted", "moved")
        self._one(os.fsdecode(event.src_path), event.is_directory, gone)
        if event.event_type == "moved" and event.dest_path:
            self._one(os.fsdecode(event.dest_path), event.is_directory, False)

    def _one(self, path: str, is_dir: bool, gone: bool) -> None:
        rel = self.paths.relative(path)
        if rel is None or (gone and rel == CACHE_DIR):
            if self.outside is not None and (gone or rel is not None):
                self.outside()
            return
        if rel == IGNORE_FILE:
            self.paths.reload()
            if self.rules_changed is not None:
                try:
                    self.rules_changed()  # watches follow the new rules before the full scan starts
                except Exception:  # noqa: BLE001 - the full scan below still catches up
                    log.warning("watch: could not move the watches to the new ignore rules", exc_info=True)
            self.changes.need_full(f"{IGNORE_FILE} changed")
            return
        if not self.paths.indexed(rel, is_dir):
            return
        if is_dir:
            self.changes.add_folder(rel, gone)
        else:
            self.changes.add_file(rel)


def expand(root: Path, batch: Batch, cached_under) -> set[str] | None:
    """The files a batch names: its files, the files now inside new folders, and the cached files
    under folders that went. ``cached_under(prefix)`` lists cached paths below a folder. None when
    a full scan is needed instead."""
    if batch.full:
        return None
    paths = set(batch.files)
    for folder in sorted(batch.folders_gone):
        paths.update(cached_under(folder))
    for folder in sorted(batch.folders_new):
        top = root / folder
        for dirpath, dirnames, filenames in os.walk(top):
            dirnames[:] = [d for d in dirnames if not d.startswith(".") and d not in ALWAYS_SKIPPED_DIRS]
            if any(os.path.islink(os.path.join(dirpath, d)) for d in dirnames):
                return None  # a symlinked folder: the full scan knows which ones to follow
            rel_dir = os.path.relpath(dirpath, root).replace(os.sep, "/")
            paths.update(f"{rel_dir}/{name}" for name in filenames)
        paths.update(cached_under(folder))  # a folder replaced by another of the same name
    return paths


# -- watching only what is indexed -------------------------------------------------------------------
# watchdog's recursive inotify emitter puts a watch on every folder below the vault: .git/objects,
# the cache, .obsidian, ignored folders. Each costs one of the user's fs.inotify.max_user_watches
# (shared by every program), for events dropped here anyway. The classes below change only the walk
# that places watches (at start, for a new or moved-in folder, after a queue overflow): folders the
# scan never indexes are pruned from it. watchdog keeps doing everything else (moves, new-folder
# event replay, overflow rebuild). They reach into watchdog's internals, so they are used only when
# those internals are the ones written against (watchdog 7.1.0 and 7.1.1's InotifyWatchGroup); otherwise the
# plain observer watches everything, as before, and the events are filtered as before. They also
# count the folders watchdog could not watch but did not say so (the watch limit): see unwatchable().

def _param_names(func) -> list[str]:
    try:
        return list(inspect.signature(func).parameters)
    except (TypeError, ValueError):
        return []


def _stores(func, *names: str) -> bool:
    code = getattr(func, "__code__", None)
    return code is not None and all(n in code.co_names for n in names)


def pruning_observer_class():
    """watchdog's inotify observer with watches only on folders the scan indexes, or None when the
    installed watchdog is not one this hook knows (not Linux, or other internals)."""
    try:
        from watchdog.observers import inotify
        from watchdog.observers.api import BaseObserver
    except Exception:  # noqa: BLE001 - no inotify here (or a libc watchdog cannot load)
        return None
    group = getattr(inotify, "InotifyWatchGroup", None)
    emitter = getattr(inotify, "InotifyEmitter", None)
    observer = getattr(inotify, "InotifyObserver", None)
    if group is None or emitter is None or observer is None or PLAIN_OBSERVER is not observer:
        return None
    try:
        fields = set(group.__dataclass_fields__)
    except AttributeError:
        return None
    known = (_param_names(getattr(group, "_add_all_callbacks", None)) == ["self", "path"]
             and _param_names(getattr(group, "_add_callback", None)) == ["self", "path"]
             and _param_names(getattr(group, "_move_watches", None)) == ["self", "move_src_path", "move_dst_path"]
             and _param_names(getattr(group, "_remove_callbacks", None)) == ["self", "wds"]
             and isinstance(getattr(group, "is_active", None), property)
             and {"path", "is_recursive", "follow_symlink", "_lock"} <= fields
             # a dict field in 7.1.0, a property over the watch tree in 7.1.1: read-only here either way
             and ("_active_callbacks_by_path" in fields
                  or isinstance(getattr(group, "_active_callbacks_by_path", None), property))
             and callable(getattr(emitter, "get_event_mask_from_filter", None))
             and _stores(emitter.__init__, "_inotify_fd", "_inotify")
             and _stores(BaseObserver.__init__, "_emitter_class", "_emitter_kwargs"))
    return _pruning_classes(group, emitter, observer) if known else None


_CLASSES: dict = {}


def _pruning_classes(group_base, emitter_base, observer_base):
    key = (group_base, emitter_base, observer_base)
    if key in _CLASSES:
        return _CLASSES[key]
    sep = os.sep.encode()

    class PruningWatchGroup(group_base):
        """An ``InotifyWatchGroup`` whose recursive walks leave out the folders ``skip`` names."""

        def __init__(self, *args, skip: Callable[[bytes], bool], **kwargs):
            self._skip = skip
            self.unwatchable = 0  # folders that exist, are readable, and still got no watch
            super().__init__(*args, **kwargs)  # watches the tree (via _add_all_callbacks)

        def _skipped(self, path: bytes) -> bool:
            return path != self.path and self._skip(path)

        def _add_callback(self, path: bytes) -> None:
            super()._add_callback(path)  # a failure below the root is swallowed there, ENOSPC too
            if path not in self._active_callbacks_by_path and os.path.isdir(path) and os.access(path, os.R_OK):
                self.unwatchable += 1  # not gone, not unreadable: the watch limit

        def _add_all_callbacks(self, path: bytes) -> None:
            if self._skipped(path):
                return
            if not (self.is_recursive and os.path.isdir(path)):
                super()._add_all_callbacks(path)
                return
            self._add_callback(path)
            self._watch_below(path, None)

        def _watch_below(self, top: bytes, known: dict | None) -> None:
            """Watch the indexed folders below ``top`` (all of them, or those not in ``known``)."""
            for root, dirnames, _ in os.walk(top, followlinks=self.follow_symlink):
                dirnames[:] = [d for d in dirnames if not self._skip(os.path.join(root, d))]
                for name in dirnames:
                    full = os.path.join(root, name)
                    if not self.follow_symlink and os.path.islink(full):
                        continue
                    if known is None or full not in known:
                        self._add_callback(full)

        def _resync(self, top: bytes) -> None:
            """Match the watches at and below ``top`` to the rules: drop those on folders now
            ignored, add the indexed folders not watched yet. Call with ``_lock`` held."""
            prefix = top + sep
            watched = self._active_callbacks_by_path
            stale = [wd for p, wd in list(watched.items())
                     if (p == top or p.startswith(prefix)) and self._skipped(p)]
            if stale:
                self._remove_callbacks(stale)
            if self._skipped(top) or not os.path.isdir(top):
                return
            if top not in watched:
                self._add_callback(top)
            self._watch_below(top, watched)

        def _move_watches(self, move_src_path: bytes, move_dst_path: bytes) -> bool:
            moved = super()._move_watches(move_src_path, move_dst_path)
            if moved and self.is_recursive:
                # the watches moved with the folder; the rules may say otherwise at its new path
                # (renamed to a dot-name, or out of reach of a `notes/skip/` pattern)
                self._resync(move_dst_path)
            return moved

        def refresh(self) -> None:
            """The ignore rules changed: re-plan every watch of this group."""
            with self._lock:
                if self.is_active and self.is_recursive:
                    self._resync(self.path)

    class PruningEmitter(emitter_base):
        def __init__(self, *args, skip: Callable[[bytes], bool] | None = None, **kwargs):
            super().__init__(*args, **kwargs)
            self._skip = skip

        def on_thread_start(self) -> None:
            if self._skip is None:
                super().on_thread_start()
                return
            self._inotify = PruningWatchGroup(
                self._inotify_fd, os.fsencode(self.watch.path), is_recursive=self.watch.is_recursive,
                event_mask=self.get_event_mask_from_filter(), follow_symlink=self.watch.follow_symlink,
                skip=self._skip)

        def refresh(self) -> None:
            group = self._inotify
            if isinstance(group, PruningWatchGroup):
                group.refresh()

        def unwatchable(self) -> int:
            group = self._inotify
            return group.unwatchable if isinstance(group, PruningWatchGroup) else 0

    class InotifyObserver(observer_base):  # the name is the status's mode: "inotify"
        """``InotifyObserver`` placing no watch in folders ``skip_folders(predicate)`` names."""

        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            self._emitter_class = PruningEmitter

        def skip_folders(self, skip: Callable[[bytes], bool]) -> None:
            """Before ``schedule``: ``skip(path)`` is True for a folder to leave unwatched."""
            self._emitter_kwargs["skip"] = skip

        def refresh(self) -> None:
            """Re-plan the watches after the rules behind ``skip`` changed."""
            for emitter in list(self.emitters):
                if isinstance(emitter, PruningEmitter):
                    emitter.refresh()

        def unwatchable(self) -> int:
            """How many existing, readable folders could not be watched (the OS watch limit):
            watchdog 7.1 skips such a folder below the watched root without a word."""
            return sum(e.unwatchable() for e in list(self.emitters) if isinstance(e, PruningEmitter))

    _CLASSES[key] = InotifyObserver
    return InotifyObserver
