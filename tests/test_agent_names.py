"""Issue 27 item 21 / issue 28 item 4: names an agent may not write, each refused with its reason."""
import pytest

from wikimem.agent.guards import check_note_path
from wikimem.agent.pages import read_page
from wikimem.api import open_vault
from wikimem.errors import PathEscapeError, ReadOnlyError, UsageError


@pytest.fixture
def vault(make_vault):
    v = open_vault(make_vault({"raw/x.md": "# X\n", "concepts/a.md": "# A\n"}), embedder="none")
    v.index()
    return v


@pytest.mark.parametrize("name, error, words", [
    (".hidden.md", UsageError, "hidden"),
    ("a/.hidden.md", UsageError, "hidden"),
    (".md", UsageError, "hidden"),
    ("..md", UsageError, "hidden"),
    ("x/..md", UsageError, "hidden"),
    ("a/ .md", UsageError, "needs a name"),
    ("new\nline.md", UsageError, "line break"),
    ("tab\there.md", UsageError, "line break"),
    ("file:///etc/x.md", UsageError, "URL"),
    ("http://example.org/x.md", UsageError, "URL"),
    ("RAW/x.md", ReadOnlyError, "immutable"),
    ("Raw/new.md", ReadOnlyError, "immutable"),
    ("../outside.md", PathEscapeError, "escapes the vault"),
])
def test_names_an_agent_cannot_write(vault, name, error, words):
    with pytest.raises(error, match=words):
        check_note_path(vault, name)


@pytest.mark.parametrize("name", ["concepts/b.md", "a note with spaces.md", "中文/笔记.md", "./concepts/c.md"])
def test_ordinary_names_pass(vault, name):
    assert check_note_path(vault, name)


def test_the_writer_door_refuses_raw_in_any_case(vault):
    with pytest.raises(ReadOnlyError):
        vault.write_page("RAW/y.md", "# Y\n")


def test_a_page_read_by_two_spellings_is_one_page(vault):
    # Was: ./raw/x.md reported type note while raw/x.md reported source
    assert read_page(vault, "./raw/x.md")["type"] == read_page(vault, "raw/x.md")["type"] == "source"
    assert read_page(vault, "./raw/x.md")["path"] == "raw/x.md"
