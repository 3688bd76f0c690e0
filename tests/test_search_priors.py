"""Issue 52: a text too short to carry meaning does not win by its vector alone, and a filed
answer (queries/) does not rank above the note it cites."""
from __future__ import annotations

from wikimem.api import open_vault
from wikimem.search.priors import content_chars, short_factor

HOTKEYS = ("# Hotkeys\n\nHotkeys let you run a command from the keyboard. Open Settings, pick Hotkeys, find the "
           "command in the list and press the combination you want to use for it.\n\nRemove a combination "
           "with the cross beside it; a combination used twice is shown in red.\n")
TABS = "# Tabs\n\nOpen several notes side by side in tabs, drag a tab to split the window, and pin a tab to keep it open.\n"


def _paths(v, query):
    return [h.path for h in v.search(query, limit=5).hits]


def test_content_chars_leaves_headings_and_punctuation_out_and_weighs_han():
    assert content_chars("## Key names and keyboard shortcuts\n\nKeyboard shortcuts:\n") == len("Keyboardshortcuts")
    assert content_chars("# 快捷键\n\n修改快捷键") == 5 * 5
    assert short_factor(0) == 0.0 and short_factor(10_000) == 1.0


def test_a_lone_short_list_item_is_not_the_passage_that_wins(make_vault):
    """The style guide's section "Key names and keyboard shortcuts" holds only "- Keyboard
    shortcuts:": as its page's best passage it put the page above Hotkeys, which BM25 ranks first."""
    guide = ("# Style guide\n\nWrite in plain words, short sentences and the active voice. Name buttons as they "
             "appear on screen and spell out each step of a task for the reader.\n\n"
             "## Key names and keyboard shortcuts\n\n- Keyboard shortcuts:\n- Key names:\n")
    v = open_vault(make_vault({"Style guide.md": guide, "Hotkeys.md": HOTKEYS, "Tabs.md": TABS}), embedder="fake")
    v.index()
    try:
        assert [h.path for h in v.search("keyboard shortcuts hotkeys", limit=3, mode="lexical").hits][0] == "Hotkeys.md"
        hits = v.search("keyboard shortcuts hotkeys", limit=3).hits
        assert hits[0].path == "Hotkeys.md"
        guide_hit = next(h for h in hits if h.path == "Style guide.md")
        assert guide_hit.passage != "- Keyboard shortcuts:"
    finally:
        v.close()


def test_a_chunk_with_almost_no_text_keeps_a_share_of_its_vector_score(make_vault):
    v = open_vault(make_vault({"Keys.md": "# Key names and keyboard shortcuts\n\nKeyboard shortcuts:\n",
                               "Hotkeys.md": HOTKEYS, "Tabs.md": TABS}), embedder="fake")
    v.index()
    try:
        hits = v.search("keyboard shortcut combination", limit=3).hits
        assert hits[0].path == "Hotkeys.md"  # before: Keys.md, its vector (little more than its heading) nearest
        keys = next(h for h in hits if h.path == "Keys.md")
        assert "short_text" in keys.steps
        assert abs(keys.components["short"] - len("Keyboardshortcuts") / 40) < 1e-3
        # a word the short page holds is still evidence: lexically it wins, and stays first
        assert _paths(v, "How do I change keyboard shortcuts")[0] == "Keys.md"
    finally:
        v.close()


SYNC = ("# Sync plans\n\nSync Standard stores 1 GB of notes and takes files up to 5 MB each.\n\nSync Plus stores "
        "10 GB of notes; the maximum file size on Sync Plus is 200 MB.\n\nBoth plans keep version history, for "
        "one month on Standard and twelve months on Plus.\n")
PUBLISH = "# Publish\n\nPublish turns notes into a website. Custom domains, password protection and search are included.\n"


def test_a_filed_answer_ranks_below_the_note_it_cites(make_vault):
    v = open_vault(make_vault({"Sync plans.md": SYNC, "Publish.md": PUBLISH}), embedder="fake")
    v.index()
    try:
        v.query("What is the maximum file size on Sync Plus?", write=True)
        v.index()
        query_page = "queries/What is the maximum file size on Sync Plus.md"
        hits = v.search("maximum file size Sync Plus", limit=5).hits
        assert [h.path for h in hits][:2] == ["Sync plans.md", query_page]
        assert hits[1].components["query_below"] == "Sync plans.md" and "query_below" in hits[1].steps
    finally:
        v.close()


def test_a_filed_answer_whose_note_is_not_found_keeps_its_place(make_vault):
    v = open_vault(make_vault({"Sync plans.md": SYNC, "Publish.md": PUBLISH}), embedder="fake")
    v.index()
    try:
        v.query("What is the maximum file size on Sync Plus?", write=True)
        v.index()
        hits = v.search("maximum file size Sync Plus", limit=5, folder="queries").hits
        assert [h.path for h in hits] == ["queries/What is the maximum file size on Sync Plus.md"]
        assert "query_below" not in hits[0].steps
    finally:
        v.close()


def test_a_pages_description_is_indexed_with_its_title_not_as_a_link_name(make_vault):
    """npm's manual says what each page is for only in its frontmatter: "npm-pack" is "Create a
    tarball from a package"; its body speaks of "pack" and ".tgz" files."""
    pack = ("---\ntitle: npm-pack\ndescription: Create a tarball from a package\n---\n# npm-pack\n\n"
            "For anything that's installable, this command will fetch it to the cache and copy the file "
            "to the current working directory as `<name>-<version>.tgz`.\n")
    other = ("# npm-publish\n\nPublishes a package to the registry so that it can be installed by name. "
             "A package is a folder with a package.json, a gzipped file or a URL; see also [[Create a tarball from a package]].\n")
    v = open_vault(make_vault({"npm-pack.md": pack, "npm-publish.md": other}), embedder="fake")
    v.index()
    try:
        hits = v.search("create a tarball", mode="lexical").hits
        assert [h.path for h in hits][:1] == ["npm-pack.md"]
        assert hits[0].title == "npm-pack"
        # a description is no name: the link is unresolved, as before
        out, _ = v.cache.manifest.linked_pages("npm-publish.md")
        assert "npm-pack.md" not in out
    finally:
        v.close()


def test_the_recency_prior_does_not_lift_a_filed_answer_back_above_its_note(make_vault):
    """A query page is newer than the notes it cites: the opt-in recency prior must not undo the fold."""
    dated = "---\nupdated: 2020-01-01\n---\n" + SYNC
    v = open_vault(make_vault({"Sync plans.md": dated, "Publish.md": "---\nupdated: 2021-01-01\n---\n" + PUBLISH}),
                   embedder="fake", recency_weight=1.0)
    v.index()
    try:
        v.query("What is the maximum file size on Sync Plus?", write=True)
        v.index()
        hits = v.search("maximum file size Sync Plus", limit=5).hits
        assert [h.path for h in hits][:2] == ["Sync plans.md", "queries/What is the maximum file size on Sync Plus.md"]
        assert "recency" in hits[1].steps and "query_below" in hits[1].steps
    finally:
        v.close()
