"""The hostile-vault property (issue 10, "What to build besides the fixes"): notes with arbitrary
values for every frontmatter key wikimem interprets, arbitrary bytes in bodies, arbitrary (also
non-UTF-8) file and folder names and special files. index, search, status and parse never raise;
every file is either indexed or reported by name; the cache equals a fresh rebuild."""
import json
import os

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from wikimem.api import open_vault
from wikimem.vault.files import shown_name

from test_properties import hostile_frontmatter

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
