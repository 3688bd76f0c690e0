"""An editor saving a note the way Obsidian does (a temp file renamed over it, every few ms) while
wikimem edits and moves the same note with the compare-and-swap of what it read (issue 35 item 3).

    python benchmarks/bench_save_race.py --seconds 60          # edit and move, 60 s each
    python benchmarks/bench_save_race.py --seconds 5 --json

A save is *lost* when wikimem's write or move replaces or removes it: the editor, before each save,
checks that its previous save is still there (under the note's name, or under the name a move gave
it, or below lines an edit added to it). Reported: saves, wikimem operations done and refused, lost.
tests/test_doors.py runs the same race for a few seconds; this is the long run.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import threading
import time
from pathlib import Path


def _save(path: Path, text: str, n: int) -> None:
    tmp = path.with_name(f".{path.name}.{n}.saving")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)


def race_edits(vault, seconds: float, interval: float = 0.01) -> dict:
    """The editor appends "save N" lines to what it reads; wikimem appends "agent N" lines."""
    path = vault.root / "notes/raced.md"
    stop = threading.Event()
    stats = {"saves": 0, "lost": 0, "edits": 0, "refused": 0}

    def editor():
        last = None
        n = 0
        while not stop.is_set():
            cur = path.read_text(encoding="utf-8")
            if last is not None and not cur.startswith(last):
                stats["lost"] += 1  # something replaced our last save with text that does not hold it
            n += 1
            last = cur + f"save {n}\n"
            _save(path, last, n)
            stats["saves"] += 1
            time.sleep(interval)

    thread = threading.Thread(target=editor)
    thread.start()
    from wikimem.errors import ConflictError
    deadline = time.monotonic() + seconds
    i = 0
    try:
        while time.monotonic() < deadline:
            i += 1
            sha = vault.read_page("notes/raced.md")["sha256"]
            try:
                vault.edit_page("notes/raced.md", "append", expected_sha256=sha, content=f"agent {i}")
                stats["edits"] += 1
            except ConflictError:
                stats["refused"] += 1
    finally:
        stop.set()
        thread.join()
    return stats


def race_moves(vault, seconds: float, interval: float = 0.01) -> dict:
    """The editor saves notes/moving.md; wikimem moves it to a new name again and again. Before each
    save, the editor's previous save must still exist somewhere: under the old name, or moved."""
    folder = vault.root / "notes"
    path = folder / "moving.md"
    stop = threading.Event()
    lock = threading.Lock()
    stats = {"saves": 0, "lost": 0, "moves": 0, "refused": 0}

    def editor():
        n = 0
        last = None
        while not stop.is_set():
            if last is not None and not path.exists():
                with lock:  # a move may be under way: look once it is done
                    texts = {p.read_text(encoding="utf-8") for p in folder.glob("*.md")}
                if last not in texts:
                    stats["lost"] += 1
            n += 1
            last = f"# Moving\n\nsave {n}\n"
            _save(path, last, n)
            stats["saves"] += 1
            time.sleep(interval)

    thread = threading.Thread(target=editor)
    thread.start()
    from wikimem.errors import ConflictError, WikimemError
    deadline = time.monotonic() + seconds
    i = 0
    try:
        while time.monotonic() < deadline:
            i += 1
            try:
                sha = vault.files.read_note("notes/moving.md").sha256
            except (WikimemError, FileNotFoundError):
                time.sleep(interval)
                continue
            with lock:
                try:
                    vault.move_page("notes/moving.md", f"notes/moved {i}.md", expected_sha256=sha)
                    stats["moves"] += 1
                except ConflictError:
                    stats["refused"] += 1
    finally:
        stop.set()
        thread.join()
    return stats


def make_vault(root: Path):
    from wikimem.api import open_vault
    (root / "notes").mkdir(parents=True)
    (root / "SCHEMA.md").write_text("# Schema\n", encoding="utf-8")
    (root / "notes/raced.md").write_text("# Raced\n\n", encoding="utf-8")
    (root / "notes/moving.md").write_text("# Moving\n\nsave 0\n", encoding="utf-8")
    vault = open_vault(root, embedder="none")
    vault.index()
    return vault


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="wm-save-race-") as tmp:
        vault = make_vault(Path(tmp) / "v")
        result = {"seconds": args.seconds, "edit": race_edits(vault, args.seconds),
                  "move": race_moves(vault, args.seconds)}
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        for kind in ("edit", "move"):
            r = result[kind]
            print(f"{kind}: {r['saves']} saves, " + ", ".join(f"{k} {v}" for k, v in r.items() if k != "saves"))
    sys.exit(1 if result["edit"]["lost"] or result["move"]["lost"] else 0)


if __name__ == "__main__":
    main()
