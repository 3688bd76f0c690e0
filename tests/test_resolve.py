"""Obsidian link resolution order, ambiguity and anchors."""
from wikimem.parse import Resolver, parse_page


def _resolver(files):
    pages = {p: parse_page(p, t) for p, t in files.items() if p.endswith(".md")}
    return Resolver(files, pages), pages


def test_exact_path_beats_basename_and_alias():
    r, pages = _resolver({"a/Note.md": "", "Note.md": "", "b/x.md": "---\naliases: [Note]\n---\n"})
    assert r.lookup("a/Note")[0] == "a/Note.md"
    assert r.lookup("Note")[0] == "Note.md"
    assert r.lookup("note")[0] == "Note.md"  # case-insensitive


def test_shortest_path_wins_and_ties_are_reported():
    r, _ = _resolver({"deep/er/N.md": "", "x/N.md": "", "y/N.md": ""})
    resolved, ties = r.lookup("N")
    assert resolved == "x/N.md" and ties == ("x/N.md", "y/N.md")
    assert r.lookup("er/N") == ("deep/er/N.md", ())


def test_alias_and_attachments():
    r, _ = _resolver({"p/Long Name.md": "---\naliases: [LN]\n---\n", "assets/img.PNG": b""})
    assert r.lookup("ln")[0] == "p/Long Name.md"
    assert r.lookup("img.png")[0] == "assets/img.PNG"
    assert r.lookup("nothing") == (None, ())


def test_anchor_checks():
    files = {"T.md": "# A\n## B\n### C\ntext ^blk\n## D\n", "s.md": "[[T#A#C]] [[T#D#C]] [[T#^blk]] [[T#^nope]] [[T#b]]"}
    r, pages = _resolver(files)
    got = [l.anchor_ok for l in r.resolve_page(pages["s.md"]).links]
    assert got == [True, False, True, False, True]


def test_repeated_links_resolve_per_source_folder_and_per_anchor():
    """The resolver memoises lookups: the same relative Markdown link from two folders, the same
    page with different anchors, and a same-page link from two pages each keep their own answer."""
    files = {"a/x.md": "", "b/x.md": "", "T.md": "# Top\ntext ^blk\n",
             "a/s.md": "[x](x.md) [[T#Top]] [[T#Nope]] [[T#^blk]] [[#Local]]\n# Local\n",
             "b/s.md": "[x](x.md) [[T#Top]] [[T#Nope]] [[T#^blk]] [[#Local]]\n"}
    r, pages = _resolver(files)
    a = [(l.resolved, l.anchor_ok) for l in r.resolve_page(pages["a/s.md"]).links]
    b = [(l.resolved, l.anchor_ok) for l in r.resolve_page(pages["b/s.md"]).links]
    assert a == [("a/x.md", None), ("T.md", True), ("T.md", False), ("T.md", True), ("a/s.md", True)]
    assert b == [("b/x.md", None), ("T.md", True), ("T.md", False), ("T.md", True), ("b/s.md", False)]


def test_a_markdown_link_to_a_name_with_an_encoded_hash_resolves():
    """``[x](C%23.md#Generics)``: the href is split at its own ``#`` before it is decoded, so the
    encoded one stays in the file name (it was read as page "C", heading ".md#Generics")."""
    files = {"C#.md": "# C#\n## Generics\n", "My Note.md": "# My Note\n## Some Heading\n",
             "s.md": "[c](C%23.md#Generics) and [m](My%20Note.md#Some%20Heading)\n"}
    r, pages = _resolver(files)
    links = r.resolve_page(pages["s.md"]).links
    assert [(l.resolved, l.heading, l.anchor_ok) for l in links] == [
        ("C#.md", ("Generics",), True), ("My Note.md", ("Some Heading",), True)]
