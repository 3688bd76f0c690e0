"""Issue 26 item 11: a hit's heading is the heading of the text it shows.

Was: small sections merged into one chunk were labelled with the last heading, so a "Storage and
performance" passage was shown under "Limitations"."""
from wikimem.api import open_vault
from wikimem.parse.chunk import chunk_page, shown_heading
from wikimem.parse.page import parse_page

FAQ = ("# FAQ\n\n## Storage and performance\n\nThe cache lives in the dot folder and takes about fifty megabytes.\n\n"
       "## Limitations\n\nTables inside PDF files are not extracted yet.\n")


def test_a_merged_chunk_is_labelled_with_the_heading_its_sections_share():
    chunks = chunk_page(parse_page("faq.md", FAQ))
    assert len(chunks) == 1 and chunks[0].heading_path == ("FAQ",)


def test_a_parent_and_its_child_merged_keep_the_parent():
    text = "# Guide\n\nShort intro.\n\n## Install\n\nRun the installer.\n"
    assert [c.heading_path for c in chunk_page(parse_page("g.md", text))] == [("Guide",)]


def test_the_heading_of_a_shown_passage_is_found_inside_the_chunk():
    (chunk,) = chunk_page(parse_page("faq.md", FAQ))
    assert shown_heading(chunk.text, chunk.heading_path, "The cache lives in the dot folder and takes about "
                         "fifty megabytes.") == ("FAQ", "Storage and performance")
    assert shown_heading(chunk.text, chunk.heading_path, "Tables inside PDF files are not extracted yet.") == \
        ("FAQ", "Limitations")
    assert shown_heading(chunk.text, chunk.heading_path, "nothing like it") == ("FAQ",)


def test_search_shows_a_passage_under_its_own_heading(make_vault):
    root = make_vault({"faq.md": FAQ, "other.md": "# Other\n\nUnrelated words about gardening and tomatoes.\n"})
    v = open_vault(root, embedder="fake")
    v.index()
    hit = v.search("where does the cache live and how many megabytes", mode="vector").hits[0]
    assert hit.path == "faq.md"
    if hit.passage is not None:  # the fake embedder may pick either passage; its heading must match it
        expected = "Storage and performance" if "cache" in hit.passage else "Limitations"
        assert hit.heading_path == ("FAQ", expected)
    else:
        assert hit.heading_path == ("FAQ",)
