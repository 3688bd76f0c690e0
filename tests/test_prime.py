"""prime_context: the session-start briefing (Python API and `wikimem prime`)."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from wikimem.agent.prime import count_tokens, fit, terms
from wikimem.api import open_vault

ROOT = Path(__file__).parent.parent

FILES = {
    "SCHEMA.md": "# Schema\n\n## Domain\nBeekeeping: hives, queens, varroa mites and honey harvests.\n",
    "memories/persona.md": "---\ntitle: Who I am\ntype: memory\nkind: persona\n---\nI keep six hives in Kent.\n",
    "memories/rule.md": "---\ntitle: Always cite\ntype: memory\nkind: instruction\n---\nCite the page for "
                        "every claim about treatments.\n",
    "memories/fact.md": "---\ntitle: Honey yield\ntype: memory\n---\nThe 2025 harvest was 40 kg.\n",
    "concepts/Varroa.md": "---\ntitle: Varroa\n---\n# Varroa\n\nVarroa mites weaken colonies; treat with oxalic "
                          "acid in winter when the colony is broodless.\n",
    "concepts/Queen rearing.md": "# Queen rearing\n\nGraft larvae younger than a day into queen cups.\n",
    "concepts/蜂蜜.md": "# 蜂蜜\n\n蜂蜜的收获在夏末进行，取蜜前要检查蜂巢的储蜜量。\n",
    "projects/hivelog.md": "# hivelog\n\nThe hivelog app records inspections of each hive.\n",
}


@pytest.fixture
def vault(make_vault):
    v = open_vault(make_vault(FILES), embedder="fake")
    v.index()
    yield v
    v.close()


def test_token_count_counts_cjk_per_character():
    assert count_tokens("蜂蜜收获") == 4
    assert count_tokens("abcd" * 10) == 10
    assert count_tokens("蜂蜜 abcd") == 2 + 2
    text = "word " * 400
    assert count_tokens(fit(text, 50)) <= 50 and fit(text, 50).endswith("…")
    assert fit("short", 50) == "short"


def test_terms_drop_stop_words_and_stem():
    assert terms("How do I treat the varroa mites?") == {"treat", "varroa", "mite"}
    assert terms("蜂蜜什么时候收获？") == {"蜂蜜", "收获"}


def test_briefing_has_domain_memories_and_relevant_pages(vault):
    b = vault.prime_context(cwd="/home/me/code/hivelog", prompt="when should I treat varroa mites?")
    kinds = [i.kind for i in b.items]
    assert kinds[:3] == ["persona", "instruction", "fact"]  # standing orders first, then the plain memory
    assert "memories/fact.md" in [i.path for i in b.items if i.kind == "fact"]
    pages = [i.path for i in b.pages]
    assert pages[0] == "concepts/Varroa.md"  # the prompt's page outranks the project's
    assert "projects/hivelog.md" in pages
    assert "concepts/Queen rearing.md" not in pages
    assert b.domain.startswith("Beekeeping")
    text = b.to_text()
    assert "[[Varroa]]" in text and "[[hivelog]]" in text
    assert text.count("I keep six hives in Kent.") == 1 and "[[persona]]" not in text  # the fact once, no slug
    assert not b.empty and b.tokens <= 1500


def test_chinese_prompt(vault):
    b = vault.prime_context(prompt="蜂蜜什么时候收获？")
    assert [i.path for i in b.pages] == ["concepts/蜂蜜.md"]


def test_nothing_relevant_is_an_empty_briefing_that_says_so(vault):
    b = vault.prime_context(cwd="/srv/kubernetes-operator", prompt="upgrade the helm chart for postgres")
    assert b.empty and b.pages == ()
    assert "No vault page clears the relevance bar" in b.to_text()
    assert b.to_dict()["empty"] is True


@pytest.mark.parametrize("budget", [60, 120, 250, 1500])
def test_budget_is_respected(vault, budget):
    b = vault.prime_context(cwd="/x/hivelog", prompt="varroa mites treatment oxalic acid queen larvae",
                            budget_tokens=budget)
    assert count_tokens(b.to_text()) <= budget
    assert b.tokens == count_tokens(b.to_text())


def test_small_budget_drops_lower_items_first(vault):
    big = vault.prime_context(cwd="/x/hivelog", prompt="varroa mites", budget_tokens=1500)
    small = vault.prime_context(cwd="/x/hivelog", prompt="varroa mites", budget_tokens=90)
    assert len(small.items) < len(big.items)
    assert [i.path for i in small.items] == [i.path for i in big.items][:len(small.items)]


def test_never_raises(make_vault, tmp_path):
    broken = make_vault({"SCHEMA.md": b"\xff\xfe not utf-8", "concepts/A.md": "# A\n\nAlpha.\n"}, name="broken")
    b = open_vault(broken, embedder="fake").prime_context(cwd="/x/y", prompt="alpha")
    assert any("SCHEMA.md" in n for n in b.notices)
    assert isinstance(b.to_text(), str)
    empty = tmp_path / "empty"
    empty.mkdir()
    b = open_vault(empty, embedder="fake").prime_context(prompt="anything at all")
    assert b.empty


def _prime(*args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "wikimem.cli", "prime", *args], capture_output=True, text=True,
                          env={**os.environ, "WIKIMEM_EMBEDDER": "fake", "PYTHONPATH": str(ROOT), **(env or {})},
                          timeout=120)


def test_cli_formats(vault):
    hook = _prime("--vault", str(vault.root), "--cwd", "/x/hivelog", "--prompt", "varroa", "--format", "claude-hook")
    assert hook.returncode == 0, hook.stderr
    data = json.loads(hook.stdout)
    assert data["hookSpecificOutput"]["hookEventName"] == "SessionStart"
    assert "[[Varroa]]" in data["hookSpecificOutput"]["additionalContext"]
    as_json = _prime("--vault", str(vault.root), "--cwd", "/x/hivelog", "--json")
    assert json.loads(as_json.stdout)["items"][0]["kind"] == "persona"
    text = _prime("--cwd", "/x/hivelog", env={"WIKIMEM_VAULT": str(vault.root)})
    assert text.stdout.startswith("# Vault briefing") and "[[hivelog]]" in text.stdout


def test_cli_hook_survives_a_missing_vault(tmp_path):
    hook = _prime("--vault", str(tmp_path / "nope"), "--cwd", "/x/y", "--format", "claude-hook")
    assert hook.returncode == 0
    assert "vault unavailable" in json.loads(hook.stdout)["hookSpecificOutput"]["additionalContext"]
    plain = _prime("--vault", str(tmp_path / "nope"), "--cwd", "/x/y")
    assert plain.returncode == 1 and "not found" in plain.stderr and "Traceback" not in plain.stderr
    bad = _prime("--vault", str(tmp_path), "--format", "yaml")
    assert bad.returncode == 2


def test_a_generic_folder_name_or_the_vault_itself_is_no_project(vault, make_vault, tmp_path):
    # Was: `prime --cwd .../src` matched pages about "src" with relevance 1.0, before the prompt's
    from wikimem.agent.prime import project_name
    repo = tmp_path / "hivelog"
    (repo / "src" / "deep").mkdir(parents=True)
    (repo / "pyproject.toml").write_text("[project]\nname = 'hivelog'\n")
    assert project_name(str(repo / "src" / "deep")) == "hivelog"  # the project root's name
    assert project_name(str(tmp_path / "loose" / "src")) is None  # generic, and no project root above
    assert project_name(str(vault.root / "concepts"), vault.root) is None  # inside the vault
    b = vault.prime_context(cwd=str(vault.root), prompt="varroa mites")
    assert b.project is None and [p.path for p in b.pages][:1] == ["concepts/Varroa.md"]


def test_the_init_placeholder_domain_is_not_briefed(make_vault):
    # Was: every briefing started with "A personal knowledge base. Replace this paragraph with ..."
    from wikimem.api import init_vault
    root = make_vault({})
    init_vault(root)
    v = open_vault(root, embedder="fake")
    b = v.prime_context(prompt="anything")
    assert "Replace this paragraph" not in b.text and b.domain == ""


def test_two_pages_of_one_name_are_briefed_by_their_paths(make_vault):
    # Was: both listed as [[Varroa]], one link that reaches only one of them
    v = open_vault(make_vault({**FILES, "archive/Varroa.md": "# Varroa\n\nOld varroa mites notes on oxalic acid.\n"}),
                   embedder="fake")
    v.index()
    b = v.prime_context(prompt="varroa mites oxalic acid")
    links = [p.wikilink for p in b.pages if p.title == "Varroa" or p.path.endswith("Varroa.md")]
    assert sorted(links) == ["[[archive/Varroa]]", "[[concepts/Varroa]]"], links
    assert "[[archive/Varroa]]" in b.text and "[[concepts/Varroa]]" in b.text
