"""Without vectors, a hit points at the paragraph that matched, under its heading (issue 36 part 3),
and listings show snippets without raw heading text."""
from __future__ import annotations

from wikimem.api import open_vault
from wikimem.search.fusion import lexical_passage

NOTE = ("# Sync\n\nSync keeps your notes the same on every device you own and use.\n\n"
        "## Version history\n\nEvery change is kept for a year, and you can open any earlier copy.\n\n"
        "## Selective sync\n\nChoose which folders and file types travel, for example "
        "only Markdown and images, leaving audio recordings at home.\n")


def test_a_lexical_hit_points_at_the_matching_paragraph_and_its_heading(make_vault):
    # Was: --mode lexical pointed at the chunk's first line, and its obsidian:// link had no heading
    v = open_vault(make_vault({"SCHEMA.md": "# S\n", "Sync.md": NOTE}), embedder="none",
                   chunk_max=2000, chunk_min=1000)  # one chunk for the whole note
    v.index()
    hit = v.search("audio recordings", mode="lexical").hits[0]
    assert hit.path == "Sync.md"
    lines = (v.root / "Sync.md").read_text().splitlines()
    assert "audio recordings" in lines[hit.line - 1]
    assert hit.heading_path[-1] == "Selective sync" and "Selective%20sync" in hit.uri
    assert hit.snippet().startswith("Choose which folders")


def test_a_heading_right_above_its_paragraph_is_not_the_passage(make_vault):
    """Issue 47 item 6: in a short note (one chunk) whose heading has no blank line below it, a
    lexical hit said line 1, and its snippet began with the raw ``## Deep part``."""
    note = "# Zq note\nIntro line.\n\nFiller paragraph one.\n\n## Deep part\nThe word zqxatomic lives here.\n"
    v = open_vault(make_vault({"SCHEMA.md": "# S\n", "Zq note.md": note}), embedder="none")
    v.index()
    hit = v.search("zqxatomic", mode="lexical").hits[0]
    assert hit.path == "Zq note.md" and hit.line == 7
    assert hit.heading_path[-1] == "Deep part" and hit.uri.endswith("%23Deep%20part")
    assert hit.snippet().startswith("The word zqxatomic") and "##" not in hit.snippet()
    assert lexical_passage("# T\nIntro.\n\n## H\nBody zq.", "intro") is None  # under the first heading: none


def test_the_first_paragraph_needs_no_passage_and_a_query_of_no_words_none():
    text = "Alpha beta gamma.\n\nDelta epsilon."
    assert lexical_passage(text, "alpha") is None
    assert lexical_passage(text, "epsilon") == "Delta epsilon."
    assert lexical_passage(text, "???") is None


def test_snippets_leave_out_the_heading_lines_they_start_with():
    from wikimem.model import Hit
    hit = Hit("c", "a.md", "A", ("A", "Why"), "## Why\n\nBecause it works.", 1.0, {}, ("lexical",), "u", "note",
              "active", ())
    assert hit.snippet() == "Because it works."
