"""compile's new entity pages on sentences a new user's sources open with a multi-word name: the first
word was cut as if it were an opening verb ("Install GRUB"), so "Secure Shell is a protocol" made a page
"Shell", "Stephen Robertson developed BM25" a page "Robertson", "Visual Studio Code is an editor" one
"Studio Code". A verb after the run says it is the sentence's subject."""
import pytest

from wikimem.api import init_vault, open_vault
from wikimem.compile.names import _candidates_in


@pytest.mark.parametrize("sentence,name", [
    ("Secure Shell is a protocol used to log onto remote systems.", "Secure Shell"),
    ("Stephen Robertson developed the probabilistic relevance framework.", "Stephen Robertson"),
    ("Visual Studio Code is an editor made by Microsoft.", "Visual Studio Code"),
    ("Apache Kafka provides a distributed commit log.", "Apache Kafka"),
    ("Debian Policy has the rules every package follows.", "Debian Policy"),
])
def test_a_name_that_opens_a_sentence_as_its_subject_is_kept_whole(sentence, name):
    assert name in [n for n, _ in _candidates_in(sentence)]


@pytest.mark.parametrize("sentence,name", [
    ("Install GRUB on the first disk.", "GRUB"),
    ("Manage Docker containers and images.", "Docker"),
    ("Download Google Chrome from the vendor.", "Google Chrome"),
])
def test_an_opening_verb_is_still_no_part_of_the_name(sentence, name):
    assert [n for n, _ in _candidates_in(sentence)] == [name]


def test_compile_makes_the_whole_name_not_its_tail(tmp_path):
    root = tmp_path / "v"
    init_vault(root)
    for i, extra in enumerate(("It encrypts every session.", "It replaced telnet on most servers.")):
        (root / "raw" / "articles" / f"s{i}.md").write_text(
            f"# s{i}\n\nSecure Shell is a protocol used to log onto remote systems. {extra}\n", encoding="utf-8")
    open_vault(root, embedder="fake").compile()
    made = sorted(p.name for p in (root / "entities").glob("*.md"))
    assert made == ["Secure Shell.md"], made


def test_a_word_the_sources_mostly_write_in_lower_case_makes_no_page(tmp_path):
    # Was: Node.js's docs made pages "Current", "Request", "String", "Testing" (title-case phrases in
    # lists and headings), though the same docs write "current", "request" in lower case far more often
    root = tmp_path / "v"
    init_vault(root)
    sources = {
        "a": "The release lines are Maintenance, Current and Next. Use the current release for new work. "
             "The current line gets features first. The tests run on Jenkins every night. The current site "
             "shows the current version. Run git to fetch the tree.",
        "b": "Pick the Current line to try features. The current version is on the site. The builds come from "
             "Jenkins too. A current binary is in the folder, next to the current notes. Clone it with Git first.",
    }
    for name, text in sources.items():
        (root / "raw" / "articles" / f"{name}.md").write_text(f"# {name}\n\n{text}\n", encoding="utf-8")
    open_vault(root, embedder="fake").compile()
    made = sorted(p.stem for p in (root / "entities").glob("*.md"))
    assert "Current" not in made, made  # 2 times capitalised inside a sentence, 8 in lower case
    assert "Jenkins" in made, made  # never written in lower case: a name
