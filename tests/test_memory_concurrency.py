"""Issue 28 item 12: one fact remembered by two long-lived processes at once is one note.

Each process opens the vault, warms its cache (index + a search), then both remember near
duplicates of one fact (different note names, so the create race of the same name does not
save them). The write is slowed in each process so that, without a lock held across
"check for duplicates -> write", both checks finish before either note exists."""
from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

from wikimem.api import init_vault, open_vault

ROOT = Path(__file__).parent.parent

SERVER = r"""
import sys, time
from pathlib import Path
from wikimem.api import open_vault
root, fact, go = sys.argv[1], sys.argv[2], Path(sys.argv[3])
import wikimem.knowledge.memory as memory
v = open_vault(root, embedder="fake")
v.index(wait=60)  # both processes start together: the second waits for the first's commit
v.search("plants", limit=3)  # a warm, long-lived process: cache open, embedder loaded
real = memory.write_page
def slow_write(*args, **kwargs):  # widen the window between the duplicate check and the write
    time.sleep(1.0)
    return real(*args, **kwargs)
memory.write_page = slow_write  # the writer door remember() goes through
print("ready", flush=True)
while not go.exists():
    time.sleep(0.01)
r = v.remember(fact)
print(r.action, r.path, flush=True)
v.close()
"""


def test_two_long_lived_processes_remembering_one_fact_write_one_note(tmp_path):
    root = tmp_path / "v"
    init_vault(root)
    v = open_vault(root, embedder="fake")
    v.index()
    v.close()
    go = tmp_path / "go"
    facts = ["The user waters the plants on Sundays", "The user waters all the plants on Sundays"]
    procs = [subprocess.Popen([sys.executable, "-c", SERVER, str(root), fact, str(go)], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True, cwd=ROOT) for fact in facts]
    for p in procs:
        assert p.stdout.readline().strip() == "ready", p.stderr.read()
    go.touch()
    outs = [(p.wait(120), p.stdout.read().split(), p.stderr.read()) for p in procs]
    assert [o[0] for o in outs] == [0, 0], outs
    assert sorted(o[1][0] for o in outs) == ["duplicate", "written"], outs
    assert len(list((root / "memories").glob("*.md"))) == 1, outs


def test_the_remember_lock_is_reentrant_in_one_process(tmp_path):
    """remember_from_transcript and a nested remember take it again; it must not deadlock."""
    from wikimem.knowledge.memory import remember_lock
    root = tmp_path / "v"
    init_vault(root)
    v = open_vault(root, embedder="fake")
    started = time.monotonic()
    with remember_lock(v.ctx):
        with remember_lock(v.ctx):
            assert v.remember("The user keeps bees").action == "written"
    assert time.monotonic() - started < 30
    v.close()
