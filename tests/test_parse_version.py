"""A cache parsed by another version of the parser reads every note again once (parse.PARSE_VERSION):
an upgrade's parser or chunker fix reaches the notes nobody edited, and keeps their vectors."""
from wikimem.api import open_vault
from wikimem.parse import PARSE_VERSION

NOTES = {"SCHEMA.md": "# Schema\n", "C#.md": "# C#\n\n## Generics\n\nType parameters.\n",
         "notes/a.md": "# A\n\nSee [the generics](../C%23.md#Generics) and [[b]].\n",
         "notes/b.md": "# B\n\nbeta text about something else entirely.\n"}


def _set_parse_version(v, value):
    with v.ctx.cache.writing() as m:
        m.set_meta(parse_version=value)


def test_a_cache_of_another_parse_version_reparses_every_note_once_and_keeps_its_vectors(make_vault):
    v = open_vault(make_vault(dict(NOTES)), embedder="fake")
    first = v.index()
    assert first.added == 4 and v.ctx.cache.meta().get("parse_version") == PARSE_VERSION
    _set_parse_version(v, PARSE_VERSION - 1)  # as an older wikimem left it
    again = open_vault(v.root, embedder="fake").index()
    assert again.changed == 4 and again.added == 0
    assert any("parsed differently" in n for n in again.notices)
    assert again.embedded_now == 0  # the chunks' texts are the same: their vectors are kept
    assert open_vault(v.root, embedder="fake").ctx.cache.meta().get("parse_version") == PARSE_VERSION
    third = open_vault(v.root, embedder="fake").index()
    assert third.changed == 0 and not any("parsed differently" in n for n in third.notices)


def test_a_cache_from_before_parse_versions_reparses_quietly(make_vault):
    v = open_vault(make_vault(dict(NOTES)), embedder="fake")
    v.index()
    _set_parse_version(v, None)
    again = open_vault(v.root, embedder="fake").index()
    assert again.changed == 4 and not any("parsed differently" in n for n in again.notices)
    links = {l.target: l.resolved for l in open_vault(v.root, embedder="fake").pages()["notes/a.md"].links}
    assert links.get("../C#.md") == "C#.md" or "C#.md" in links.values()


def test_a_huge_code_block_gives_the_embedder_its_start_and_the_lexical_index_all_of_it(make_vault):
    """One 300,000-character code block was one chunk embedded as ~200 windows (33 s); its start now
    stands for it, and a word at its end is still found by the lexical index."""
    from wikimem.model import EMBED_MAX_CHARS
    code = "\n".join(f"step_{i} = compute({i})" for i in range(15000)) + "\nzorblaxend = 1\n"
    v = open_vault(make_vault({"SCHEMA.md": "# Schema\n", "big.md": f"# Big\n\nThe build script.\n\n```python\n{code}```\n"}),
                   embedder="fake")
    v.index()
    chunks = [c for c in v.ctx.chunks(v.ctx.parse_file("big.md"))]
    assert max(len(c.text) for c in chunks) > 200_000  # the block is not cut: one chunk
    assert all(len(c.index_text()) <= EMBED_MAX_CHARS for c in chunks)
    assert [h.path for h in v.search("zorblaxend", mode="lexical").hits] == ["big.md"]
