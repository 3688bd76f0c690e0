"""`wikimem search tar --folder ./commands` (a path as the shell completes it) and `--tag cli/` (as
Obsidian's tag pane shows a parent) answered "no results", while `--folder commands/` and the
query operator `tag:cli/` found the pages. The filters take the spellings a user types: a leading
`./`, backslashes, a `#`, a trailing `/`, spaces around."""
from __future__ import annotations

import pytest

from wikimem.api import open_vault


@pytest.fixture(scope="module")
def vault(tmp_path_factory):
    root = tmp_path_factory.mktemp("v")
    (root / "SCHEMA.md").write_text("# Schema\n")
    (root / "commands/common").mkdir(parents=True)
    (root / "commands/common/tar.md").write_text("---\ntags: [cli/compression]\n---\n# tar\n\ntar archives files\n")
    (root / "notes").mkdir()
    (root / "notes/other.md").write_text("# other\n\ntar is also named here\n")
    v = open_vault(root, embedder="fake")  # hybrid: both sides filtered
    v.index()
    yield v
    v.close()


@pytest.mark.parametrize("folder", ["commands", "./commands", "commands/", "./commands/common/", " commands ",
                                    "commands\\common", "/commands"])
def test_folder_spellings(vault, folder):
    assert [h.path for h in vault.search("tar", folder=folder).hits] == ["commands/common/tar.md"]


@pytest.mark.parametrize("tag", ["cli", "#cli", "cli/", "#cli/compression", " cli/compression/ "])
def test_tag_spellings(vault, tag):
    assert [h.path for h in vault.search("tar", tags=[tag]).hits] == ["commands/common/tar.md"]


def test_the_whole_vault_and_a_folder_that_is_not_there(vault):
    assert len(vault.search("tar", folder="./").hits) == 2
    assert vault.search("tar", folder="./nope").hits == ()
