"""query over a compiled page: the compiled section's source headings are wikilinks
(``### [[raw/articles/ssh|ssh]]``), and the answer cited them as ``[[entities/SSH#[[raw/articles/ssh/ssh]]]]``:
a link inside a link, broken in Obsidian and for lint. The heading is cited as Obsidian matches it."""
from wikimem.api import init_vault, open_vault

SOURCE = ("# ssh\n\n> Secure Shell is a protocol used to securely log onto remote systems.\n\n"
          "- SSH tunneling: forward a specific port to a remote host over an encrypted channel.\n")


def _compiled(tmp_path):
    """Two ssh sources compiled: entities/SSH.md holds a section a source's wikilink heads."""
    root = tmp_path / "v"
    init_vault(root)
    for name in ("ssh", "ssh-tunnels"):
        (root / "raw" / "articles" / f"{name}.md").write_text(SOURCE.replace("# ssh", f"# {name}"), encoding="utf-8")
    v = open_vault(root, embedder="fake")
    v.compile()
    return root, v


def test_a_heading_holding_a_wikilink_is_cited_without_one(tmp_path):
    root, v = _compiled(tmp_path)
    page = (root / "entities" / "SSH.md").read_text(encoding="utf-8")
    assert "### [[raw/articles/ssh|ssh]]" in page  # the case: a heading that is a wikilink
    answer = v.query("What is SSH tunneling used for?", folder="entities")
    assert answer.answered and answer.citations
    for c in answer.citations:
        inner = c.link[2:-2]
        assert "[[" not in inner and "]]" not in inner, c.link
    assert any(c.path == "entities/SSH.md" and c.heading for c in answer.citations), answer.citations
    findings = [f for f in v.lint(["queries"], select=["WM1"]).findings if f.path.startswith("queries/")]
    assert findings == [], [f.message for f in findings]


def test_a_compiled_sentence_is_quoted_without_its_source_citation_as_words(tmp_path):
    """"- It runs over SSH. [[raw/articles/ssh]]": the answer quoted "It runs over SSH. ssh", the
    citation read as a word of the sentence."""
    root, v = _compiled(tmp_path)
    answer = v.query("What is SSH tunneling used for?", folder="entities", write=False)
    assert answer.answered and "encrypted channel" in answer.text
    assert "channel: ssh" not in answer.text and "channel. ssh" not in answer.text, answer.text
