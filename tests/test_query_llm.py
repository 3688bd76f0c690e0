"""LLM answers against fake Ollama and OpenAI-compatible servers on 127.0.0.1: a cited answer,
an uncited one (flagged), and timeout / error / server down -> the extractive answer with a notice."""
import json
import time

import pytest

from wikimem.api import open_vault

from conftest import EXAMPLES, copy_vault, indexed_examples
from fake_http import FakeJSONServer, chat_reply, free_port

QUESTION = "Which FAISS index lets vectors be removed by id?"


class FakeLLM(FakeJSONServer):
    """Answers Ollama's /api/chat and OpenAI's /v1/chat/completions with ``reply``; ``status``,
    ``delay`` and ``models`` make it fail the ways real servers do."""

    def __init__(self):
        super().__init__()
        self.reply = "IndexIDMap2 wraps another index so vectors can be removed with remove_ids [1]."
        self.status = 200
        self.delay = 0.0
        self.models = {"tiny"}

    def respond(self, path, body):
        time.sleep(self.delay)
        if body.get("model") not in self.models:
            return 404, {"error": f"model '{body.get('model')}' not found, try pulling it first"}
        if self.status != 200:
            return self.status, {"error": "internal error"}
        return chat_reply(path, body, self.reply)


@pytest.fixture
def server():
    with FakeLLM() as s:
        yield s


@pytest.fixture(scope="module")
def vault(tmp_path_factory):
    return indexed_examples(tmp_path_factory.mktemp("llm") / "examples")


KINDS = [("ollama", ""), ("openai", "/v1")]


@pytest.mark.parametrize("kind,base", KINDS)
def test_cited_answer(server, vault, kind, base):
    answer = vault.query(QUESTION, write=False, llm=kind, llm_model="tiny", llm_url=server.url + base,
                         llm_api_key="k")
    assert answer.mode == kind and answer.answered and answer.flags == () and answer.notices == ()
    first = answer.retrieved[0]
    link = answer.citations[0].link
    assert answer.citations[0].path == first.path
    assert answer.text == f"IndexIDMap2 wraps another index so vectors can be removed with remove_ids {link}."
    path, body, auth = server.requests[-1]
    assert path == ("/api/chat" if kind == "ollama" else "/v1/chat/completions")
    prompt = body["messages"][-1]["content"]
    assert QUESTION in prompt and "[1]" in prompt
    for i, hit in enumerate(answer.retrieved, 1):  # the prompt holds the retrieved chunks, numbered
        assert f"[{i}] {hit.title}" in prompt and hit.text.strip() in prompt
    assert f"[{len(answer.retrieved) + 1}] " not in prompt  # and nothing else
    if kind == "openai":
        assert auth == "Bearer k"


@pytest.mark.parametrize("kind,base", KINDS)
def test_uncited_and_unknown_citations_are_flagged_and_shown(server, vault, kind, base):
    server.reply = ("FAISS is fast. IndexIDMap2 supports remove_ids [1]. "
                    "It was written on the moon [42]. See also [[Elasticsearch]].")
    answer = vault.query(QUESTION, llm=kind, llm_model="tiny", llm_url=server.url + base)
    assert answer.mode == kind and answer.answered
    assert any(f.startswith("uncited: FAISS is fast.") for f in answer.flags)
    assert any("[42]" in f for f in answer.flags)
    assert any("[[Elasticsearch]]" in f for f in answer.flags)
    page = (vault.root / answer.page).read_text(encoding="utf-8")
    assert "> [!warning] Unverified parts of this answer" in page and f"answer_mode: {kind}" in page
    assert "flags:" in page


def test_model_says_no_answer(server, vault):
    server.reply = "NO ANSWER"
    answer = vault.query(QUESTION, write=False, llm="ollama", llm_model="tiny", llm_url=server.url)
    assert not answer.answered and answer.citations == () and answer.mode == "ollama"


@pytest.mark.parametrize("kind,base", KINDS)
@pytest.mark.parametrize("failure", ["timeout", "error", "model missing", "server down"])
def test_failures_fall_back_to_the_extractive_answer(server, vault, kind, base, failure):
    url, model = server.url + base, "tiny"
    if failure == "timeout":
        server.delay = 2.0
    elif failure == "error":
        server.status = 500
    elif failure == "model missing":
        model = "absent"
    else:
        url = f"http://127.0.0.1:{free_port()}{base}"
    started = time.monotonic()
    # only the timeout case needs a short timeout; the others fail at once, and a loaded machine must
    # not turn a quick error answer of the in-process fake server into a timeout
    timeout = 0.5 if failure == "timeout" else 30.0
    answer = vault.query(QUESTION, write=False, llm=kind, llm_model=model, llm_url=url, llm_timeout=timeout)
    assert time.monotonic() - started < 10
    assert answer.mode == "extractive" and answer.answered and "remove_ids" in answer.text
    [notice] = [n for n in answer.notices if "answered extractively instead" in n]
    expected = {"timeout": "Timeout", "error": "500", "model missing": "not found", "server down": "failed"}[failure]
    assert expected in notice


def test_llm_without_a_model_is_a_notice_not_a_crash(vault):
    answer = vault.query(QUESTION, write=False, llm="openai")
    assert answer.mode == "extractive" and any("needs a model" in n for n in answer.notices)


def test_ingest_with_an_llm_links_known_names_and_lists_candidates(server, tmp_path):
    root = tmp_path / "v"
    copy_vault(EXAMPLES, root)
    v = open_vault(root, embedder="fake")
    v.index()
    src = tmp_path / "faiss-post.md"
    src.write_text("# Billion-scale search\n\nFAISS from FAIR searches a billion vectors on GPUs with product "
                   "quantization.\n", encoding="utf-8")
    server.reply = json.dumps({"summary": "FAISS searches a billion vectors using product quantization.",
                               "entities": ["FAISS", "Facebook AI Research", "NVIDIA"],
                               "concepts": ["product quantization", "vector search"]})
    item = v.ingest([src], llm="openai", llm_model="tiny", llm_url=server.url + "/v1").items[0]
    page = (root / item.page).read_text(encoding="utf-8")
    assert "## Summary\n\nFAISS searches a billion vectors using product quantization." in page
    assert "Names: [[FAISS]] · [[Meta AI Research]] · [[Vector Search]]" in page  # an alias counts
    assert "Candidates for new pages: NVIDIA, product quantization" in page
    assert "[[NVIDIA]]" not in page and "summary_by: llm" in page
    assert server.requests[-1][1]["messages"][-1]["content"].startswith("# Billion-scale search")


def test_ingest_llm_failure_leaves_the_page_extractive(server, tmp_path):
    root = tmp_path / "v"
    root.mkdir()
    v = open_vault(root, embedder="none")
    src = tmp_path / "note.md"
    src.write_text("# A note\n\nSome words about ranking and more words about ranking.\n", encoding="utf-8")
    server.reply = "Sure! Here is a summary: it is about ranking."  # not the JSON asked for
    item = v.ingest([src], llm="ollama", llm_model="tiny", llm_url=server.url).items[0]
    assert item.status == "added" and "did not reply with the JSON" in item.message
    page = (root / item.page).read_text(encoding="utf-8")
    assert "## Summary" not in page and "## First paragraph" in page


def test_cli_prints_flags_with_brackets_verbatim(server, vault):
    from typer.testing import CliRunner

    from wikimem.cli import app

    server.reply = "IndexIDMap2 supports remove_ids [1]. See [/Elasticsearch] for more. And [[Whoosh]] [7]."
    result = CliRunner().invoke(app, ["query", QUESTION, "-V", str(vault.root), "--no-write", "--llm", "ollama",
                                      "--llm-model", "tiny", "--llm-url", server.url],
                                env={"WIKIMEM_EMBEDDER": "fake"})
    assert result.exit_code == 0, result.output
    assert "[7], which is not one of" in result.output and "Traceback" not in result.output
    assert "uncited: See [/Elasticsearch] for more." in result.output


def test_a_wikilink_the_model_writes_itself_counts_as_a_citation(server, vault):
    server.reply = "IndexIDMap2 lets FAISS remove vectors by id [[FAISS]]."
    answer = vault.query(QUESTION, write=False, llm="openai", llm_model="tiny", llm_url=server.url + "/v1")
    assert answer.flags == () and [c.path for c in answer.citations] == ["entities/FAISS.md"]
