"""wikimem query: extractive answers with [[page#heading]] citations, the relevance bar, and the
write-back to queries/ (one page per question, updated when asked again)."""
import json

import pytest
from typer.testing import CliRunner

from wikimem.api import init_vault, open_vault
from wikimem.cli import app
from wikimem.errors import UsageError
from wikimem.qa.writeback import parse_source
from wikimem.qa.answer import chunk_hash

from conftest import indexed_examples

runner = CliRunner()

SOURCE = """---
title: Notes on Okapi BM25
---
# Notes on Okapi BM25

BM25 ranks documents for a keyword query by term frequency and inverse document frequency.

## Parameters

The parameter k1 controls term-frequency saturation and is usually set between 1.2 and 2.0.
The parameter b controls document-length normalisation; its usual default is 0.75.

## History

BM25 was developed by Stephen Robertson and Karen Spärck Jones for the Okapi system at City University London.
"""


def test_acceptance_ingest_index_query_reworded(tmp_path, monkeypatch):
    """The issue's check, end to end through the CLI, in a fresh vault."""
    monkeypatch.setenv("WIKIMEM_EMBEDDER", "fake")
    src = tmp_path / "okapi-notes.md"
    src.write_text(SOURCE, encoding="utf-8")
    root = tmp_path / "vault"
    assert runner.invoke(app, ["init", str(root)]).exit_code == 0
    monkeypatch.chdir(root)
    first = runner.invoke(app, ["ingest", str(src)])
    assert first.exit_code == 0, first.output
    second = runner.invoke(app, ["ingest", str(src)])
    assert second.exit_code == 0 and "unchanged" in second.output and "nothing to do" in second.output
    raw = [p for p in (root / "raw").rglob("*") if p.is_file()]
    assert [p.relative_to(root).as_posix() for p in raw] == ["raw/articles/okapi-notes.md"]
    assert raw[0].read_bytes() == src.read_bytes()
    assert runner.invoke(app, ["index", "."]).exit_code == 0

    asked = runner.invoke(app, ["query", "What is the usual default value of the b parameter in BM25?"])
    assert asked.exit_code == 0, asked.output
    assert "0.75" in asked.output and "[[" in asked.output
    pages = sorted((root / "queries").glob("*.md"))
    assert len(pages) == 1
    text = pages[0].read_text(encoding="utf-8")
    assert "its usual default is 0.75" in text
    assert "[[raw/articles/okapi-notes#Parameters]]" in text

    again = runner.invoke(app, ["query", "What's the usual default for b in BM25?"])
    assert again.exit_code == 0, again.output
    assert "updated" in again.output
    assert sorted((root / "queries").glob("*.md")) == pages
    page = open_vault(root, embedder="fake").parse_file(pages[0].relative_to(root).as_posix())
    front = page.frontmatter.data
    assert front["type"] == "query" and front["answer_mode"] == "extractive"
    assert front["question"] == "What is the usual default value of the b parameter in BM25?"
    assert front["also_asked"] == ["What's the usual default for b in BM25?"]
    assert front["asked"] <= front["updated"]
    link, digest = parse_source(front["sources"][0])
    assert link == "[[raw/articles/okapi-notes#Parameters]]" and len(digest) == 64

    stem = pages[0].stem
    log = (root / "log.md").read_text(encoding="utf-8")
    assert f"· query · queries/{stem}.md" in log and f"· query (updated) · queries/{stem}.md" in log
    index = (root / "index.md").read_text(encoding="utf-8")
    assert len([line for line in index.splitlines() if stem in line]) == 1
    assert index.index(stem) > index.index("## Queries")


BUNDLED = ["queries/How does hybrid search combine rankings.md", "queries/什么是倒排索引.md"]


def _query_pages(vault):
    return sorted(p.relative_to(vault.root).as_posix() for p in (vault.root / "queries").glob("*.md"))


@pytest.fixture
def examples(tmp_path):
    return indexed_examples(tmp_path / "examples")


def test_answer_cites_the_chunk_it_quotes_with_its_hash(examples):
    answer = examples.query("Which FAISS index lets vectors be removed by id?", write=False)
    assert answer.answered and answer.page is None and answer.mode == "extractive"
    assert "remove_ids" in answer.text
    cite = next(c for c in answer.citations if c.path == "entities/FAISS.md")
    assert cite.link == "[[entities/FAISS#Index types]]" and cite.link in answer.text
    chunk = next(h for h in answer.retrieved if h.path == "entities/FAISS.md" and "remove_ids" in h.text)
    assert cite.chunk_sha256 == chunk_hash(chunk.text)
    for paragraph in answer.text.split("\n\n"):
        assert paragraph.rstrip().endswith("]]")  # every sentence ends with its citation
    assert _query_pages(examples) == BUNDLED


def test_no_answer_is_said_plainly_and_nothing_is_cited_or_written(examples):
    for question in ("What is the capital of Australia?", "How do I bake sourdough bread?"):
        answer = examples.query(question)
        assert not answer.answered and answer.citations == () and answer.page is None
        assert answer.to_dict()["answer"].startswith("The vault has no answer")
    assert _query_pages(examples) == BUNDLED
    result = runner.invoke(app, ["query", "What is the capital of Australia?", "-V", str(examples.root)],
                           env={"WIKIMEM_EMBEDDER": "fake"})
    assert result.exit_code == 1 and "no answer" in result.output


def test_answers_are_not_built_from_earlier_answers(examples):
    first = examples.query("What does the k1 parameter of BM25 control?")
    assert first.page_status == "created"
    second = examples.query("What does the k1 parameter of BM25 control?")
    assert second.page == first.page and second.page_status == "updated"
    assert all(not c.path.startswith("queries/") for c in second.citations)
    assert _query_pages(examples) == sorted(BUNDLED + [first.page])
    # a later search on the topic finds the query page
    hits = examples.search("k1 parameter control", limit=20, type="query").hits
    assert first.page in [h.path for h in hits]


def test_a_different_question_gets_its_own_page(examples):
    a = examples.query("What is a postings list?")
    b = examples.query("Where does Vincent Traag work?")
    assert a.page != b.page and a.page_status == b.page_status == "created"
    assert "Leiden University" in b.text


def test_update_keeps_what_a_person_added(examples):
    first = examples.query("What is a postings list?")
    path = examples.root / first.page
    text = path.read_text(encoding="utf-8").replace("type: query\n", "type: query\nreviewed_by: ana  # checked\n")
    path.write_text(text, encoding="utf-8")
    second = examples.query("what is a postings list")
    assert second.page == first.page and second.page_status == "updated"
    after = path.read_text(encoding="utf-8")
    assert "reviewed_by: ana  # checked" in after and "also_asked" not in after  # same words: not a new wording


def test_filters_and_bad_input(examples):
    answer = examples.query("What prefixes does multilingual-e5 need?", write=False, folder="memories")
    assert answer.answered and {c.path for c in answer.citations} == {"memories/2026-10-02-e5-prefixes.md"}
    with pytest.raises(UsageError):
        examples.query("   ")
    bad = runner.invoke(app, ["query", "x", "-V", str(examples.root), "--since", "yesterday"],
                        env={"WIKIMEM_EMBEDDER": "fake"})
    assert bad.exit_code == 2 and "Traceback" not in bad.output


def test_query_json(examples):
    result = runner.invoke(app, ["query", "What value of k does reciprocal rank fusion use?", "--no-write",
                                 "-V", str(examples.root), "--json"], env={"WIKIMEM_EMBEDDER": "fake"})
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert data["answered"] and data["page"] is None and data["mode"] == "extractive"
    assert any(c["path"] == "concepts/Reciprocal Rank Fusion.md" for c in data["citations"])
    assert "k = 60" in data["answer"]


def test_a_changed_cited_chunk_shows_in_the_hashes(examples):
    from wikimem.qa.writeback import check_sources

    answer = examples.query("Which FAISS index lets vectors be removed by id?")
    assert {status for _, status in check_sources(examples, answer.page)} == {"ok"}
    faiss = examples.root / "entities/FAISS.md"
    faiss.write_text(faiss.read_text(encoding="utf-8").replace("remove_ids", "remove_ids()"), encoding="utf-8")
    statuses = dict(check_sources(examples, answer.page))
    assert statuses["[[entities/FAISS#Index types]]"] == "changed"
    faiss.unlink()
    assert set(dict(check_sources(examples, answer.page)).values()) == {"missing"}


def test_a_racing_writer_makes_the_query_update_instead(examples, monkeypatch):
    """Another process files the same question between our check and our write: the create is
    refused (the file exists now) and the retry updates that page; still one page."""
    from wikimem.qa import writeback

    answer = examples.query("What is a postings list?", write=False)
    real = writeback.write_page
    raced = []

    def racing(ctx, rel, text, **kwargs):
        if not raced:  # the other process's write lands first
            raced.append(rel)
            real(ctx, rel, text, reason="query")
        return real(ctx, rel, text, **kwargs)

    monkeypatch.setattr(writeback, "write_page", racing)
    result = writeback.write_back(examples.ctx, answer)
    assert raced == [result.page] and result.page_status == "updated"
    assert _query_pages(examples) == sorted(BUNDLED + [result.page])


def test_an_alias_makes_a_reworded_question_the_same(examples):
    """'RRF' is an alias of the Reciprocal Rank Fusion page: the vault's own synonym."""
    first = examples.query("What value of k does reciprocal rank fusion use?")
    again = examples.query("Which k does RRF use?")
    assert again.page == first.page and again.page_status == "updated"
    faiss = examples.query("Who released FAISS?")
    whoosh = examples.query("Who maintains Whoosh?")
    assert faiss.page_status == whoosh.page_status == "created" and faiss.page != whoosh.page


def test_a_transcript_answer_cites_the_turn_and_names_the_speaker(tmp_path):
    from conftest import FIXTURES

    root = tmp_path / "v"
    init_vault(root)
    vault = open_vault(root, embedder="fake")
    vault.ingest([FIXTURES / "ingest" / "chat.md"], kind="transcript")
    vault.index()
    answer = vault.query("Who will present the refinement phase?", write=False)
    note = "raw/transcripts/Planning the reading group 264ebb3a"
    assert answer.text.startswith(f"Bo: I can present the refinement phase. [[{note}#^t2]]")
    assert answer.citations[0].block == "t2"


def test_an_answer_quoting_a_secret_is_given_but_not_filed(tmp_path):
    root = tmp_path / "v"
    init_vault(root)
    (root / "entities" / "Deploy.md").write_text(
        "# Deploy\n\nThe deploy bucket key is AKIAZ7VRSQ5TJN2DOE4B and the bucket lives in eu-west-1.\n",
        encoding="utf-8")
    vault = open_vault(root, embedder="fake")
    vault.index()
    answer = vault.query("What is the deploy bucket key?")
    assert answer.answered and "AKIAZ7VRSQ5TJN2DOE4B" in answer.text
    assert answer.page is None and any("no query page was written" in n for n in answer.notices)
    assert list((root / "queries").iterdir()) == []
    assert [p.name for p in (root / "queries").parent.rglob("*.tmp")] == []


def test_a_query_page_like_an_earlier_one_is_reported_and_superseded_on_request(tmp_path, monkeypatch):
    """The writer's conflict check runs on query write-back: a new query page answering from the
    same chunk as an earlier one is reported as similar, and --supersede marks the earlier one replaced."""
    monkeypatch.setenv("WIKIMEM_EMBEDDER", "fake")
    root = tmp_path / "vault"
    init_vault(root)
    (root / "concepts").mkdir(exist_ok=True)
    (root / "concepts/BM25.md").write_text(SOURCE, encoding="utf-8")
    v = open_vault(root)
    v.index()
    first = v.query("What is the usual default value of the b parameter in BM25?")
    second = v.query("Which setting normalises document length in Okapi ranking, and its typical value?")
    assert first.page and second.page and first.page != second.page, (first.page, second.page)
    assert [p for p, _ in second.similar] == [first.page]
    assert v.read_page(first.page)["frontmatter"].get("status", "active") == "active"

    result = runner.invoke(app, ["query", "Name the BM25 length normalisation parameter and its default",
                                 "--vault", str(root), "--supersede", "--json"])
    assert result.exit_code == 0, result.output
    out = json.loads(result.output)
    old = out["similar"][0]["path"]
    assert any(f"supersedes {old}" in n for n in out["notices"]), out["notices"]
    assert v.read_page(old)["frontmatter"]["status"] == "superseded"


@pytest.mark.parametrize("question", ["What does the -force flag do?", "What does path: mean for the force flag?",
                                      'Does "-force" overwrite tag:#files?'])
def test_a_question_is_never_read_as_search_syntax(make_vault, question):
    """Issue 47 item 10: ``-force`` excluded every note holding "force" (no answer), ``path:`` filtered."""
    root = make_vault({"SCHEMA.md": "# S\n",
                       "cli/Flags.md": "# Flags\n\nThe -force flag overwrites existing files without asking first.\n",
                       "Other.md": "# Other\n\nA note about gardens and compost heaps.\n"})
    v = open_vault(root, embedder="fake")
    v.index()
    answer = v.query(question, write=False)
    assert answer.answered and "overwrites existing files" in answer.text, answer
    assert [c.path for c in answer.citations] == ["cli/Flags.md"]


def test_a_pasted_paragraph_as_a_question_gets_a_short_title_and_keeps_the_whole_question(examples):
    # Was: an 8,000-character question became the page's title and its # heading, whole
    import yaml
    question = "Which FAISS index lets vectors be removed by id? " * 160
    answer = examples.query(question)
    text = (examples.root / answer.page).read_text(encoding="utf-8")
    front = yaml.safe_load(text.split("---\n")[1])
    assert len(front["title"]) <= 200 and front["title"].endswith("…")
    assert front["title"].startswith("Which FAISS index lets vectors be removed by id?")
    assert front["question"] == question.strip() or " ".join(front["question"].split()) == " ".join(question.split())
    assert f"# {front['title']}\n" in text
    again = examples.query(question)  # the same question finds its page again
    assert again.page == answer.page
