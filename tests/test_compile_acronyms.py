"""compile: a name and the acronym a source defines it by are one page (Node.js's docs made both
"TSC" and "Technical Steering Committee"); the acronym is the page's alias."""
import pytest

from wikimem.api import init_vault, open_vault
from wikimem.compile.acronyms import pairs, spells
from wikimem.parse import parse_page


@pytest.mark.parametrize("text,pair", [
    ("The Technical Steering Committee (TSC) meets weekly.", ("Technical Steering Committee", "TSC")),
    ("WebAssembly System Interface (WASI) is supported.", ("WebAssembly System Interface", "WASI")),
    ("The OpenJS Foundation Cross-Project Council (CPC) decides.", ("Cross-Project Council", "CPC")),
    ("Keys use Elliptic Curve Diffie-Hellman (ECDH) here.", ("Elliptic Curve Diffie-Hellman", "ECDH")),
    ("Ask the TSC (Technical Steering Committee) first.", ("Technical Steering Committee", "TSC")),
    ("Certificate Authorities (CAs) sign them.", ("Certificate Authorities", "CA")),
])
def test_a_definition_pairs_the_name_with_its_acronym(text, pair):
    assert pairs(text) == [pair]


@pytest.mark.parametrize("text", [
    "Use the Git Tool (see the docs).",
    "Read the Release Notes (RN2) first.",  # R N 2: the expansion holds no 2
    "The Build Server (BSX) failed.",
])
def test_what_does_not_spell_the_acronym_is_no_pair(text):
    assert pairs(text) == []
    assert not spells(["Build", "Server"], "BSX")


def test_compile_makes_one_page_for_a_name_and_its_acronym(tmp_path):
    root = tmp_path / "v"
    init_vault(root)
    texts = ("The Technical Steering Committee (TSC) approves every release of the runtime.",
             "Proposals go to the TSC for a vote. The TSC meets every week in public.",
             "The TSC publishes its minutes. Technical Steering Committee members serve two years.")
    for i, text in enumerate(texts):
        (root / "raw" / "articles" / f"s{i}.md").write_text(f"# s{i}\n\n{text}\n", encoding="utf-8")
    open_vault(root, embedder="fake").compile()
    made = sorted(p.name for p in (root / "entities").glob("*.md"))
    assert made == ["Technical Steering Committee.md"], made
    page = parse_page("entities/Technical Steering Committee.md",
                      (root / "entities" / "Technical Steering Committee.md").read_text(encoding="utf-8"))
    assert page.aliases == ("TSC",) or list(page.aliases) == ["TSC"]
    body = (root / "entities" / "Technical Steering Committee.md").read_text(encoding="utf-8")
    assert "meets every week" in body  # a sentence naming only the acronym is cited on the page


def test_no_second_page_beside_one_the_vault_has_for_the_acronym(tmp_path):
    root = tmp_path / "v"
    init_vault(root)
    (root / "entities" / "TSC.md").write_text("---\ntype: entity\n---\n# TSC\n\nThe committee.\n", encoding="utf-8")
    for i in range(2):
        (root / "raw" / "articles" / f"s{i}.md").write_text(
            f"# s{i}\n\nThe Technical Steering Committee (TSC) approves release {i} of the runtime.\n", encoding="utf-8")
    open_vault(root, embedder="fake").compile()
    assert sorted(p.name for p in (root / "entities").glob("*.md")) == ["TSC.md"]
