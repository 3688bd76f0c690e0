"""Rebuild equivalence, corrupt caches, interrupted builds and the writer lock."""
import os
import shutil
import signal
import subprocess
import sys
import threading
import time

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from wikimem.api import open_vault
from wikimem.errors import LockError

from conftest import write_vault

QUERIES = ["alpha letter", "radiation", "second", "omega words", "links"]


def _results(vault):
    out = []
    for q in QUERIES:
        for h in vault.search(q, limit=5, per_page=2).hits:
            out.append((q, h.chunk_id, round(h.score, 6)))
    return out


def _edges(vault):
    return vault.cache.db.execute("SELECT src, dst, type, weight FROM edges ORDER BY src, dst, type").fetchall()


def _fresh(root, tmp_path, name="fresh"):
    copy = tmp_path / name
    shutil.copytree(root, copy, ignore=shutil.ignore_patterns(".wikimem"))
    v = open_vault(copy, embedder="fake")
    v.index()
    return v


def _fresh_results(root, tmp_path, name="fresh"):
    # the vault folder name is part of the URI only; compare ids, order and scores
    return _results(_fresh(root, tmp_path, name))


BASE = {
    "a/Alpha.md": "# Alpha\n\nAlpha is a letter. [[Beta]] links here.\n",
    "a/Beta.md": "---\ntags: [second]\n---\n# Beta\n\nBeta is the second letter. [[Alpha]]\n",
    "b/Gamma.md": "# Gamma\n\nGamma radiation and more words.\n\n## Part\n\nOmega words live here.\n",
    "raw/transcripts/Chat.md": "# Chat\n\n**Ann**: Alpha is great. Radiation is scary. Omega words too. ^T1\n\n"
                               "**Bob**: The second letter links [[Beta]]. ^T2\n",
}

EDIT = st.one_of(
    st.tuples(st.just("edit"), st.sampled_from(["a/Alpha.md", "a/Beta.md", "b/Gamma.md", "c/New.md",
                                                "raw/transcripts/Chat.md"]),
              st.sampled_from(["omega words", "radiation alpha", "links [[Gamma]]", "second letter",
                               "**Cy**: Omega words. Second letter! Radiation alpha.",
                               "[[New]] and [[Moved]]", "---\naliases: [Alias]\n---\n[[Alias]]"])),
    st.tuples(st.just("alias"), st.sampled_from(["a/Alpha.md", "b/Gamma.md"]), st.sampled_from(["Al", "Moved", "Zed"])),
    st.tuples(st.just("delete"), st.sampled_from(["a/Alpha.md", "a/Beta.md", "b/Gamma.md", "c/New.md",
                                                  "raw/transcripts/Chat.md"]), st.just("")),
    st.tuples(st.just("rename"), st.sampled_from(["a/Alpha.md", "a/Beta.md", "b/Gamma.md"]),
              st.sampled_from(["c/Moved.md", "a/Renamed.md"])),
)


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                               HealthCheck.function_scoped_fixture])
@given(st.lists(st.lists(EDIT, min_size=1, max_size=3), min_size=1, max_size=3), st.booleans())
def test_incremental_equals_rebuild(make_vault, tmp_path_factory, batches, by_path):
    """Full incremental builds, or builds told exactly which paths changed (as the watcher and the
    writer do, lexical first and vectors behind), end equal to a fresh build."""
    tmp = tmp_path_factory.mktemp("eq")
    root = write_vault(tmp / "vault", BASE)
    vault = open_vault(root, embedder="fake")
    vault.index()
    for batch in batches:
        touched = set()
        for op, rel, arg in batch:
            touched.update({rel, arg} if op == "rename" else {rel})
            path = root / rel
            if op == "edit":
                path.parent.mkdir(parents=True, exist_ok=True)
                old = path.read_text() if path.exists() else f"# {path.stem}\n"
                path.write_text(old + f"\n{arg} {len(old)}\n")
            elif op == "alias" and path.exists():
                body = path.read_text().split("---\n")[-1]
                path.write_text(f"---\naliases: [{arg}]\n---\n{body}[[Al]] [[Zed]]\n")
            elif op == "delete" and path.exists():
                path.unlink()
            elif op == "rename" and path.exists():
                (root / arg).parent.mkdir(parents=True, exist_ok=True)
                path.rename(root / arg)
        time.sleep(0.002)
        if by_path:
            vault.index(paths=sorted(touched), embed=False)
            vault.embed_pending(first=sorted(touched))
        else:
            vault.index()
    fresh = _fresh(root, tmp)
    assert _results(vault) == _results(fresh)
    assert _edges(vault) == _edges(fresh)


@pytest.fixture
def built(make_vault, tmp_path):
    root = make_vault(BASE)
    vault = open_vault(root, embedder="fake")
    vault.index()
    return vault, _results(vault)


def _damage(path, how):
    """Break a cache file: cut it, overwrite its start, zero a range in its middle, or flip bytes
    in its header; the last two keep its size and mtime (only a checksum or a full read finds them)."""
    st = path.stat()
    size = st.st_size
    with open(path, "r+b") as fh:
        if how == "truncate":
            fh.truncate(max(0, size // 3))
        elif how == "garbage":
            fh.write(os.urandom(min(64, max(1, size))))
        elif how == "zero_middle":
            fh.seek(size // 3)
            fh.write(b"\0" * max(1, size // 3))
        elif how == "flip_header":
            head = bytearray(fh.read(100))
            for i in range(16, len(head), 7):
                head[i] ^= 0xFF
            fh.seek(0)
            fh.write(bytes(head))
    if how in ("zero_middle", "flip_header"):
        os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))


def _cache_files(root):
    cache = root / ".wikimem"
    return sorted(p.relative_to(cache).as_posix() for p in cache.rglob("*")
                  if p.is_file() and not p.name.endswith(("-wal", "-shm")) and p.name not in ("lock", "CURRENT"))


@pytest.mark.parametrize("how", ["truncate", "garbage", "zero_middle", "flip_header"])
def test_every_damaged_cache_file_is_detected_and_rebuilt(built, how):
    vault, expected = built
    root = vault.root
    vault.close()
    for rel in _cache_files(root):
        fresh = open_vault(root, embedder="fake")
        fresh.index()
        fresh.close()
        target = root / ".wikimem" / rel
        if not target.exists() or target.stat().st_size == 0:
            continue
        _damage(target, how)
        again = open_vault(root, embedder="fake")
        result = again.search("radiation", limit=5, per_page=2)
        assert result.hits, f"no results after damaging {rel}"
        report = again.index()  # detects what a search could not, and repairs or rebuilds
        assert _results(again) == expected, f"results differ after damaging {rel} ({how})"
        if rel.startswith("manifest") or rel.endswith(".faiss"):  # the first command that noticed said so
            assert result.notices or result.degraded or report.notices, (rel, how)
        again.close()


@pytest.mark.parametrize("table", ["chunks", "lex", "edges", "files", "meta"])
def test_a_dropped_table_is_detected_and_rebuilt(built, table):
    vault, expected = built
    vault.cache.db.execute(f"DROP TABLE {table}")
    vault.close()
    again = open_vault(vault.root, embedder="fake")
    report = again.index()
    assert report.notices, "the damage went unreported"
    assert _results(again) == expected


def test_version_mismatch_rebuilds(built):
    vault, expected = built
    vault.cache.set_meta(schema_version=-1)
    vault.close()
    again = open_vault(vault.root, embedder="fake")
    report = again.index()
    assert any("schema" in n for n in report.notices)
    assert _results(again) == expected


def test_analyzer_change_rebuilds(built):
    """Stored lexical terms depend on the analyzer: a cache written by another one is not trusted."""
    vault, expected = built
    vault.cache.set_meta(analyzer="exact-forms-0")
    vault.close()
    again = open_vault(vault.root, embedder="fake")
    report = again.index()
    assert any("analyzer" in n for n in report.notices)
    assert _results(again) == expected


@pytest.mark.local_store
def test_failure_midway_leaves_a_repairable_cache(built, monkeypatch):
    vault, expected = built
    (vault.root / "a/Alpha.md").write_text("# Alpha\n\nAlpha is a letter, edited. [[Beta]]\n")
    from wikimem.index import build as build_mod

    def boom(*args, **kwargs):
        raise RuntimeError("power cut")
    monkeypatch.setattr(build_mod, "sync_vectors", boom)
    with pytest.raises(RuntimeError):
        vault.index()
    monkeypatch.undo()
    again = open_vault(vault.root, embedder="fake")
    assert again.status()["state"].startswith("interrupted")
    report = again.index()
    assert any("interrupted" in n for n in report.notices)
    assert _results(again) == _fresh_results(vault.root, vault.root.parent, "fresh2")


def test_kill_9_during_build_is_repaired(make_vault, tmp_path):
    files = {f"n/Note {i}.md": f"# Note {i}\n\n" + " ".join(f"word{j} alpha radiation" for j in range(i % 40)) +
             f" [[Note {(i * 7) % 600}]]\n" for i in range(600)}
    root = make_vault(files)
    code = ("import sys; from wikimem.api import open_vault;"
            "open_vault(sys.argv[1], embedder='fake').index()")
    start = time.perf_counter()
    subprocess.run([sys.executable, "-c", code, str(root)], check=True)
    took = time.perf_counter() - start  # a full build, interpreter start-up included
    shutil.rmtree(root / ".wikimem")
    kills = 0
    for fraction in (0.3, 0.45, 0.6, 0.75, 0.9, 0.5, 0.7, 0.2, 0.4, 0.6):
        if kills >= 3:
            break
        started = time.perf_counter()
        proc = subprocess.Popen([sys.executable, "-c", code, str(root)])
        time.sleep(took * fraction)
        if proc.poll() is None:  # still building: kill it mid-flight
            proc.send_signal(signal.SIGKILL)
            kills += 1
        else:  # the machine got faster than when the build was timed: aim by this run from now on
            took = min(took, time.perf_counter() - started)
        proc.wait()
        vault = open_vault(root, embedder="fake")
        vault.index()
        assert _results(vault) == _fresh_results(root, tmp_path, f"fresh{fraction}")
        vault.close()
        (root / "n/Note 1.md").write_text(f"# Note 1\n\nchanged {fraction}\n")
        shutil.rmtree(root / ".wikimem")  # next round starts a first build again (the longest)
    assert kills >= 2, "the builds finished before they could be killed; the test proved nothing"


_HOLD_LOCK = """
import fcntl, os, sys, time
fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT)
fcntl.flock(fd, fcntl.LOCK_EX)
os.ftruncate(fd, 0); os.pwrite(fd, str(os.getpid()).encode(), 0)
print("held", flush=True)
time.sleep(30)
"""


@pytest.mark.local_store
def test_live_lock_fails_fast_and_stale_lock_is_taken_over(built):
    vault, _ = built
    lock = vault.root / ".wikimem" / "lock"
    holder = subprocess.Popen([sys.executable, "-c", _HOLD_LOCK, str(lock)], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        with pytest.raises(LockError, match=f"pid {holder.pid}"):
            vault.index()
        assert vault.search("radiation").hits  # readers never block on the writer
    finally:
        holder.kill()
        holder.wait()
    # the holder died without cleaning up: its pid is still in the file, but the kernel released
    # the lock, so the next writer goes ahead (and a reused pid could never keep the vault locked)
    assert lock.read_text().strip() == str(holder.pid)
    assert vault.index().pages == len(BASE)
    assert vault.cache.lock_holder() is None


_RACE = r"""
import fcntl, json, os, sys, time
from wikimem.api import open_vault
vault = open_vault(sys.argv[1], embedder="none")
log = sys.argv[2]
start = float(sys.argv[3])
while time.time() < start:
    time.sleep(0.001)
try:
    with vault.cache.writer_lock(wait=20):
        with open(log, "a") as fh:
            fh.write(f"in {os.getpid()} {time.monotonic()}\n")
        time.sleep(0.05)
        with open(log, "a") as fh:
            fh.write(f"out {os.getpid()} {time.monotonic()}\n")
except Exception as exc:
    print(type(exc).__name__, exc)
"""


@pytest.mark.parametrize("stale", [False, True])
def test_lock_race_never_lets_two_writers_in(make_vault, tmp_path, stale):
    """Several processes started together: at any moment at most one holds the writer lock."""
    root = make_vault({"a.md": "# A\n"})
    (root / ".wikimem").mkdir()
    if stale:
        (root / ".wikimem" / "lock").write_text("999999")  # a dead writer's pid
    log = tmp_path / "lock.log"
    start = time.time() + 1.0
    procs = [subprocess.Popen([sys.executable, "-c", _RACE, str(root), str(log), str(start)]) for _ in range(4)]
    for p in procs:
        p.wait(timeout=60)
    events = log.read_text().split("\n")
    inside = 0
    entered = 0
    for line in filter(None, events):
        kind = line.split()[0]
        inside += 1 if kind == "in" else -1
        entered += kind == "in"
        assert inside <= 1, "two writers held the lock at once"
    assert entered == 4


def test_concurrent_builds_do_not_corrupt(built):
    vault, expected = built
    errors = []

    def run():
        try:
            open_vault(vault.root, embedder="fake").index(rebuild=True)
        except LockError as exc:
            errors.append(exc)
    threads = [threading.Thread(target=run) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(errors) <= 2
    assert _results(open_vault(vault.root, embedder="fake")) == expected
