"""NFC and NFD spellings of one word are one word (issue 47 item 9): a macOS file name or a keyboard
that types "café" as "cafe" + U+0301 finds the note written with "é", in search, query and a page
named on the command line."""
from __future__ import annotations

import unicodedata

import pytest

from wikimem.api import open_vault

NFC = unicodedata.normalize("NFC", "café")
NFD = unicodedata.normalize("NFD", "café")


@pytest.fixture
def vault(make_vault):
    assert NFC != NFD
    root = make_vault({
        "SCHEMA.md": "# S\n",
        f"{NFC} au lait.md": f"# {NFC} au lait\n\nA {NFC} au lait is coffee with hot milk, the Paris breakfast.\n",
        f"{NFD} crème.md": f"# {NFD} crème\n\nThe {NFD} crème of Zurich is a long espresso.\n",
        "Tea.md": "# Tea\n\nTea is steeped leaves.\n"})
    v = open_vault(root, embedder="fake")
    v.index()
    return v


@pytest.mark.parametrize("typed", [NFC, NFD], ids=["nfc", "nfd"])
def test_either_form_finds_both_notes(vault, typed):
    for mode in ("lexical", "hybrid"):
        paths = {h.path for h in vault.search(typed, mode=mode).hits}
        assert any(p.startswith(NFC) for p in paths) and any(p.startswith(NFD) for p in paths), (mode, paths)
    assert {h.path for h in vault.search(f'"{typed} au lait"', mode="lexical").hits} == {f"{NFC} au lait.md"}


@pytest.mark.parametrize("typed", [NFC, NFD], ids=["nfc", "nfd"])
def test_query_answers_from_either_form(vault, typed):
    answer = vault.query(f"What is a {typed} au lait?", write=False)
    assert answer.answered and "hot milk" in answer.text


@pytest.mark.parametrize("name", [f"{NFD} au lait", f"{NFD} au lait.md", f"{NFC} crème"], ids=["nfd", "nfd-md", "nfc"])
def test_a_page_named_in_the_other_form_resolves(vault, name):
    history = vault.history(name)
    assert history.versions[0].path in (f"{NFC} au lait.md", f"{NFD} crème.md")
    assert unicodedata.normalize("NFC", history.versions[0].path).startswith(unicodedata.normalize("NFC", name)[:9])
