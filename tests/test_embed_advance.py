"""A background embedder's kept state follows this process's edits by their id changes
(embedding.advance) instead of re-reading every wanted id; it must end where a full sync would."""
from __future__ import annotations

import pytest

import random
import shutil
import tempfile
from pathlib import Path

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from wikimem.api import open_vault
from wikimem.index import background, embedding
from wikimem.stores.vectors import HELD_BIT

from conftest import write_vault

WORDS = "alpha beta gamma delta fusion weights graph index vector lexical tomato river".split()


def _page(rng: random.Random, title: str) -> str:
    """A note with one to three sections of list items and prose (chunks and passages)."""
    parts = [f"# {title}\n"]
    for s in range(rng.randint(1, 3)):
        parts.append(f"\n## Part {s}\n\n" + " ".join(rng.choice(WORDS) for _ in range(rng.randint(3, 12))) + ".\n")
        parts.extend(f"- {' '.join(rng.choice(WORDS) for _ in range(4))}\n" for _ in range(rng.randint(0, 3)))
    return "".join(parts)


def _check(v) -> None:
    """The kept state is what a sync from the manifest would give: the ids wanted, the index
    holding exactly those not missing, the missing ones not in the vector cache, the queue."""
    cache = v.cache
    entry = cache.runtime.kept_entry("pending")
    assert entry is not None
    (manifest, generation, _sig, _key), state = entry
    assert (manifest, generation) == (cache.meta().get("created"), cache.meta().get("generation"))
    want = cache.manifest.wanted_ids()
    assert state.want.tolist() == want.tolist()
    assert state.held_wanted == int(np.count_nonzero(want & HELD_BIT))
    held = set(state.index.ids().tolist())
    assert len(held) == state.index.ntotal  # nothing indexed twice
    assert held.isdisjoint(state.missing) and held | set(state.missing) == set(want.tolist())
    identity = cache.embedder().identity
    hashes = cache.manifest.embed_hashes(state.missing)
    assert not cache.vector_store.cached(identity.key, identity.dim, sorted(set(hashes.values())))  # a sync would have taken them
    if state.pending is not None:
        assert sorted(v for ids in state.pending.values() for v in ids) == sorted(state.missing)
        assert set(state.pending) <= {h for hs in state.by_path.values() for h in hs}  # each under its page


@pytest.mark.local_store
@settings(max_examples=12, deadline=None, suppress_health_check=list(HealthCheck))
@given(seed=st.integers(0, 10_000), steps=st.integers(3, 9))
def test_edits_followed_by_id_changes_end_where_a_full_sync_does(seed, steps):
    rng = random.Random(seed)
    with tempfile.TemporaryDirectory() as tmp:
        root = write_vault(Path(tmp) / "v", {f"notes/n{i}.md": _page(rng, f"N{i}") for i in range(6)})
        v = open_vault(root, embedder="fake")
        v.index(embed=False)
        v.embed_pending(max_seconds=0, batch=3)  # a backlog stays behind
        synced = []
        real = background.sync_vectors
        background.sync_vectors = lambda *a, **k: synced.append(1) or real(*a, **k)
        try:
            texts: dict[str, str] = {}  # earlier versions: an edit back to one finds its vectors cached
            for _ in range(steps):
                edited = []
                for _ in range(rng.randint(1, 3)):
                    rel = f"notes/n{rng.randint(0, 8)}.md"
                    path = root / rel
                    action = rng.random()
                    if action < 0.15 and path.exists():
                        path.unlink()
                    elif action < 0.3 and rel in texts:
                        path.write_text(texts[rel], encoding="utf-8")
                    else:
                        if path.exists():
                            texts[rel] = path.read_text(encoding="utf-8")
                        path.write_text(_page(rng, rng.choice(["N", "Renamed", f"T{rng.randint(0, 3)}"])),
                                        encoding="utf-8")
                    edited.append(rel)
                v.index(paths=edited, embed=False)
                if rng.random() < 0.7:  # sometimes two edits pile up before the embedder runs
                    v.embed_pending(max_seconds=0 if rng.random() < 0.6 else None, batch=2, first=edited)
                    _check(v)
            v.embed_pending()
            _check(v)
        finally:
            background.sync_vectors = real
        assert len(synced) <= 1  # every later call advanced the kept state (the first may sync)
        ours = sorted(v.cache.vectors(v.cache.embedder().identity.dim).ids().tolist())
        copy = Path(tmp) / "fresh"
        shutil.copytree(root, copy, ignore=shutil.ignore_patterns(".wikimem"))
        fresh = open_vault(copy, embedder="fake")
        fresh.index()
        assert ours == sorted(fresh.cache.vectors(fresh.cache.embedder().identity.dim).ids().tolist())
        for q in ("fusion weights", "tomato river", "graph"):
            assert [(h.chunk_id, round(h.score, 6)) for h in v.search(q, limit=5)] == \
                [(h.chunk_id, round(h.score, 6)) for h in fresh.search(q, limit=5)]
        v.close()
        fresh.close()


def test_a_build_elsewhere_breaks_the_chain_and_the_state_is_derived_afresh(make_vault):
    """Another process's build leaves a gap in this process's record of id changes: the kept state
    is not advanced across it (a full sync runs), and the result is still complete."""
    root = make_vault({f"notes/n{i}.md": f"# N{i}\n\nword{i} text.\n" for i in range(5)})
    v = open_vault(root, embedder="fake")
    v.index()
    v.embed_pending()
    (root / "notes/n1.md").write_text("# N1\n\nchanged here\n")
    v.index(paths=["notes/n1.md"], embed=False)
    other = open_vault(root, embedder="fake")
    (root / "notes/n2.md").write_text("# N2\n\nchanged elsewhere\n")
    other.index(paths=["notes/n2.md"], embed=False)
    other.close()
    (manifest, was, _sig, _key), _state = v.cache.runtime.kept_entry("pending")
    assert v.cache.runtime.ids_changed(manifest, was, v.cache.meta()["generation"]) is None
    report = v.embed_pending()
    assert report.coverage == 1.0
    _check(v)


def test_a_build_that_rewrites_every_passage_records_no_id_change(make_vault):
    """A rebuild (or a changed passage setting) rewrites rows of pages it did not parse: the
    record is cleared, so no chain crosses it."""
    root = make_vault({f"notes/n{i}.md": f"# N{i}\n\nword{i} text.\n" for i in range(3)})
    v = open_vault(root, embedder="fake")
    v.index()
    (root / "notes/n1.md").write_text("# N1\n\nchanged\n")
    v.index(paths=["notes/n1.md"], embed=False)
    made, g = v.cache.meta()["created"], v.cache.meta()["generation"]
    assert v.cache.runtime.ids_changed(made, g - 1, g) is not None
    v.index(rebuild=True, embed=False)
    assert v.cache.runtime.ids_changed(made, g - 1, g) is None  # forgotten: the new manifest counts afresh
