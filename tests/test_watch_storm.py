"""The watcher under an edit storm, across a restart, and after a kill -9 in the middle of a build:
each time, once idle, the cache equals a fresh rebuild of the same files."""
from __future__ import annotations

import json
import os
import random
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from test_watch_support import assert_equal_to_rebuild, settle
from wikimem.api import open_vault

WORDS = ("apple orchard river stone copper lantern quiet harbour amber meadow violet engine north garden "
         "silver fern hollow bridge ember tide cobalt ridge willow path granite bell").split()
FOLDERS = ["a", "b", "c", "a/sub"]


def _note(rng: random.Random, title: str, existing: list[str]) -> str:
    body = " ".join(rng.choice(WORDS) for _ in range(rng.randint(5, 60)))
    link = f" See [[{Path(rng.choice(existing)).stem}]]." if existing and rng.random() < 0.7 else ""
    tag = f" #{rng.choice(WORDS)}" if rng.random() < 0.3 else ""
    head = f"---\ntitle: {title}\n---\n" if rng.random() < 0.5 else ""
    return f"{head}# {title}\n\n{body}.{link}{tag}\n\n## More\n\n{' '.join(rng.choice(WORDS) for _ in range(8))}\n"


class Storm:
    """Seeded random file operations of the kinds editors, sync tools and git produce."""

    def __init__(self, root: Path, seed: int):
        self.root = root
        self.rng = random.Random(seed)
        self.counter = 0

    def notes(self) -> list[str]:
        found = []
        for dirpath, dirnames, filenames in os.walk(self.root):
            dirnames[:] = [d for d in dirnames if d != ".wikimem"]
            rel = os.path.relpath(dirpath, self.root)
            found += [name if rel == "." else f"{rel}/{name}" for name in filenames if name.endswith(".md")]
        return sorted(found)

    def _new_path(self, folder: str | None = None) -> Path:
        self.counter += 1
        folder = folder or self.rng.choice(FOLDERS)
        path = self.root / folder / f"n{self.counter}.md"
        path.parent.mkdir(parents=True, exist_ok=True)
        return path

    def op(self, kind: str | None = None) -> str:
        rng, notes = self.rng, self.notes()
        kind = kind or rng.choices(["create", "edit", "append", "rename", "move_folder", "delete", "atomic_save",
                            "vim_save", "rapid", "burst", "delete_folder", "move_out"],
                           [20, 20, 20, 10, 2, 8, 10, 5, 4, 0, 0.6, 1])[0]
        if kind not in ("create", "burst") and not notes:
            kind = "create"
        if kind == "create":
            path = self._new_path()
            path.write_text(_note(rng, path.stem, notes))
        elif kind == "edit":
            path = self.root / rng.choice(notes)
            path.write_text(_note(rng, path.stem, notes))
        elif kind == "append":
            with open(self.root / rng.choice(notes), "a") as fh:
                fh.write(f"\n{' '.join(rng.choice(WORDS) for _ in range(6))}\n")
        elif kind == "rename":
            src = self.root / rng.choice(notes)
            dst = self._new_path()
            os.rename(src, dst)
        elif kind == "move_folder":
            folders = [p for p in self.root.iterdir() if p.is_dir() and not p.name.startswith(".")]
            if folders:
                src = rng.choice(folders)
                self.counter += 1
                os.rename(src, self.root / f"moved{self.counter}")
        elif kind == "delete":
            os.remove(self.root / rng.choice(notes))
        elif kind == "atomic_save":
            path = self.root / rng.choice(notes)
            tmp = path.with_name(f".{path.name}.tmp")
            tmp.write_text(_note(rng, path.stem, notes))
            os.replace(tmp, path)
        elif kind == "vim_save":
            path = self.root / rng.choice(notes)
            backup = path.with_name(path.name + "~")
            os.rename(path, backup)
            path.write_text(_note(rng, path.stem, notes))
            os.remove(backup)
        elif kind == "rapid":
            path = self.root / rng.choice(notes)
            for i in range(10):
                path.write_text(_note(rng, path.stem, notes) + f"\nversion {i}\n")
        elif kind == "burst":  # a checkout: 200 files at once
            self.counter += 1
            folder = f"checkout{self.counter}"
            for _ in range(200):
                self._new_path(folder).write_text(_note(rng, "burst", notes[:20]))
        elif kind == "delete_folder":
            folders = [p for p in self.root.iterdir() if p.is_dir() and not p.name.startswith(".")]
            if folders:
                shutil.rmtree(rng.choice(folders))
        elif kind == "move_out":  # out of the vault: one event for the folder, none for its files
            folders = [p for p in self.root.rglob("*") if p.is_dir() and ".wikimem" not in p.parts]
            if folders:
                self.counter += 1
                os.rename(rng.choice(folders), self.root.parent / f"outside{self.counter}")
        return kind


@pytest.fixture
def seeded(tmp_path):
    root = tmp_path / "vault"
    storm = Storm(root, seed=11)
    root.mkdir()
    for _ in range(30):
        path = storm._new_path()
        path.write_text(_note(storm.rng, path.stem, storm.notes()))
    return root, storm


def test_edit_storm_converges_to_a_fresh_rebuild(seeded, tmp_path):
    root, storm = seeded
    v = open_vault(root, embedder="fake")
    with v.watch() as w:  # the default 300 ms debounce
        assert w.wait_idle(60)
        kinds = []
        for i in range(300):
            kinds.append(storm.op("burst" if i == 150 else None))
            time.sleep(storm.rng.choice([0, 0, 0, 0.01, 0.05]))
        settle(w, timeout=60)
        info = w.status()
        assert info["last_error"] is None and info["backlog"] == 0
        assert info["builds"] >= 3  # coalesced, but it followed along
    assert {"burst", "rename", "move_folder", "move_out", "atomic_save", "rapid", "delete"} <= set(kinds)
    assert_equal_to_rebuild(v, tmp_path)


def test_edit_storm_with_interleaved_ops_and_pauses(seeded, tmp_path):
    """Same, with pauses longer than the debounce between some operations, so builds run while
    the storm goes on (a build's reads race the next edits)."""
    root, storm = seeded
    storm.rng.seed(12)
    v = open_vault(root, embedder="fake")
    with v.watch(debounce_ms=30) as w:
        assert w.wait_idle(60)
        for i in range(150):
            storm.op()
            if storm.rng.random() < 0.2:
                time.sleep(storm.rng.uniform(0.02, 0.12))
        settle(w, timeout=60)
    assert_equal_to_rebuild(v, tmp_path)


def test_changes_made_while_stopped_are_reconciled_at_start(seeded, tmp_path):
    root, storm = seeded
    v = open_vault(root, embedder="fake")
    with v.watch(debounce_ms=50) as w:
        assert w.wait_idle(60)
    storm.rng.seed(13)
    for _ in range(40):
        storm.op()
    v2 = open_vault(root, embedder="fake")
    with v2.watch(debounce_ms=50) as w:
        assert w.wait_idle(60)
        assert w.status()["last_build"]["full"]
        assert_equal_to_rebuild(v2, tmp_path)


def _watch_json(root: Path) -> dict:
    try:
        return json.loads((root / ".wikimem/watch.json").read_text())
    except (OSError, ValueError):
        return {}


def test_kill_9_mid_build_then_the_next_start_converges(seeded, tmp_path):
    root, storm = seeded
    env = {**os.environ, "WIKIMEM_EMBEDDER": "fake", "PYTHONPATH": str(Path(__file__).parent.parent)}
    caught = 0
    for attempt in range(3):
        proc = subprocess.Popen([sys.executable, "-m", "wikimem.cli", "watch", str(root), "--debounce-ms", "20"],
                                env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            deadline = time.monotonic() + 60
            while _watch_json(root).get("state") != "idle" or _watch_json(root).get("pid") != proc.pid:
                assert time.monotonic() < deadline and proc.poll() is None, "watcher did not start"
                time.sleep(0.02)
            builds = _watch_json(root).get("builds", 0)
            storm.counter += 1
            for i in range(300):  # enough work that the build takes a while
                storm._new_path(f"crash{attempt}").write_text(_note(storm.rng, f"c{i}", []) * 3)
            deadline = time.monotonic() + 20
            while time.monotonic() < deadline:
                info = _watch_json(root)
                if info.get("state") in ("building", "embedding") and info.get("builds", 0) >= builds:
                    break
                time.sleep(0.002)
            if info.get("state") == "building":
                caught += 1
        finally:
            proc.send_signal(signal.SIGKILL)
            proc.wait()
        for _ in range(10):  # and the vault moves on while nobody watches
            storm.op()
        if caught:
            break
    assert caught >= 1, "never managed to kill the watcher inside a build"
    v = open_vault(root, embedder="fake")
    with v.watch(debounce_ms=50) as w:  # the dead watcher's lock is free
        assert w.wait_idle(60)
        assert_equal_to_rebuild(v, tmp_path)
