"""One bad note, file name or setting never takes the vault down (issue 10 items 1-6, 14; issue 9
item 2). Each case goes through index, search, status and parse of the public API."""
import json
import os
import signal
from contextlib import contextmanager

import pytest

from wikimem.api import open_vault
from wikimem.parse import chunk_page, parse_page
from wikimem.vault import files as files_mod

GOOD = {"SCHEMA.md": "# Schema\n", "good.md": "# Good\n\nAlpha beta gamma, the searchable note.\n"}


class Hung(Exception):
    """Not an OSError (as TimeoutError is), so code that skips unreadable files cannot swallow it."""


@contextmanager
def deadline(seconds):
    """Fail instead of hanging forever (a FIFO read blocks until a writer appears)."""
    def boom(*_):
        raise Hung(f"still running after {seconds} s")
    old = signal.signal(signal.SIGALRM, boom)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)


def everything(root):
    """index, search, status and parse: none may raise; returns what they said."""
    v = open_vault(root, embedder="fake")
    with deadline(60):
        report = v.index()
        hits = v.search("alpha beta gamma").hits
        status = v.status()
        summary = v.parse_summary()
    json.dumps(status, allow_nan=False)
    json.dumps(summary, allow_nan=False)
    assert "good.md" in {h.path for h in hits}, "the good note must stay searchable"
    return v, report, status, summary


def skipped_of(report, status):
    by_build = {s["path"]: s["kind"] for s in report.skipped}
    by_status = {s["path"]: s["kind"] for s in status.get("skipped_files", [])}
    return by_build, by_status


# -- issue 10 items 1 and 2, issue 9 item 2: frontmatter values ----------------------------------
BAD_FRONTMATTER = {
    "impossible-date.md": "---\ncreated: 2024-02-30\nupdated: 2024-13-45\n---\n# D\n\nbody\n",
    "self-anchor.md": "---\na: &a [*a]\ntitle: Loop\n---\n# S\n\nbody\n",
    "deep.md": "---\na: " + "[" * 3000 + "]" * 3000 + "\n---\n# Deep\n\nbody\n",
    "bomb.md": "---\na: &a [x,x,x,x,x,x,x,x,x]\n" + "".join(
        f"{chr(98 + i)}: &{chr(98 + i)} [{','.join(['*' + chr(97 + i)] * 9)}]\n" for i in range(8)) + "---\n# B\n\nbody\n",
    "huge-int.md": "---\nchunk_window: " + "9" * 5000 + "\n---\n# H\n\nbody\n",
    "odd-types.md": "---\ntype: [entity]\nstatus: {a: 1}\ntitle: {x: 1}\ntags: {a: b}\naliases: [[x, y], 3]\n"
                    "supersedes: 5\ncreated: 2024\nx: !!binary aGk=\ny: !!set {a, b}\nz: .nan\n---\n# Odd\n\nbody\n",
}


def test_bad_frontmatter_values_are_page_problems(make_vault):
    root = make_vault({**GOOD, **BAD_FRONTMATTER})
    v, report, status, summary = everything(root)
    assert set(BAD_FRONTMATTER) <= set(summary["pages_with_errors"])
    problems = {p["path"]: " ".join(p["problems"]) for p in status["page_problems"]}
    assert "not a date" in problems["impossible-date.md"] and "2024-02-30" in problems["impossible-date.md"]
    assert "refers to itself" in problems["self-anchor.md"]
    # our depth cap, or (PyYAML >= 6.0.3) the loader's own nesting limit, whichever comes first
    assert "refers to itself" in problems["deep.md"] or "nesting depth" in problems["deep.md"]
    assert "expands to more than" in problems["bomb.md"]
    pages = v.load().pages
    odd = pages["odd-types.md"]
    assert (odd.type, odd.status, odd.title, odd.created) == ("note", "active", "Odd", None)
    assert pages["impossible-date.md"].created is None and pages["impossible-date.md"].updated is None
    assert v.pages() == pages  # served from the cache: the same pages


@pytest.mark.parametrize("key,value,field,default", [
    ("created", "2024-02-30", "created", None),
    ("created", "2023-02-29", "created", None),
    ("updated", "[2024-01-01]", "updated", None),
    ("date", "yesterday", "created", None),
    ("status", "maybe", "status", "active"),
    ("status", "[active]", "status", "active"),
    ("type", "{a: 1}", "type", "concept"),
    ("type", "unicorn", "type", "concept"),
    ("title", "[a, b]", "title", "Heading"),
    ("aliases", "{a: 1}", "aliases", ()),
    ("tags", "[[[deep]]]", "tags", ()),
    ("supersedes", "{a: 1}", "supersedes", ()),
    ("chunk_window", "two", None, None),
    ("chunk_stride", "-3", None, None),
    ("chunk_window", "true", None, None),
])
def test_each_interpreted_key_validated(key, value, field, default):
    page = parse_page("concepts/p.md", f"---\n{key}: {value}\nkind: transcript\n---\n# Heading\n\n"
                                       "**Ann**: hello\n\n**Bob**: Yes.\n")
    assert any(e.startswith(key) for e in page.errors), page.errors
    if field == "tags":
        assert not any(t.source == "frontmatter" for t in page.tags)
    elif field:
        assert getattr(page, field) == default
    assert chunk_page(page)  # the chunker copes with whatever the page holds


def test_good_values_are_not_problems():
    page = parse_page("concepts/p.md", "---\ncreated: 2024-02-29\nupdated: 2024-03-01T10:00:00+01:00\n"
                                       "status: Superseded\ntype: entity\ntitle: 2024\naliases: [A, 7]\n"
                                       "tags: [x, '#y']\nsupersedes: [[Old]]\nchunk_window: 2\n---\nbody\n")
    assert page.errors == ()
    assert (page.created, page.updated, page.status, page.type, page.title) == \
        ("2024-02-29", "2024-03-01T10:00:00+01:00", "superseded", "entity", "2024")
    assert page.aliases == ("A", "7") and page.supersedes == ("Old",) and page.tag_names == ("x", "y")


# -- issue 10 item 3: the same turn twice ----------------------------------------------------------
def test_transcript_with_repeated_turns_indexes(make_vault):
    text = ("---\nkind: transcript\n---\n# Chat\n\n**Ann**: Ready?\n\n**Bob**: Yes.\n\n**Ann**: Sure?\n\n"
            "**Bob**: Yes.\n\n**Ann**: Good.\n")
    root = make_vault({**GOOD, "raw/transcripts/chat.md": text})
    v, report, status, summary = everything(root)
    chunks = chunk_page(parse_page("raw/transcripts/chat.md", text))
    assert chunks[1].text == chunks[3].text  # the case: the same turn text twice
    assert len(chunks) == 5 and len({c.id for c in chunks}) == 5
    assert v.cache.db.execute("SELECT count(*) FROM chunks WHERE path='raw/transcripts/chat.md'").fetchone()[0] == 5


# -- issue 10 items 4-6: names, special files, symlinks ---------------------------------------------
def test_non_utf8_file_and_folder_names_are_reported_with_escapes(make_vault):
    root = make_vault(GOOD)
    os.makedirs(os.path.join(os.fsencode(root), b"assets"))
    with open(os.path.join(os.fsencode(root), b"assets", b"photo\xe9.png"), "wb") as fh:
        fh.write(b"\x89PNG")
    with open(os.path.join(os.fsencode(root), b"caf\xe9.md"), "wb") as fh:
        fh.write(b"# Cafe\n\nalpha\n")
    os.makedirs(os.path.join(os.fsencode(root), b"dir\xff"))
    with open(os.path.join(os.fsencode(root), b"dir\xff", b"inner.md"), "wb") as fh:
        fh.write(b"# Inner\n")
    v, report, status, summary = everything(root)
    by_build, by_status = skipped_of(report, status)
    expected = {"assets/photo\\xe9.png", "caf\\xe9.md", "dir\\xff"}
    assert expected <= set(by_build) and expected <= set(by_status)
    assert {by_build[p] for p in expected} == {"bad_name"}
    assert not any("\\xff/" in p for p in by_build), "a bad folder is reported once, not walked"
    json.dumps(report.to_dict()).encode("utf-8")  # no lone surrogates anywhere


def test_fifo_socket_and_folder_named_md_are_not_notes(make_vault):
    import socket
    root = make_vault(GOOD)
    os.mkfifo(root / "pipe.md")
    sock = socket.socket(socket.AF_UNIX)
    sock.bind(str(root / "sock.md"))
    (root / "folder.md").mkdir()
    try:
        v, report, status, summary = everything(root)
        by_build, by_status = skipped_of(report, status)
        assert by_build["pipe.md"] == by_status["pipe.md"] == "not_regular"
        assert by_build["sock.md"] == "not_regular"
        with deadline(10), pytest.raises(files_mod.NoteReadError, match="not a regular file"):
            v.files.read_note("pipe.md")  # even when asked for by name, never blocks
    finally:
        sock.close()


def test_symlinks_outside_are_refused_like_folders(make_vault, tmp_path):
    outside = tmp_path / "secret.md"
    outside.write_text("# Secret\n\nalpha beta gamma\n")
    root = make_vault(GOOD)
    os.symlink(outside, root / "leak.md")
    os.symlink("/dev/zero", root / "zero.md")
    os.symlink(root / "good.md", root / "inside.md")  # inside the vault: fine
    v, report, status, summary = everything(root)
    by_build, by_status = skipped_of(report, status)
    assert by_build["leak.md"] == by_build["zero.md"] == "outside"
    assert by_status["leak.md"] == "outside"
    assert "inside.md" in v.load().pages and "leak.md" not in v.load().pages


def test_reads_stop_at_the_cap_whatever_the_stat_says(make_vault, monkeypatch):
    root = make_vault({**GOOD, "big.md": "# Big\n" + "word " * 300_000})
    v = open_vault(root, embedder="none", max_file_mb=1)
    real_fstat = os.fstat

    class Lying:
        def __init__(self, st):
            self._st = st

        def __getattr__(self, name):
            return 0 if name == "st_size" else getattr(self._st, name)

    monkeypatch.setattr(os, "fstat", lambda fd: Lying(real_fstat(fd)))  # a size of 0, like /proc files
    with pytest.raises(files_mod.NoteReadError) as info:
        v.files.read_note("big.md")
    assert info.value.kind == "too_large" and "1.0 MiB" in info.value.reason and " MB" not in info.value.reason


def test_size_message_in_mib(make_vault):
    root = make_vault({**GOOD, "big.md": "x" * (3 * 1024 * 1024)})
    loaded = open_vault(root, embedder="none", max_file_mb=2).load()
    reason = {s.path: s.reason for s in loaded.skipped}["big.md"]
    assert "3.0 MiB, over the 2.0 MiB limit" in reason


def test_vault_path_that_is_not_utf8_is_refused_clearly(tmp_path):
    from wikimem.errors import UsageError
    root = os.path.join(os.fsencode(tmp_path), b"caf\xe9")
    os.makedirs(root)
    with pytest.raises(UsageError, match=r"caf\\xe9.*not valid UTF-8|not valid UTF-8.*caf\\xe9"):
        open_vault(os.fsdecode(root))


def test_implicit_vault_must_look_like_one(tmp_path, monkeypatch):
    from wikimem.errors import UsageError
    monkeypatch.chdir(tmp_path)
    with pytest.raises(UsageError, match="WIKIMEM_VAULT"):
        open_vault()
    assert open_vault(tmp_path).root == tmp_path.resolve()  # named explicitly: fine
    monkeypatch.setenv("WIKIMEM_VAULT", str(tmp_path))
    assert open_vault().root == tmp_path.resolve()
    monkeypatch.delenv("WIKIMEM_VAULT")
    (tmp_path / "SCHEMA.md").write_text("# S\n")
    assert open_vault().root == tmp_path.resolve()
    assert not (tmp_path / ".wikimem").exists()


def test_wikimemignore_that_is_a_fifo_does_not_hang_the_scan(make_vault):
    root = make_vault(GOOD)
    os.mkfifo(root / ".wikimemignore")
    everything(root)
