"""`wikimem compile --llm` against a loopback server replaying hand-written recordings
(tests/fixtures/compile_llm.json, keyed by a hash of model, messages and schema; an unrecorded
request fails the test). The gates decide what is written, never the model: each adversarial
recording is caught by one of them, and every failure falls back to the extractive section."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import write_vault
from fake_http import ReplayLLM
from wikimem.api import init_vault, open_vault
from wikimem.compile.gate import quote_found

from test_compile import GIT, HUB, LAB

RECORDINGS = json.loads((Path(__file__).parent / "fixtures" / "compile_llm.json").read_text(encoding="utf-8"))
PAGE = "entities/GitHub.md"
PERSON = "---\ntitle: GitHub\ntype: entity\n---\n# GitHub\n\nA person's note: GitHub hosts code for many projects.\n"
URLS = {"ollama": "", "openai": "/v1"}


@pytest.fixture
def vault(tmp_path):
    root = tmp_path / "vault"
    init_vault(root)
    write_vault(root, {PAGE: PERSON})
    srcs = write_vault(tmp_path / "in", {"git.md": GIT, "gh.md": HUB, "glab.md": LAB})
    v = open_vault(root, embedder="none")
    assert v.ingest([str(srcs / n) for n in ("gh.md", "git.md", "glab.md")]).ok
    yield v
    v.close()


@pytest.fixture
def server():
    with ReplayLLM(RECORDINGS) as s:
        yield s


def run(vault, server, model, kind="ollama", timeout=30.0):
    report = vault.compile(llm=kind, llm_model=model, llm_url=server.url + URLS[kind], llm_timeout=timeout,
                           pages=[PAGE])
    assert server.replayed, "the model was not asked"
    text = (vault.root / PAGE).read_text(encoding="utf-8")
    assert "A person's note: GitHub hosts code for many projects." in text  # never lost, whatever the reply
    return report, text


def section(text: str) -> str:
    return text.split("<!-- wikimem:begin compiled", 1)[1].split("<!-- wikimem:end compiled -->", 1)[0]


@pytest.mark.parametrize("kind", ["ollama", "openai"])
def test_claims_with_quotes_are_written_with_citations(vault, server, kind):
    report, text = run(vault, server, "good", kind)
    body = section(text)
    assert report.mode == kind and not report.notices and not report.dropped_claims
    assert "- gh works with GitHub from the command line. (“Work with GitHub from the command line.”) " \
           "[[raw/articles/gh]]" in body
    # a quote that matches after normalising case and whitespace (a run of >= 6 words) passes too
    assert "- git clones repositories from GitHub. (“clone a remote git repository from GitHub”) " \
           "[[raw/articles/git#Usage]]" in body
    assert "sha256:" in text.split("\n---\n", 1)[0]
    _, body_sent, _ = server.requests[-1]
    prompt = json.dumps(body_sent["messages"])
    assert "A person's note" not in prompt  # the model never sees the page's other text
    assert (body_sent.get("format") or body_sent["response_format"]["json_schema"]["schema"])["required"]


def test_quote_not_in_source_is_dropped(vault, server):
    report, text = run(vault, server, "quote-missing")
    assert "founded in 2008" not in text
    assert any("its quote is not in raw/articles/gh.md" in d for d in report.dropped_claims)
    assert "gh works with GitHub from the command line." in section(text)


def test_claim_without_quote_is_dropped(vault, server):
    report, text = run(vault, server, "no-quote")
    assert "GitHub is the largest host" not in text and "GitHub is popular" not in text
    assert sum("has no quote" in d for d in report.dropped_claims) == 2
    assert "gh works with GitHub from the command line." in section(text)


def test_a_restated_page_is_not_written(vault, server):
    report, text = run(vault, server, "restate")
    assert "is not a short claim" in " ".join(report.dropped_claims)
    assert "GitHub is a code host. It was restated" not in text
    assert text.count("# GitHub") == 1


def test_contradiction_whose_page_quote_does_not_exist_is_dropped(vault, server):
    report, text = run(vault, server, "bad-contradiction")
    assert report.contradictions == [] and report.dropped_contradictions == 1
    assert "gh works with GitHub from the command line." in section(text)


def test_a_real_contradiction_from_the_model_is_held_for_review(vault, server):
    report, text = run(vault, server, "contradiction")
    [c] = report.contradictions
    assert c.page_sentence == "A person's note: GitHub hosts code for many projects."
    assert text.split("\n")[c.page_line - 1] == c.page_sentence  # its line in the page as it is now
    assert c.source == "raw/articles/gh.md" and c.source_sentence == "Work with GitHub from the command line."
    assert c.found_by == "ollama"
    assert "Work with GitHub from the command line." not in section(text)  # held, not written
    assert "contradicts the page" in " ".join(report.dropped_claims)


@pytest.mark.parametrize("model,why", [("malformed", "did not return the claims as JSON"),
                                        ("server-error", "answered 500"),
                                        ("all-bad", "no claim of ollama passed the gates")])
def test_failures_fall_back_to_the_extractive_section(vault, server, model, why):
    report, text = run(vault, server, model)
    assert any(why in n for n in report.notices), report.notices
    assert "- Work with GitHub from the command line. [[raw/articles/gh]]" in section(text)


def test_a_stall_past_the_timeout_falls_back(vault, server):
    report, text = run(vault, server, "stall", timeout=0.5)
    assert any("failed" in n and "extractive" in n for n in report.notices), report.notices
    assert "- Work with GitHub from the command line. [[raw/articles/gh]]" in section(text)


def test_quote_gate():
    source = "Work with GitHub from the command line.\nClone a remote Git repository from GitHub over SSH."
    assert quote_found("Work with GitHub from the command line.", source)
    assert quote_found("clone  a REMOTE git\nrepository from github", source)  # 7 words, normalised
    assert not quote_found("from GitHub over SSH", source.replace("SSH", "ssh"))  # 4 words, not exact
    assert not quote_found("Clone a remote Git repository from GitLab", source)
    assert quote_found("Cafe\u0301 menu is served daily here", "Caf\u00e9 menu is served daily here.")  # NFC
