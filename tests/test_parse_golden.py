"""The tricky-syntax fixture vault parsed end to end and compared with golden JSON."""
from wikimem.api import open_vault
from wikimem.parse import page_to_dict

from conftest import golden


def test_tricky_vault_matches_golden(tricky_vault):
    vault = open_vault(tricky_vault)
    loaded = vault.load()
    data = {
        "pages": {path: page_to_dict(page) for path, page in sorted(loaded.pages.items())},
        "chunks": {path: [[list(c.heading_path), c.start, c.end, list(c.links), list(c.tags), list(c.blocks)]
                          for c in vault.chunks(page)] for path, page in sorted(loaded.pages.items())},
        "skipped": sorted([s.path, s.kind] for s in loaded.skipped),
    }
    golden("tricky", data)


def test_bad_files_are_reported_not_fatal(tricky_vault):
    loaded = open_vault(tricky_vault).load()
    kinds = {s.path: s.kind for s in loaded.skipped}
    assert kinds["notes/latin1.md"] == "not_utf8"
    assert kinds["notes/binary.md"] == "binary"
    assert kinds["notes/huge.md"] == "too_large"
    assert kinds["sub/loop"] == "symlink_loop"
    assert not any("ShouldNotBeSeen" in l.target for p in loaded.pages.values() for l in p.links)
    assert "ignored/skip.md" not in loaded.pages and "notes/scratch.tmp.md" not in loaded.pages


def test_code_never_yields_links_or_tags(tricky_vault):
    page = open_vault(tricky_vault).load().pages["code/code.md"]
    targets = {l.target for l in page.links}
    assert targets == {"CalloutLink", "Target"}
    assert {t.name for t in page.tags} == {"callouttag"}


def test_malformed_yaml_keeps_body(tricky_vault):
    pages = open_vault(tricky_vault).load().pages
    bad = pages["notes/bad-yaml.md"]
    assert bad.frontmatter.error and "malformed YAML" in bad.frontmatter.error
    assert bad.title == "Still parsed" and [l.target for l in bad.links] == ["Target"]
    assert pages["notes/not-a-mapping.md"].frontmatter.error == "frontmatter is not a key: value mapping"
    assert pages["notes/no-close.md"].frontmatter.raw is None


def test_size_limit_is_configurable(tricky_vault):
    loaded = open_vault(tricky_vault, max_file_mb=10).load()
    assert "notes/huge.md" in loaded.pages


def test_a_missing_golden_file_fails_and_is_not_written():
    import pytest

    from conftest import GOLDEN
    with pytest.raises(pytest.fail.Exception, match="--update-golden"):
        golden("no-such-golden-file", {"a": 1})
    assert not (GOLDEN / "no-such-golden-file.json").exists()


def test_wikimem_environment_is_cleared_for_every_test(request):
    import os
    chosen = {"WIKIMEM_STORE", "WIKIMEM_DATABASE_URL"} if request.config.getoption("--store") == "postgres" else set()
    assert not [k for k in os.environ if k.startswith("WIKIMEM_") and k not in chosen]
