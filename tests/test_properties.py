"""Hypothesis properties of the parser and the chunker."""
import re

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from wikimem.parse import chunk_page, parse_page
from wikimem.parse import frontmatter as fm
from wikimem.parse.chunk import _SENTENCE_END, _line_starts

WORDS = st.sampled_from(["alpha", "beta", "gamma", "vector", "graph", "检索", "向量", "笔记", "the", "a", "of"])
LINK = st.builds(lambda t, a: f"[[{t}{'|' + a if a else ''}]]", st.sampled_from(["Page", "Other Note", "中文页"]),
                 st.sampled_from(["", "shown text", "别名"]))
PUNCT = st.sampled_from([".", "。", "!", "？", ",", ""])


@st.composite
def sentence(draw):
    parts = draw(st.lists(st.one_of(WORDS, LINK, st.just("#tag"), st.just("`code [[x]]`")), min_size=1, max_size=25))
    return " ".join(parts) + draw(PUNCT)


@st.composite
def block(draw):
    kind = draw(st.sampled_from(["para", "para", "para", "heading", "fence", "table", "list", "callout"]))
    if kind == "para":
        return " ".join(draw(st.lists(sentence(), min_size=1, max_size=12)))
    if kind == "heading":
        return "#" * draw(st.integers(1, 4)) + " " + draw(WORDS) + " " + draw(WORDS)
    if kind == "fence":
        lines = draw(st.lists(sentence(), min_size=1, max_size=40))
        return "```\n" + "\n".join(lines) + "\n```"
    if kind == "table":
        rows = draw(st.lists(st.tuples(WORDS, LINK), min_size=1, max_size=30))
        return "| a | b |\n|---|---|\n" + "\n".join(f"| {a} | {b.replace('|', chr(92) + '|')} |" for a, b in rows)
    if kind == "list":
        return "\n".join("- " + s for s in draw(st.lists(sentence(), min_size=1, max_size=20)))
    return "> [!note] Title\n" + "\n".join("> " + s for s in draw(st.lists(sentence(), min_size=1, max_size=20)))


@st.composite
def note(draw):
    blocks = draw(st.lists(block(), min_size=0, max_size=14))
    body = "\n\n".join(blocks) + draw(st.sampled_from(["", "\n", "\n\n"]))
    keys = draw(st.dictionaries(st.sampled_from(["title", "tags", "zeta", "aliases", "status", "x-custom"]),
                                st.one_of(WORDS, st.lists(WORDS, max_size=3), st.integers()), max_size=5))
    front = "".join(fm._dump_key(k, v) for k, v in keys.items())
    return (f"---\n{front}---\n" if draw(st.booleans()) else "") + body


def _fences(body):
    spans, start = [], None
    for i, line_start in enumerate(_line_starts(body)):
        if body.startswith("```", line_start):
            if start is None:
                start = line_start
            else:
                spans.append((start, body.find("\n", line_start) if body.find("\n", line_start) >= 0 else len(body)))
                start = None
    return spans


FAST = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@FAST
@given(note())
def test_chunks_tile_the_body(text):
    page = parse_page("concepts/p.md", text)
    chunks = chunk_page(page)
    assert "".join(c.text for c in chunks) == page.body if page.body.strip() else chunks == []
    for c in chunks:
        assert page.body[c.start:c.end] == c.text
        assert c.text.strip()


@FAST
@given(note())
def test_no_chunk_cuts_a_link_or_a_fence(text):
    page = parse_page("concepts/p.md", text)
    chunks = chunk_page(page)
    cuts = {c.start for c in chunks[1:]}
    for m in re.finditer(r"\[\[[^\]\n]*\]\]", page.body):
        assert not any(m.start() < cut < m.end() for cut in cuts), "a cut inside a wikilink"
    for s, e in _fences(page.body):
        assert not any(s < cut < e for cut in cuts), "a cut inside a fence"


def _longest_sentence(text):
    """The longest stretch of ``text`` with no sentence end inside it (the chunker may cut only there)."""
    cuts = [0] + [m.end() for m in _SENTENCE_END.finditer(text)] + [len(text)]
    return max(b - a for a, b in zip(cuts, cuts[1:]))


@FAST
@given(note())
def test_chunks_respect_the_size_bound_except_atomic_blocks(text):
    page = parse_page("concepts/p.md", text)
    for c in chunk_page(page):
        if len(c.text) <= 800:
            continue
        rest = c.text
        if rest.startswith("#"):  # a heading line always stays with the block after it
            rest = rest.split("\n", 1)[1] if "\n" in rest else ""
        rest = rest.strip()
        atomic = "```" in rest or "|---|" in rest or rest.startswith(">")
        assert len(rest) <= 800 or atomic or _longest_sentence(rest) > 800, \
            f"a {len(c.text)}-char chunk that could have been cut: {c.text[:120]!r}"


@FAST
@given(note(), st.sampled_from(["\n", "\r\n"]))
def test_parse_write_parse_round_trip(tmp_path_factory, text, newline):
    from wikimem.api import open_vault
    root = tmp_path_factory.mktemp("rt")
    (root / "n.md").write_bytes(text.replace("\n", newline).encode("utf-8"))
    # every frontmatter edit goes through the writer door (logged, cache updated): no model needed here
    vault = open_vault(root, embedder="none")
    before = vault.parse_file("n.md")
    if before.frontmatter.error:
        return
    data = before.frontmatter.data
    if data:  # re-setting a key to its own value must not change a byte
        key = next(iter(data))
        vault.update_frontmatter("n.md", {key: data[key]})
        assert (root / "n.md").read_bytes() == text.replace("\n", newline).encode("utf-8")
    after = vault.update_frontmatter("n.md", {"x-added": "new value"})  # a real edit
    written = (root / "n.md").read_bytes()
    if newline == "\r\n" and "\n" in text:
        assert b"\n" not in written.replace(b"\r\n", b""), "line endings must stay CRLF"
    assert after.body == before.body
    shift = after.body_line - before.body_line  # frontmatter grew: lines move, nothing else may change
    assert [(l.target, l.kind, l.line + shift if l.line is not None else None) for l in before.links] == \
        [(l.target, l.kind, l.line) for l in after.links if l.key != "x-added"]
    assert [(t.name, t.line + shift if t.line is not None else None) for t in before.tags] == \
        [(t.name, t.line) for t in after.tags]
    assert [(h.level, h.text) for h in after.headings] == [(h.level, h.text) for h in before.headings]
    assert dict(after.frontmatter.data) == {**data, "x-added": "new value"}
    assert list(after.frontmatter.data)[:len(data)] == list(data)


@FAST
@given(note())
def test_chunk_ids_are_stable(text):
    a = [c.id for c in chunk_page(parse_page("concepts/p.md", text))]
    b = [c.id for c in chunk_page(parse_page("concepts/p.md", text))]
    assert a == b and len(set(a)) == len(a)


# -- arbitrary values for every frontmatter key wikimem interprets (issue 9 item 2) -----------------
INTERPRETED = ("title", "type", "status", "tags", "aliases", "alias", "supersedes", "created", "updated", "date",
               "modified", "chunk_window", "chunk_stride", "kind")
SCALARS = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(), st.text(max_size=20), st.dates(),
                    st.datetimes(), st.sampled_from(["2024-02-30", "2024-13-45", "two", "maybe", "[[Old]]", "#tag",
                                                     "transcript", "superseded", "entity", "0", "-3", ""]))
VALUES = st.recursive(SCALARS, lambda inner: st.lists(inner, max_size=3) |
                      st.dictionaries(st.text(max_size=5), inner, max_size=3), max_leaves=8)
RAW_YAML = st.sampled_from([  # YAML text no dumper writes
    "2024-02-30", "2023-02-29 10:00:00", "&a [*a]", "&a {k: *a}", "[" * 300 + "]" * 300, "!!binary aGk=",
    "!!set {a, b}", "9" * 5000, ".nan", "-.inf", "[[Old]]", "[[Old]], [[New]]", "{a: [1, {b: c}]}", "~",
    "'" + "x" * 100_000 + "'", "!!timestamp 2024-02-30", "*undefined", "[1, 2", "|\n  block\n  text",
    "!!python/object/apply:os.system [ls]", "? [a]\n  : b", "!!float nan", "0x1F", "1_000", "12:30:00"])


@st.composite
def hostile_frontmatter(draw):
    keys = draw(st.lists(st.sampled_from(INTERPRETED), min_size=1, max_size=5, unique=True))
    lines = []
    for key in keys:
        if draw(st.booleans()):
            lines.append(f"{key}: {draw(RAW_YAML)}\n")
        else:
            lines.append(fm._dump_key(key, draw(VALUES)))
    return "".join(lines)


def _is_date_or_none(value):
    from wikimem.parse.page import valid_date
    return value is None or valid_date(value) == value


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(hostile_frontmatter(), st.sampled_from(["concepts/p.md", "raw/transcripts/t.md"]),
       st.sampled_from(["# H\n\nbody text.\n", "**Bob**: Yes.\n\n**Al**: no\n\n**Bob**: Yes.\n\n**Al**: ok\n", ""]))
def test_any_value_of_an_interpreted_key_is_a_problem_not_a_crash(front, path, body):
    import json

    from wikimem.model import PAGE_TYPES, page_from_record, page_to_record
    from wikimem.parse.page import STATUSES

    page = parse_page(path, f"---\n{front}---\n{body}")
    assert isinstance(page.title, str) and page.title
    assert page.type in PAGE_TYPES and page.status in STATUSES
    assert _is_date_or_none(page.created) and _is_date_or_none(page.updated)
    assert all(isinstance(a, str) and a for a in page.aliases)
    assert all(isinstance(s, str) and s for s in page.supersedes)
    assert all(isinstance(t.name, str) and t.name for t in page.tags)
    assert all(isinstance(e, str) for e in page.errors)
    chunks = chunk_page(page)
    assert len({c.id for c in chunks}) == len(chunks)
    record = json.loads(json.dumps(page_to_record(page), allow_nan=False))  # what the manifest stores
    assert page_from_record(record) == page
