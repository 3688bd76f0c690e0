"""compile over pages a person wrote their own way: a ``sources`` mapping ({book: ..., url: ...}) was
replaced by compile's list, and the person's entries were lost."""
from wikimem.api import init_vault, open_vault

PAGE = ("---\ntitle: Repository\ntype: concept\nsources:\n  book: Pro Git, chapter 2\n  url: https://git-scm.com/book\n"
        "---\n# Repository\n\nMy notes.\n")


def _git_vault(tmp_path, page: str = "---\ntitle: Repository\ntype: concept\n---\n# Repository\n"):
    """A vault with one source (a line about committing) and a Repository page it speaks about."""
    root = tmp_path / "v"
    init_vault(root)
    (root / "raw" / "articles" / "git.md").write_text(
        "# git\n\n- Commit staged files to the repository with a message.\n", encoding="utf-8")
    (root / "concepts" / "Repository.md").write_text(page, encoding="utf-8")
    return root


def test_a_sources_mapping_is_kept_and_the_page_left_alone(tmp_path):
    root = _git_vault(tmp_path, PAGE)
    report = open_vault(root, embedder="fake").compile()
    assert (root / "concepts" / "Repository.md").read_text(encoding="utf-8") == PAGE
    [page] = [p for p in report.pages if p.path == "concepts/Repository.md"]
    assert page.status == "unchanged" and "not a list" in (page.notice or "")


def test_a_sources_string_is_kept_beside_the_citations(tmp_path):
    root = _git_vault(tmp_path, "---\ntitle: Repository\ntype: concept\nsources: Pro Git, chapter 2\n---\n# Repository\n")
    open_vault(root, embedder="fake").compile()
    text = (root / "concepts" / "Repository.md").read_text(encoding="utf-8")
    assert "- Pro Git, chapter 2\n- '[[raw/articles/git]] sha256:" in text


def test_a_claim_citing_source_true_is_dropped(tmp_path):
    """JSON's ``true`` is a Python int: ``"source": true`` passed as source 1."""
    import json as _json

    from fake_http import FakeJSONServer, chat_reply

    reply = _json.dumps({"claims": [{"claim": "Staged files are committed.",
                                     "quote": "Commit staged files to the repository", "source": True}],
                         "contradictions": []})

    class Always(FakeJSONServer):
        def respond(self, path, body):
            return chat_reply(path, body, reply)

    root = _git_vault(tmp_path)
    with Always() as server:
        report = open_vault(root, embedder="fake").compile(llm="openai", llm_model="m", llm_url=server.url + "/v1")
    assert any("cites source True" in d for d in report.dropped_claims), report.dropped_claims
    assert "Staged files are committed." not in (root / "concepts" / "Repository.md").read_text(encoding="utf-8")


def test_a_reply_of_thousands_of_claims_writes_a_bounded_section(tmp_path):
    """A model repeating one good claim 3,000 times (and giving 3,000 more from one source) wrote a
    section of thousands of lines; the report listed every drop."""
    import json as _json

    from fake_http import FakeJSONServer, chat_reply

    quote = "Commit staged files to the repository"
    claims = [{"claim": "Staged files are committed.", "quote": quote, "source": 1}] * 3000
    claims += [{"claim": f"Claim number {i} about committing.", "quote": quote, "source": 1} for i in range(3000)]
    reply = _json.dumps({"claims": claims, "contradictions": []})

    class Flood(FakeJSONServer):
        def respond(self, path, body):
            return chat_reply(path, body, reply)

    root = _git_vault(tmp_path)
    with Flood() as server:
        report = open_vault(root, embedder="fake").compile(llm="openai", llm_model="m", llm_url=server.url + "/v1")
    text = (root / "concepts" / "Repository.md").read_text(encoding="utf-8")
    assert text.count("Staged files are committed.") == 1
    assert text.split("wikimem:begin compiled", 1)[1].count("\n- ") == 10
    assert len(report.dropped_claims) <= 51 and "more claims dropped" in report.dropped_claims[-1]
