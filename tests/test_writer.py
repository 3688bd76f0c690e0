"""The one writer path: write_page, append_log, add_to_index."""
from __future__ import annotations

import re
import threading

import pytest

from wikimem.api import init_vault, open_vault
from wikimem.errors import ConflictError, PathEscapeError, ReadOnlyError, UsageError
from wikimem.knowledge.secrets import SecretError
from wikimem.knowledge.writer import insert_in_section

KEY = "sk-ant-" + "api03-Zx9Qw8Er7Ty6Ui5Op4As3Df2Gh1Jk0LzXcVbNm"
LOG_LINE = re.compile(r"^- \d{4}-\d{2}-\d{2} \d{2}:\d{2} · (\S+) · (.+)$")


def fresh_vault(tmp_path, embedder: str = "fake"):
    """A new `wikimem init` vault opened with ``embedder``."""
    init_vault(tmp_path / "v")
    return open_vault(tmp_path / "v", embedder=embedder)


@pytest.fixture
def vault(tmp_path):
    v = fresh_vault(tmp_path)
    yield v
    v.close()


def log_entries(v):
    text = (v.root / "log.md").read_text(encoding="utf-8")
    return [m.groups() for m in map(LOG_LINE.match, text.splitlines()) if m]


def test_create_logs_and_indexes(vault):
    res = vault.write_page("concepts/leiden.md", "---\ntitle: Leiden\n---\n# Leiden\n\nCommunity detection.\n",
                           reason="query")
    assert res.created and res.path == "concepts/leiden.md" and res.warnings == []
    assert (vault.root / "concepts/leiden.md").read_text() .startswith("---\ntitle: Leiden")
    assert ("query", "concepts/leiden.md") in log_entries(vault)
    hits = vault.search("community detection", mode="lexical")
    assert [h.path for h in hits] == ["concepts/leiden.md"]


def test_replace_needs_the_current_hash_and_keeps_crlf_and_bom(vault):
    path = vault.root / "concepts/w.md"
    path.write_bytes(b"\xef\xbb\xbf# W\r\n\r\nold\r\n")
    note = vault.files.read_note("concepts/w.md")
    with pytest.raises(ConflictError):
        vault.write_page("concepts/w.md", "# W\n\nnew\n")  # None means create: must not exist
    with pytest.raises(ConflictError):
        vault.write_page("concepts/w.md", "# W\n\nnew\n", expected_sha256="0" * 64)
    assert path.read_bytes() == b"\xef\xbb\xbf# W\r\n\r\nold\r\n"
    res = vault.write_page("concepts/w.md", "# W\n\nnew\n", expected_sha256=note.sha256)
    assert not res.created
    assert path.read_bytes() == b"\xef\xbb\xbf# W\r\n\r\nnew\r\n"


def test_secret_refuses_and_writes_nothing(vault):
    before = (vault.root / "log.md").read_bytes()
    with pytest.raises(SecretError) as exc:
        vault.write_page("memories/k.md", f"my key is\n{KEY}\n")
    assert "anthropic-api-key" in str(exc.value) and "line 2" in str(exc.value)
    assert not (vault.root / "memories/k.md").exists()
    assert (vault.root / "log.md").read_bytes() == before
    assert not list((vault.root / "memories").iterdir())


def test_info_findings_are_written_with_a_warning(vault):
    res = vault.write_page("entities/bob.md", "# Bob\n\nPhone +1 415-555-0132.\n")
    assert (vault.root / "entities/bob.md").exists()
    assert any("phone-number" in w for w in res.warnings)


@pytest.mark.parametrize("rel,error", [("raw/articles/x.md", ReadOnlyError), ("../outside.md", PathEscapeError),
                                       ("/etc/x.md", PathEscapeError), ("concepts/x.txt", UsageError)])
def test_refused_targets(vault, rel, error):
    with pytest.raises(error):
        vault.write_page(rel, "# x\n")


def test_cache_failure_keeps_the_write_and_warns(vault, monkeypatch):
    def broken(*a, **k):
        raise RuntimeError("disk full")
    from wikimem.index import update
    monkeypatch.setattr(update, "build", broken)
    res = vault.write_page("concepts/c.md", "# C\n\ntext\n")
    assert (vault.root / "concepts/c.md").exists()
    assert any("cache not updated" in w and "disk full" in w for w in res.warnings)


def test_append_log_creates_from_template_and_appends(vault):
    (vault.root / "log.md").unlink()
    vault.append_log("ingest", "raw/articles/a.md")
    vault.append_log("query", "two\nlines")
    text = (vault.root / "log.md").read_text()
    assert text.startswith("---\ntitle: Log")
    assert log_entries(vault) == [("ingest", "raw/articles/a.md"), ("query", "two lines")]


def test_append_log_keeps_crlf(vault):
    (vault.root / "log.md").write_bytes(b"# Log\r\n\r\n- old\r\n")
    vault.append_log("lint", "fixed 2")
    data = (vault.root / "log.md").read_bytes()
    assert data.startswith(b"# Log\r\n\r\n- old\r\n- ") and data.endswith(b"\r\n") and b"\n" not in data.replace(b"\r\n", b"")


def test_append_log_refuses_secrets(vault):
    with pytest.raises(SecretError):
        vault.append_log("remember", KEY)


def test_append_log_concurrent_writers_lose_nothing(vault):
    """Threads appending at once: every line lands (appends are serialised, not just checked)."""
    threads = [threading.Thread(target=vault.append_log, args=("t", f"line {i}")) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    got = sorted(d for op, d in log_entries(vault) if op == "t")
    assert got == sorted(f"line {i}" for i in range(8))


def test_add_to_index_by_type_and_idempotent(vault):
    (vault.root / "concepts/leiden.md").write_text("# Leiden\n")
    (vault.root / "memories/m1.md").write_text("---\ntitle: Vim preference\n---\nThe user prefers vim.\n")
    assert vault.add_to_index("concepts/leiden.md", "community detection") is True
    assert vault.add_to_index("concepts/leiden.md", "again") is False
    assert vault.add_to_index("memories/m1.md") is True
    text = (vault.root / "index.md").read_text()
    concepts = text.index("## Concepts")
    assert text.index("- [[leiden]] — community detection") > concepts
    assert text.index("- [[leiden]]") < text.index("## Comparisons")
    assert "## Memories\n\n- [[memories/m1|Vim preference]]\n" in text
    assert text.count("leiden") == 1


def test_add_to_index_skips_a_page_linked_elsewhere(vault):
    (vault.root / "concepts/louvain.md").write_text("# Louvain\n")
    with open(vault.root / "index.md", "a") as fh:
        fh.write("\nSee also [[concepts/louvain]].\n")
    before = (vault.root / "index.md").read_text()
    assert vault.add_to_index("concepts/louvain.md") is False
    assert (vault.root / "index.md").read_text() == before


def test_insert_in_section_appends_after_last_item():
    text = "# Index\n\n## Entities\n\n- [[a]]\n- [[b]]\n\n## Concepts\n\n## Queries\n"
    assert insert_in_section(text, "Entities", "- [[c]]") == \
        "# Index\n\n## Entities\n\n- [[a]]\n- [[b]]\n- [[c]]\n\n## Concepts\n\n## Queries\n"
    assert insert_in_section(text, "Concepts", "- [[x]]") == \
        "# Index\n\n## Entities\n\n- [[a]]\n- [[b]]\n\n## Concepts\n\n- [[x]]\n\n## Queries\n"
    assert insert_in_section(text, "Queries", "- [[q]]") == \
        "# Index\n\n## Entities\n\n- [[a]]\n- [[b]]\n\n## Concepts\n\n## Queries\n\n- [[q]]"
    assert insert_in_section(text, "Sources", "- [[s]]").endswith("## Queries\n\n## Sources\n\n- [[s]]\n")


def test_normalise_folds_punctuation_as_before():
    """normalise() replaces punctuation by str.translate now (a 1 MiB page took 0.8 s char by char):
    the same result as the character-by-character fold on mixed scripts, symbols and spaces."""
    import unicodedata

    from hypothesis import given, settings
    from hypothesis import strategies as st

    from wikimem.knowledge.similarity import _SPACE, normalise

    def old(text: str) -> str:
        text = unicodedata.normalize("NFKC", text).casefold()
        text = "".join(" " if unicodedata.category(ch)[0] in ("P", "S") else ch for ch in text)
        return _SPACE.sub(" ", text).strip()

    @settings(max_examples=300, deadline=None)
    @given(st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=80))
    def same(text):
        assert normalise(text) == old(text)

    same()
    assert normalise("Vim over nano.  （全角）！") == old("Vim over nano.  （全角）！") == "vim over nano 全角"


def test_long_texts_compare_on_their_head_but_duplicates_on_the_whole(monkeypatch):
    """Past COMPARED_CHARS the signals read each text's head; an exact duplicate still needs the
    whole text equal (two long pages that differ only at the end are not duplicates)."""
    from wikimem.knowledge import similarity

    monkeypatch.setattr(similarity, "COMPARED_CHARS", 200)
    head = "Leiden finds communities in the link graph of the vault. " * 10
    thresholds = similarity.thresholds_for(None)[0]
    same = similarity.compare(None, thresholds, head + "tail one", {"a.md": head + "tail one"})
    assert same[0].label == "duplicate"
    differs = similarity.compare(None, thresholds, head + "tail one", {"a.md": head + "something else"})
    assert differs[0].label == "update"  # alike where compared: a supersede candidate, not a duplicate


def test_a_write_embeds_its_page_as_foreground_work(vault, monkeypatch):
    """The caller waits for a write's inline vectors, so they never wait out EmbedGate's quiet gap
    after a search (a watcher's background backlog does): remember searches before it writes, and
    every fact waited 0.5 s for its own query to go quiet."""
    from wikimem.index import embedding
    seen = []
    real = embedding.GATE.backlog_batch

    def spy(max_wait: float = 5.0, background: bool = True):
        seen.append(background)
        return real(max_wait=max_wait, background=background)

    monkeypatch.setattr(embedding.GATE, "backlog_batch", spy)
    vault.search("anything")  # a query just embedded: a background batch would wait now
    vault.remember("The deploy window is Tuesday at noon.")
    vault.write_page("concepts/gate.md", "# Gate\n\nForeground vectors.\n", reason="test")
    assert seen and not any(seen)
    assert "concepts/gate.md" in [h.path for h in vault.search("Foreground vectors", mode="vector").hits]


@pytest.mark.parametrize("given", [None, "", "   "])
def test_an_agent_write_without_a_reason_logs_what_it_did(vault, given):
    from wikimem.mcp.tools import Tools
    tools = Tools(vault)
    kwargs = {} if given is None else {"reason": given}
    made = tools.write_page("notes/a.md", "# A\n\nalpha\n", **kwargs)
    edited = tools.edit_page("notes/a.md", "append", made["sha256"], content="beta\n", **kwargs)
    moved = tools.move_page("notes/a.md", "notes/b.md", edited["sha256"], **kwargs)
    tools.delete_page("notes/b.md", moved["sha256"], **kwargs)
    lines = (vault.root / "log.md").read_text(encoding="utf-8").splitlines()[-4:]
    assert [line.split(" · ")[1] for line in lines] == ["agent write", "agent edit (append)", "agent move",
                                                        "agent delete"]


def test_a_write_embeds_its_own_page_not_a_backlog(make_vault):
    """A write waited while it embedded other pages' vectors for its whole 1 s budget when the vault
    had a backlog (a lexical-first build, an interrupted one): it embeds its own page and returns."""
    from wikimem.api import open_vault
    root = make_vault({f"n{i:02d}.md": f"# N{i}\n\nNote {i} about something.\n\nA second paragraph.\n"
                       for i in range(40)})
    v = open_vault(root, embedder="fake")
    try:
        v.index(embed=False)
        v.write_page("mine.md", "# Mine\n\nMy own page.\n\nWith two paragraphs.\n", reason="test")
        assert v.search("my own page", mode="vector").hits[0].path == "mine.md"
        status = v.status()
        assert 0 < status["vector_coverage"] < 0.1  # its chunk; the 40 others wait for a build or a watcher
        v.index()
        assert v.status()["vector_coverage"] == pytest.approx(1.0)
    finally:
        v.close()
