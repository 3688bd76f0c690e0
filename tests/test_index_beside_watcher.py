"""Issue 26 item 4: a long `wikimem index` no longer holds the writer lock while the model runs.

Was: `build` held the lock for the whole first embedding, so a watcher's edit waited for all of it
(17 minutes on a real vault) and `--status` said "another wikimem process is updating"."""
import threading

from wikimem.api import open_vault
from wikimem.embed.fake import FakeEmbedder


def test_an_edit_commits_while_index_is_still_embedding(make_vault, monkeypatch):
    root = make_vault({f"notes/n{i}.md": f"# Note {i}\n\nText number {i} about topic {i % 7}.\n" for i in range(40)})
    started, release = threading.Event(), threading.Event()
    real = FakeEmbedder.embed_passages

    def slow(self, texts):
        started.set()
        release.wait(20)  # the model is "busy" until the edit below has been committed
        return real(self, texts)

    monkeypatch.setattr(FakeEmbedder, "embed_passages", slow)
    indexer = open_vault(root, embedder="fake", embed_batch=4)
    result = {}
    thread = threading.Thread(target=lambda: result.update(report=indexer.index()))
    thread.start()
    try:
        assert started.wait(20), "the index never reached the model"
        (root / "notes/n3.md").write_text("# Note 3\n\nplumbrine edited while the index embeds\n")
        editor = open_vault(root, embedder="fake")  # a second writer: its own lock file descriptor
        # the lock is free while the other build embeds: a lock held meanwhile would make this wait
        # out its 60 s and raise LockError (no wall-clock bound, issue 47 item 3)
        editor.index(paths=["notes/n3.md"], embed=False, wait=60.0)
        assert [h.path for h in editor.search("plumbrine", mode="lexical").hits] == ["notes/n3.md"]
    finally:
        release.set()
        thread.join(60)
    report = result["report"]
    assert report.coverage == 1.0 and report.embedded_now > 0
    after = open_vault(root, embedder="fake")
    assert after.status()["stale_files"] == []
    hits = after.search("plumbrine edited while the index embeds", mode="vector").hits
    assert hits and hits[0].path == "notes/n3.md"  # the edit's vectors followed too
