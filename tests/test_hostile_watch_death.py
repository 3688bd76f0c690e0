"""Hostile pass on the watching role in ``serve`` (issue 56): the watcher's worker thread dies of
an error no one expected while the process lives on. It held the vault's watch lock, so no standby
anywhere could take the role over and the vault went unwatched for good (edits on disk never
became searchable). Now the serving process lets go of the lock and stands by itself: the role is
taken again (here or by another serve) and the edits are indexed."""
from __future__ import annotations

import pytest

from test_watch_support import until
from wikimem.serve.app import start_hosts
from wikimem.watch import watcher as watcher_mod


def _found(host, word: str) -> list[str]:
    try:
        return [h.path for h in host.vault.search(word, mode="lexical").hits]
    except Exception:  # noqa: BLE001 - the cache may be mid-build
        return []


def test_a_watcher_that_died_of_an_error_in_serve_is_started_again(make_vault, monkeypatch):
    root = make_vault({"a.md": "# A\n\nalpha\n"})
    real = watcher_mod.expand
    calls = {"n": 0}

    def once_broken(*args, **kwargs):
        calls["n"] += 1
        if calls["n"] == 1:
            raise ValueError("something no one expected")
        return real(*args, **kwargs)
    hosts = start_hosts([("v", root)], watch=True, embedder="none")
    host = hosts["v"]
    try:
        assert until(lambda: _found(host, "alpha") == ["a.md"], timeout=60)
        first = host.watcher
        assert first is not None and first.running
        monkeypatch.setattr(watcher_mod, "expand", once_broken)  # the next batch kills the worker
        (root / "b.md").write_text("# B\n\nbetaword\n")
        assert until(lambda: not first.running, timeout=60), first.status()
        (root / "c.md").write_text("# C\n\ngammaword\n")  # made while no worker watched
        assert until(lambda: _found(host, "betaword") == ["b.md"] and _found(host, "gammaword") == ["c.md"],
                     timeout=90), (host.health(), first.status())
        health = host.health()["watcher"]
        assert health["here"] is True and health["alive"] is True, health
        assert host.watcher is not first
    finally:
        for h in hosts.values():
            h.stop()
