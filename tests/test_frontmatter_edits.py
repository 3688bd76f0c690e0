"""update_frontmatter changes only the keys asked for: body bytes and mixed line endings kept, CR-only
notes refused, keys YAML reads as something else (`on`, `007`) never renamed or re-dumped, no
neighbouring key or comment lost; and supersede (two frontmatter edits) undoes the first when the
second fails."""
from __future__ import annotations

import errno

import pytest

from conftest import write_vault
from wikimem.api import Vault, open_vault
from wikimem.errors import WikimemError
from wikimem.vault import files as files_mod


def _open(root):
    return open_vault(root, embedder="fake")


def _edited(make_vault, rel: str, before, changes) -> bytes:
    """The bytes of ``rel`` (written as ``before``) after ``update_frontmatter(rel, changes)``."""
    root = make_vault({"SCHEMA.md": "# S\n", rel: before})
    v = _open(root)
    try:
        v.update_frontmatter(rel, changes)
    finally:
        v.close()
    return (root / rel).read_bytes()


@pytest.fixture
def _no_embedder(monkeypatch):
    monkeypatch.setenv("WIKIMEM_EMBEDDER", "none")


# -- frontmatter edits keep everything they do not change ------------------------------------------
@pytest.mark.adversarial
def test_update_frontmatter_keeps_every_body_byte_of_a_mixed_line_ending_note(make_vault):
    # Was: Vault.update_frontmatter promises "everything else stays byte for byte", but it turns
    # the whole file into LF and back into the dominant ending (VaultFiles.write_note with
    # newline="\r\n"), so the LF lines of a mixed-ending note's *body* become CRLF.
    before = b"---\r\ntitle: T\r\n---\r\nBody\r\npasted line\nlast\r\n"
    after = _edited(make_vault, "n/mixed.md", before, {"status": "draft"})
    assert after.endswith(b"---\r\nBody\r\npasted line\nlast\r\n"), after


@pytest.mark.adversarial
def test_update_frontmatter_refuses_a_cr_only_note(make_vault):
    # Was: parse/frontmatter.split only knows "\n"; a note saved with classic-Mac CR line endings
    # (which CommonMark, YAML and Obsidian all treat as line breaks) has its frontmatter missed, and
    # update_frontmatter prepends a *new* LF block, demoting the user's real frontmatter to body
    # text. It should edit the existing block (or refuse the note), never stack a second one.
    before = b"---\rtitle: Mac note\r---\rBody\r"
    root = make_vault({"SCHEMA.md": "# S\n", "n/mac.md": before})
    v = _open(root)
    try:
        with pytest.raises(WikimemError, match="CR only"):
            v.update_frontmatter("n/mac.md", {"status": "draft"})
    finally:
        v.close()
    assert (root / "n/mac.md").read_bytes() == before


@pytest.mark.adversarial
def test_update_frontmatter_never_renames_keys_or_retypes_dates(make_vault):
    # Was: when a top-level key's text differs from str() of its parsed value (`on:` is the bool
    # True in YAML 1.1, `007:` the int 7), parse/frontmatter.update falls back to re-dumping the
    # *normalised* data: the user's key `on` is renamed to 'True', `007` to '7', every comment is
    # dropped and `created: 2024-01-02` (a date) becomes the string '2024-01-02', although only
    # `status` was asked to change. Unknown keys must survive a write unchanged.
    before = "---\non: weekends\n007: agent\ncreated: 2024-01-02  # first draft\ntitle: T\n---\nBody\n"
    after = _edited(make_vault, "n/keys.md", before, {"status": "draft"}).decode("utf-8")
    assert after.startswith("---\non: weekends\n007: agent\ncreated: 2024-01-02  # first draft\ntitle: T\n"), after


@pytest.mark.adversarial
def test_a_key_yaml_reads_as_something_else_is_refused_not_re_dumped(make_vault):
    """Changing ``on`` itself (YAML reads it as True) cannot be done line by line: refused, and
    the note is left as it was."""
    before = "---\non: weekends\ntitle: T\n---\nBody\n"
    root = make_vault({"SCHEMA.md": "# S\n", "n/keys.md": before})
    v = _open(root)
    try:
        with pytest.raises(WikimemError, match="edit it by hand"):
            v.update_frontmatter("n/keys.md", {"on": "weekdays"})
        v.update_frontmatter("n/keys.md", {"title": "T"})  # no change: nothing written
    finally:
        v.close()
    assert (root / "n/keys.md").read_text(encoding="utf-8") == before


# -- the per-key refusal rule ------------------------------------------------------------------------
@pytest.mark.adversarial
@pytest.mark.usefixtures("_no_embedder")
@pytest.mark.parametrize("neighbour", ["'a:b': 1"])
def test_update_frontmatter_never_drops_a_key_the_line_scan_does_not_see(tmp_path, neighbour):
    # Now: _key_spans does not see a quoted key holding ': ' or ':' as a key, so its line is part of
    # the key above it; changing that key rewrites both lines and the neighbour is gone without a
    # word. Before 7b15ef7 the whole block was re-dumped (the key kept); now the rule only compares
    # the *changed* key. Either keep the neighbour or refuse the edit, never lose it.
    root = write_vault(tmp_path / "v", {"n.md": f"---\ntitle: x\n{neighbour}\n---\nbody\n"})
    v = Vault(root)
    before = v.parse_file("n.md").frontmatter.data
    try:
        v.update_frontmatter("n.md", {"title": "y"})
    except WikimemError:
        return  # a refusal is acceptable
    after = v.parse_file("n.md").frontmatter.data
    assert after.get("title") == "y"
    assert {k: val for k, val in after.items() if k != "title"} == {k: val for k, val in before.items() if k != "title"}, \
        (root / "n.md").read_text()


@pytest.mark.adversarial
@pytest.mark.usefixtures("_no_embedder")
def test_update_frontmatter_never_drops_a_key_after_a_lone_cr(tmp_path):
    # Now: YAML reads a lone CR (or U+2028) as a line break, the line scan does not: "b" is lost
    # when "a" changes (before: re-dumped, "b" kept).
    root = write_vault(tmp_path / "v", {"n.md": b"---\r\na: 1\rb: 2\r\n---\r\nbody\r\n"})
    v = Vault(root)
    try:
        v.update_frontmatter("n.md", {"a": 3})
    except WikimemError:
        return
    assert v.parse_file("n.md").frontmatter.data == {"a": 3, "b": 2}, (root / "n.md").read_bytes()


@pytest.mark.usefixtures("_no_embedder")
def test_a_comment_under_a_key_survives_an_edit_of_that_key(tmp_path):
    """Was (older than session 8): a column-0 comment between two keys counted as part of the key
    above, and changing that key dropped it."""
    root = write_vault(tmp_path / "v", {"n.md": "---\nstatus: draft\n# reviewed by X\n\ntags: [a]\n---\nBody\n"})
    v = Vault(root)
    v.update_frontmatter("n.md", {"status": "active"})
    v.close()
    assert (root / "n.md").read_text(encoding="utf-8") == "---\nstatus: active\n# reviewed by X\n\ntags: [a]\n---\nBody\n"


# -- supersede: both edits or neither ---------------------------------------------------------------
@pytest.mark.adversarial
def test_supersede_undoes_new_when_the_second_write_hits_an_oserror(make_vault, monkeypatch):
    # Was: knowledge/versions.supersede writes NEW's `supersedes`, then OLD; it undoes NEW only
    # when the second write raises a WikimemError. An OSError there (disk full, permission, the long
    # name above) propagates with NEW already changed: a half-made supersede left in the user's note.
    root = make_vault({"SCHEMA.md": "# S\n",
                       "concepts/Old.md": "---\ntitle: Old\n---\n# Old\n\nFirst version.\n",
                       "concepts/New.md": "---\ntitle: New\n---\n# New\n\nSecond version.\n"})
    new_before = (root / "concepts/New.md").read_bytes()
    real = files_mod.atomic_write_bytes

    def disk_full_for_old(path, data, before_replace=None):
        if path.name == "Old.md":
            raise OSError(errno.ENOSPC, "No space left on device")
        return real(path, data, before_replace=before_replace)

    monkeypatch.setattr(files_mod, "atomic_write_bytes", disk_full_for_old)
    from wikimem.vault import safe_write
    real_safe = safe_write.write_in_vault

    def disk_full_for_old_safe(root_, parts, data, **kw):  # notes are written through folder descriptors
        if parts[-1] == "Old.md":
            raise OSError(errno.ENOSPC, "No space left on device")
        return real_safe(root_, parts, data, **kw)

    monkeypatch.setattr(safe_write, "write_in_vault", disk_full_for_old_safe)
    v = _open(root)
    try:
        v.index()
        with pytest.raises(OSError):
            v.supersede("concepts/Old.md", "concepts/New.md")
    finally:
        v.close()
    assert (root / "concepts/New.md").read_bytes() == new_before
