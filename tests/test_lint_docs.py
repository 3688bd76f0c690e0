"""Every rule has a docs/rules page and every page a rule; each page's bad example yields the
rule's code and its good example does not (so docs and rules cannot drift apart)."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from conftest import write_vault
from wikimem.api import open_vault
from wikimem.lint import all_rules

DOCS = Path(__file__).parent.parent / "docs" / "rules"
_FILE = re.compile(r"^(`{3,})markdown file=(\S.*?)\n(.*?)\n\1$", re.S | re.M)


def examples(code: str) -> dict[str, dict[str, str]]:
    text = (DOCS / f"{code}.md").read_text(encoding="utf-8")
    out = {}
    for name, after in (("Bad example", "Good example"), ("Good example", "Fix")):
        section = text.split(f"\n## {name}\n", 1)[1].split(f"\n## {after}\n", 1)[0]
        out[name] = {m.group(2): m.group(3) + "\n" for m in _FILE.finditer(section)}
    return out


def test_every_rule_has_a_page_and_every_page_a_rule():
    pages = {p.stem for p in DOCS.glob("WM*.md")}
    assert pages == set(all_rules())


def test_codes_slugs_and_docstrings():
    rules = all_rules()
    assert len({r.slug for r in rules.values()}) == len(rules)
    for code, r in rules.items():
        assert re.fullmatch(r"WM[1-5]\d\d", code)
        assert "Example" in (r.check.__doc__ or ""), f"{code} docstring has no example"
        assert (DOCS / f"{code}.md").read_text(encoding="utf-8").startswith(f"# {code} {r.slug}\n")


def _codes(tmp_path, files: dict[str, str], code: str, name: str) -> list:
    root = write_vault(tmp_path / name, files)
    v = open_vault(root, embedder="fake")
    try:
        if code == "WM503":
            v.index()  # the near-duplicate rule reads vectors; lint itself never embeds
        return v.lint(select=[code]).findings
    finally:
        v.close()


@pytest.mark.parametrize("code", sorted(all_rules()))
def test_doc_examples(tmp_path, code):
    ex = examples(code)
    assert ex["Bad example"] and ex["Good example"], f"{code}.md needs both examples"
    bad = _codes(tmp_path, ex["Bad example"], code, "bad")
    good = _codes(tmp_path, ex["Good example"], code, "good")
    assert any(f.code == code for f in bad), f"{code}: the bad example yields nothing"
    assert not [f for f in good if f.code == code], f"{code}: the good example yields {good}"
