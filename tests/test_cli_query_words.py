"""A search or a question is taken as typed: a word that starts like one of the command's short
options with a value attached that could not be that option's ("-kubernetes": an exclusion, not
``-k ubernetes``; "-Vim": not ``-V im``) is a query word; "-k3", "-k 3", "-V DIR" stay options."""
import json

import pytest
from typer.testing import CliRunner

from wikimem.cli import app

runner = CliRunner()


@pytest.fixture
def vault(make_vault, monkeypatch):
    monkeypatch.setenv("WIKIMEM_EMBEDDER", "fake")
    root = make_vault({"SCHEMA.md": "# Schema\n",
                       "a.md": "# Archive\n\nHow to archive logs with tar and gzip.\n",
                       "b.md": "# Kube\n\nArchive old kubernetes manifests before an upgrade.\n",
                       "c.md": "# Vim\n\nVim can archive nothing; it edits.\n"})
    assert runner.invoke(app, ["index", str(root)]).exit_code == 0
    return root


def _search(*args):
    got = runner.invoke(app, ["search", *args, "--mode", "lexical", "--json"])
    return got, (json.loads(got.output) if got.output.strip().startswith("{") else {})


@pytest.mark.parametrize("words,gone", [(["archive", "-kubernetes"], "b.md"), (["archive", "-Vim"], "c.md"),
                                        (["-kubernetes", "archive"], "b.md")])
def test_a_word_like_a_short_option_with_a_value_it_cannot_take_is_a_query_word(vault, words, gone):
    got, data = _search(*words, "-V", str(vault))
    assert got.exit_code == 0, got.output
    paths = [h["path"] for h in data["hits"]]
    assert "a.md" in paths and gone not in paths
    assert data["query"] == " ".join(words)  # in the order typed


def test_short_options_with_their_values_stay_options(vault):
    for args in (["archive", "-k1", "-V", str(vault)], ["archive", "-k", "1", f"-V{vault}"]):
        got, data = _search(*args)
        assert got.exit_code == 0, got.output
        assert len(data["hits"]) == 1


def test_a_question_keeps_its_words_in_order(vault):
    got = runner.invoke(app, ["query", "why", "-Vim", "over", "emacs", "-V", str(vault), "--no-write", "--json"])
    assert got.exit_code in (0, 1), got.output  # 1: not answered, which this vault cannot
    assert json.loads(got.output)["question"] == "why -Vim over emacs"
