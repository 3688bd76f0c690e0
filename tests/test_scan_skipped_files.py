"""What the vault scan does with files that are not ordinary notes: non-UTF-8 file and folder names,
FIFOs, sockets, folders named *.md, symlinks leaving the vault, files over the size cap, a FIFO
.wikimemignore. Each is skipped and reported by name, never read, never a hang (issue 10 items 4-6,
14); and the property over random hostile vaults: every file is either indexed or reported, and the
cache equals a fresh rebuild."""
import json
import os

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from wikimem.api import open_vault
from wikimem.vault import files as files_mod
from wikimem.vault.files import shown_name

from support_vault_checks import GOOD, deadline, everything, skipped_of
from test_properties import hostile_frontmatter

pytestmark = pytest.mark.adversarial


# -- names, special files, symlinks ------------------------------------------------------------
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


def test_wikimemignore_that_is_a_fifo_does_not_hang_the_scan(make_vault):
    root = make_vault(GOOD)
    os.mkfifo(root / ".wikimemignore")
    v, report, status, summary = everything(root)  # under a deadline: a blocking read fails, not hangs
    assert sorted(v.load().pages) == ["SCHEMA.md", "good.md"]  # read as no patterns: nothing hidden
    assert summary["pages"] == 2 and status["page_problems"] == []


# -- the size cap -------------------------------------------------------------------------------
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


# -- the hostile-vault property (issue 10, "What to build besides the fixes") ----------------------
NAME_BYTES = st.binary(min_size=1, max_size=24).map(lambda b: b.replace(b"/", b"_").replace(b"\x00", b"_"))


NAME_TEXT = st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="/\x00"), min_size=1, max_size=24)


NAME = st.one_of(NAME_BYTES, NAME_TEXT.map(os.fsencode)).filter(lambda b: not b.startswith(b".") and len(b) < 200)


SUFFIX = st.sampled_from([b".md", b".md", b".markdown", b".MD"])


BODY = st.one_of(
    st.binary(max_size=300),
    st.text(max_size=300).map(lambda t: t.encode("utf-8", "surrogatepass")),
    st.sampled_from([b"# T\n\n**Bob**: Yes.\n\n**Al**: alpha?\n\n**Bob**: Yes.\n\n**Al**: ok\n",
                     b"# Links\n\n[[good]] [[missing]] ![[x.png]] #tag ^block\n", b"\xef\xbb\xbf# BOM\r\n\r\nalpha\r\n"]))


SPECIALS = ("fifo", "outside", "zero", "dangling", "folder.md", "badfolder")


@st.composite
def hostile_note(draw):
    folder = draw(st.sampled_from([b"", b"", b"raw/transcripts", b"concepts", b"dir\xff"]))
    name = draw(NAME) + draw(SUFFIX)
    front = draw(st.one_of(st.just(""), hostile_frontmatter().map(lambda f: f"---\n{f}---\n")))
    return folder, name, front.encode("utf-8", "surrogatepass") + draw(BODY)


def _snapshot(v):
    db = v.cache.db
    return (db.execute("SELECT path, size, mtime_ns, sha256, title, type, status, aliases, links, tags, errors, note "
                       "FROM files ORDER BY path").fetchall(),
            db.execute("SELECT id, path, ord, title, heading_path, text FROM chunks ORDER BY path, ord").fetchall(),
            db.execute("SELECT src, dst, type, weight FROM edges ORDER BY src, dst, type").fetchall())


def _write(root, folder, name, data):
    where = os.path.join(os.fsencode(root), folder) if folder else os.fsencode(root)
    os.makedirs(where, exist_ok=True)
    with open(os.path.join(where, name), "wb") as fh:
        fh.write(data)
    return os.fsdecode(os.path.join(folder, name) if folder else name)


def _special(root, kind, outside):
    if kind == "fifo":
        os.mkfifo(root / "pipe.md")
    elif kind == "outside":
        os.symlink(outside, root / "leak.md")
    elif kind == "zero":
        os.symlink("/dev/zero", root / "zero.md")
    elif kind == "dangling":
        os.symlink(root / "nowhere.md", root / "dangling.md")
    elif kind == "folder.md":
        (root / "folder.md").mkdir()
    elif kind == "badfolder":
        _write(root, b"bad\xfedir", b"inner.md", b"# Inner\n")


def _everything(v):
    report = v.index()
    hits = v.search("alpha good note").hits
    status = v.status()
    summary = v.parse_summary()
    json.dumps(report.to_dict(), allow_nan=False).encode("utf-8")
    json.dumps(status, allow_nan=False).encode("utf-8")
    json.dumps(summary, allow_nan=False).encode("utf-8")
    assert "good.md" in {h.path for h in hits}
    return report


@settings(max_examples=int(os.environ.get("HOSTILE_EXAMPLES", 12)), deadline=None, suppress_health_check=list(HealthCheck))
@given(st.lists(hostile_note(), min_size=1, max_size=6, unique_by=lambda n: (n[0], n[1].lower())),
       st.lists(st.sampled_from(SPECIALS), unique=True, max_size=3), st.integers(0, 6))
def test_hostile_vault_never_breaks_and_equals_a_rebuild(tmp_path_factory, notes, specials, split):
    base = tmp_path_factory.mktemp("hv")
    root = base / "vault"
    root.mkdir()
    outside = base / "outside.md"
    outside.write_text("# Outside\n\nalpha\n")
    (root / "SCHEMA.md").write_text("# Schema\n")
    (root / "good.md").write_text("# Good\n\nAlpha, the good note that must stay searchable.\n")
    v = open_vault(root, embedder="fake")
    written = []
    for folder, name, data in notes[:split]:  # some notes first, the rest in an incremental build
        written.append(_write(root, folder, name, data))
    _everything(v)
    for folder, name, data in notes[split:]:
        written.append(_write(root, folder, name, data))
    for kind in specials:
        _special(root, kind, outside)
    report = _everything(v)

    indexed = {r[0] for r in v.cache.db.execute("SELECT path FROM files")}
    reported = {s["path"] for s in report.skipped}
    for rel in written:
        shown = shown_name(rel)
        in_skipped_folder = any(shown.startswith(p + "/") for p in reported)
        assert shown in indexed or shown in reported or in_skipped_folder, (shown, reported)
    for path in indexed | reported:
        path.encode("utf-8")  # no lone surrogates reach the cache or a report

    before = _snapshot(v)
    v.close()
    fresh = open_vault(root, embedder="fake")
    fresh.index(rebuild=True)
    assert _snapshot(fresh) == before
    fresh.close()
