"""The read helpers behind the MCP tools (Vault.read_page / list_pages / taxonomy) and the write guards."""
from __future__ import annotations

import hashlib

import pytest

from wikimem.agent import guards
from wikimem.agent.pages import excerpt, wikilink
from wikimem.api import open_vault
from wikimem.errors import ConflictError, PathEscapeError, ReadOnlyError, UsageError

FILES = {
    "notes/Guide.md": "---\ntitle: Guide\ntags: [howto, howto/setup]\n---\r\n# Setup\r\n\r\nIntro.\r\n\r\n"
                      "## Linux\r\n\r\nApt.\r\n\r\n# Usage\r\n\r\n## Linux\r\n\r\nRun it.\r\n",
    "notes/Old.md": "---\ntitle: Old\n---\n# Old\n\nFirst take.\n",
    "notes/New.md": "---\ntitle: New\nsupersedes: \"[[Old]]\"\n---\n# New\n\nSecond take, see [[Guide]].\n",
    "notes/Newest.md": "---\ntitle: Newest\nsupersedes: \"[[New]]\"\n---\n# Newest\n\nThird take.\n",
    "other/Ref.md": "# Ref\n\nSee [[Guide#Usage]] and ![[Guide]].\n",
}


@pytest.fixture
def vault(make_vault):
    v = open_vault(make_vault(FILES), embedder="none")
    v.index()
    yield v
    v.close()


def test_read_page_sections_by_heading_path(vault):
    page = vault.read_page("notes/Guide.md", heading="Usage#Linux")
    assert page["content"] == "## Linux\n\nRun it.\n" and page["heading"] == ["Usage", "Linux"]
    assert vault.read_page("notes/Guide.md", heading="Linux")["content"] == "## Linux\n\nApt.\n"  # first match
    assert vault.read_page("notes/Guide.md", heading="# usage")["content"].startswith("# Usage")
    with pytest.raises(UsageError, match="no heading"):
        vault.read_page("notes/Guide.md", heading="Windows")


def test_read_page_hash_backlinks_and_versions(vault):
    page = vault.read_page("notes/Guide")  # .md may be left out
    assert page["path"] == "notes/Guide.md"
    assert page["sha256"] == hashlib.sha256((vault.root / "notes/Guide.md").read_bytes()).hexdigest()
    assert [b["path"] for b in page["backlinks"]] == ["notes/New.md", "other/Ref.md"]
    versions = vault.read_page("notes/New.md")["versions"]
    assert versions == {"supersedes": ["notes/Old.md"], "superseded_by": ["notes/Newest.md"],
                        "current": "notes/Newest.md"}
    assert vault.read_page("notes/Old.md")["versions"]["current"] == "notes/Newest.md"


def test_read_page_refuses_escapes_and_reports_missing(vault):
    for bad in ("../x.md", "/etc/passwd", "notes/../../x.md"):
        with pytest.raises(PathEscapeError):
            vault.read_page(bad)
    with pytest.raises(Exception, match="No such file|unreadable|not found"):
        vault.read_page("notes/Missing.md")


def test_read_page_without_cache(make_vault):
    v = open_vault(make_vault({"a.md": "# A\n"}, name="nocache"), embedder="none")
    page = v.read_page("a.md")
    assert page["backlinks"] is None and "wikimem index" in page["notice"]


def test_list_pages_filters_and_paging(vault):
    assert vault.list_pages(folder="notes")["total"] == 4
    assert [p["path"] for p in vault.list_pages(tag="#howto")["pages"]] == ["notes/Guide.md"]
    assert vault.list_pages(tag="howto/setup")["total"] == 1
    first = vault.list_pages(limit=2)
    rest = vault.list_pages(offset=first["next_offset"], limit=10)
    assert rest["next_offset"] is None
    assert [p["path"] for p in first["pages"] + rest["pages"]] == sorted(
        ["notes/Guide.md", "notes/Old.md", "notes/New.md", "notes/Newest.md", "other/Ref.md"])
    with pytest.raises(UsageError):
        vault.list_pages(limit=0)
    assert vault.list_pages(folder="note_")["total"] == 0  # LIKE wildcards in a folder are literal
    with pytest.raises(PathEscapeError):
        vault.list_pages(folder="../elsewhere")


def test_taxonomy_counts(vault):
    tax = vault.taxonomy()
    assert tax["notes"] == 5 and tax["folders"] == {"notes": 4, "other": 1}
    assert tax["tags"] == {"howto": 1, "howto/setup": 1}
    assert tax["statuses"]["active"] >= 1


def test_write_guards(vault):
    assert guards.check_note_path(vault, "notes\\New page.md") == "notes/New page.md"
    with pytest.raises(ReadOnlyError):
        guards.check_note_path(vault, "raw/x.md")
    with pytest.raises(UsageError):
        guards.check_note_path(vault, "notes/x.txt")
    with pytest.raises(UsageError, match="limit"):
        guards.check_content("a.md", "é" * (guards.MAX_WRITE_BYTES // 2 + 1))
    with pytest.raises(UsageError, match="frontmatter"):
        guards.check_content("a.md", "---\na: [1\n---\n")
    current = vault.read_page("notes/Old.md")["sha256"]
    assert guards.expected_hash(vault, "notes/Brand new.md", None, False) is None
    assert guards.expected_hash(vault, "notes/Old.md", "stale", True) == current
    assert guards.expected_hash(vault, "notes/Old.md", "given", False) == "given"
    with pytest.raises(ConflictError, match="read it first"):
        guards.expected_hash(vault, "notes/Old.md", None, False)
    with pytest.raises(ConflictError, match="deleted"):
        guards.expected_hash(vault, "notes/Gone.md", current, False)


def test_wikilink_and_excerpt():
    assert wikilink("concepts/Leiden Algorithm.md") == "[[Leiden Algorithm]]"
    assert wikilink("raw/assets/graph.png") == "[[graph.png]]"
    text = "word " * 200
    cut = excerpt(text)
    assert len(cut) <= 301 and cut.endswith("…") and "  " not in cut


@pytest.mark.parametrize("ch", list('|#^?:"<>[]'))
def test_a_new_note_name_a_link_cannot_carry_is_refused(vault, ch):
    """Issue 47 item 11: MCP write_page made notes whose [[link]] breaks, or that Obsidian refuses."""
    with pytest.raises(UsageError, match="cannot hold"):
        guards.check_note_path(vault, f"notes/A{ch}B.md")


def test_an_existing_note_of_such_a_name_can_still_be_replaced(vault):
    (vault.root / "notes" / "Odd: name.md").write_text("# Odd\n")  # a person's file, made outside wikimem
    assert guards.check_note_path(vault, "notes/Odd: name.md") == "notes/Odd: name.md"


@pytest.mark.parametrize("sep", ["\u2028", "\u2029"])
def test_a_line_or_paragraph_separator_in_a_name_is_refused(vault, sep):
    with pytest.raises(UsageError, match="line break"):
        guards.check_note_path(vault, f"notes/A{sep}B.md")


@pytest.mark.parametrize("folder", ["Notes", "NOTES"])
def test_a_new_folder_that_twins_an_existing_one_is_refused(vault, folder):
    """Issue 47 item 11: ``Concepts/`` beside ``concepts/`` was made (one folder on macOS/Windows)."""
    with pytest.raises(ConflictError, match="a folder named notes"):
        vault.write_page(f"{folder}/Fresh.md", "# Fresh\n\nA new note.\n")
    assert not (vault.root / folder).exists()


def test_a_new_folder_in_the_other_unicode_form_is_refused(vault):
    import unicodedata
    (vault.root / unicodedata.normalize("NFC", "Café")).mkdir()
    with pytest.raises(ConflictError, match="Unicode form"):
        vault.write_page(unicodedata.normalize("NFD", "Café") + "/Fresh.md", "# Fresh\n")
    vault.write_page(unicodedata.normalize("NFC", "Café") + "/Fresh.md", "# Fresh\n")  # the folder itself: fine
