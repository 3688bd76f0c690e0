"""Per-page results that depend only on a note's bytes (its word count, the secrets in it, the
names it mentions for a given set of page names), kept between runs in ``.wikimem/lint-pages.json``
keyed by the file's sha256. A warm lint then does not re-scan 40 MB of prose it has already read;
the file is derived data (deleting it only costs time) and is pruned to the notes that exist."""
from __future__ import annotations

import json
import logging
import os
from pathlib import Path
from typing import Any, Callable, Iterable

log = logging.getLogger(__name__)
MEMO_FILE = "lint-pages.json"
VERSION = 1  # bump when a memoised computation changes


class PageMemo:
    def __init__(self, folder: Path, writable: bool):
        self.path = Path(folder) / MEMO_FILE
        self.writable = writable
        self.dirty = False
        self.entries: dict[str, dict[str, Any]] = {}
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
            if isinstance(data, dict) and data.get("version") == VERSION and isinstance(data.get("pages"), dict):
                self.entries = data["pages"]
        except (OSError, ValueError):
            pass

    def get(self, sha: str, key: str, compute: Callable[[], Any], family: str | None = None) -> Any:
        """The memoised value of ``key`` for the note with this hash, computed once. ``family``:
        keys sharing this prefix are alternatives (one per name set); the others are dropped."""
        if not sha:
            return compute()
        entry = self.entries.get(sha)
        if not isinstance(entry, dict):
            entry = self.entries[sha] = {}
        if key in entry:
            return entry[key]
        if family:
            for old in [k for k in entry if k.startswith(family) and k != key]:
                del entry[old]
        value = entry[key] = compute()
        self.dirty = True
        return value

    def save(self, live: Iterable[str]) -> None:
        """Write (when something was computed), keeping only the hashes of notes that exist."""
        live = set(live)
        stale = [sha for sha in self.entries if sha not in live]
        if not (self.dirty or stale) or not self.writable:
            return
        for sha in stale:
            del self.entries[sha]
        tmp = self.path.with_name(f"{self.path.name}.{os.getpid()}.tmp")
        try:
            tmp.write_text(json.dumps({"version": VERSION, "pages": self.entries}, separators=(",", ":"),
                                      ensure_ascii=False), encoding="utf-8")
            os.replace(tmp, self.path)
        except OSError as exc:
            log.warning("%s not written: %s", self.path.name, exc)
        self.dirty = False
