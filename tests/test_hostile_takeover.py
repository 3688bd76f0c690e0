"""Hostile pass on the watching role on PostgreSQL (issue 56): the watching ``serve`` is killed
with ``kill -9`` in the middle of a build; edits land on disk and through the other server's API
while no one watches; the standby takes over. Nothing is lost (every file as written) and every
edit is searchable afterwards; the build the dead process left half done leaves nothing behind
that a later build or search trips on."""
from __future__ import annotations

import os
import signal
import subprocess

import httpx
import psycopg
import pytest

from serve_helpers import found_paths, free_port, serve_child, stop_servers, up_or_log, vault_health
from test_watch_support import until

CEILING_S = 120.0  # measured ~5-10 s; two loaded cores vary


@pytest.mark.slow
def test_kill_9_mid_build_then_the_standby_takes_over_with_nothing_lost(tmp_path, pg_database):
    root = tmp_path / "served"
    (root / "notes").mkdir(parents=True)
    for i in range(20):
        (root / "notes" / f"seed{i}.md").write_text(f"# Seed {i}\n\nseedword{i} grows here.\n", encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if not k.startswith("WIKIMEM_")}
    env.update(WIKIMEM_STORE="postgres", WIKIMEM_DATABASE_URL=pg_database, WIKIMEM_VAULT_ID="hostile-takeover",
               WIKIMEM_EMBEDDER="none", WIKIMEM_TOKENS=str(tmp_path / "tokens.json"))
    ports = [free_port(), free_port()]
    urls = [f"http://127.0.0.1:{p}" for p in ports]
    logs = [tmp_path / f"serve{i}.log" for i in range(2)]
    procs: list[subprocess.Popen] = []
    name = root.name
    try:
        for port, url, log in zip(ports, urls, logs):
            procs.append(serve_child(root, port, env, log))
            up_or_log(url, log)
        assert until(lambda: vault_health(urls[0]).get("watcher", {}).get("state") == "idle", timeout=CEILING_S)
        assert vault_health(urls[1]).get("watcher", {}).get("standby") is True
        # a burst of new notes: the watcher builds them; it is killed while it does
        for i in range(400):
            (root / "notes" / f"burst{i}.md").write_text(f"# Burst {i}\n\nburstword{i} " + "filler " * 200 + "\n",
                                                         encoding="utf-8")
        saw = until(lambda: vault_health(urls[0]).get("watcher", {}).get("state") == "building", timeout=30, every=0.02)
        procs[0].send_signal(signal.SIGKILL)
        procs[0].wait(30)
        assert saw, "the watcher was never seen building: the kill did not land mid-build"
        # while no one watches: an edit on disk, a new note on disk, and a write through the standby's API
        (root / "notes" / "seed3.md").write_text("# Seed 3\n\nnow a kiwimarrow.\n", encoding="utf-8")
        (root / "notes" / "gap.md").write_text("# Gap\n\ngapword made while no one watched.\n", encoding="utf-8")
        r = httpx.post(f"{urls[1]}/v1/vaults/{name}/write", timeout=60,
                       json={"path": "notes/api.md", "content": "# Api\n\napiword written through the standby.\n"})
        assert r.status_code == 200, r.text
        for word, path in (("kiwimarrow", "notes/seed3.md"), ("gapword", "notes/gap.md"),
                           ("apiword", "notes/api.md"), ("burstword399", "notes/burst399.md"),
                           ("burstword0", "notes/burst0.md"), ("seedword7", "notes/seed7.md")):
            assert until(lambda: found_paths(urls[1], name, word) == [path], timeout=CEILING_S), \
                (word, saw, vault_health(urls[1]).get("watcher", {}), logs[1].read_text()[-3000:])
        # the standby tries the lock every standby.EVERY_S: the searches above can all be answered (the API
        # write's update indexed what changed) before its next try after the kill
        assert until(lambda: vault_health(urls[1]).get("watcher", {}).get("here") is True, timeout=CEILING_S), \
            vault_health(urls[1]).get("watcher", {})
        assert (root / "notes" / "api.md").read_text(encoding="utf-8") == \
            "# Api\n\napiword written through the standby.\n"
        assert (root / "notes" / "seed3.md").read_text(encoding="utf-8") == "# Seed 3\n\nnow a kiwimarrow.\n"
        assert len(list((root / "notes").glob("burst*.md"))) == 400
        status = httpx.get(f"{urls[1]}/v1/vaults/{name}/stats", timeout=60).json()
        assert status["pages"] == 423 and status["pages_with_chunks"] == 423, status  # 20 + 400 + gap + api + log.md
        with psycopg.connect(pg_database) as db:  # nothing half-made is left beside the live schema
            leftovers = [r[0] for r in db.execute("SELECT nspname FROM pg_namespace WHERE nspname LIKE 'wm\\_%%\\_next\\_%%'")]
        assert leftovers == []
    finally:
        stop_servers(procs)
