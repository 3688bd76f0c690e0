"""Obsidian's search operators (wikimem/search/query_syntax.py): the parser table, the matcher,
and hypothesis properties (never raises; plain text reads as itself)."""
import datetime as dt

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from wikimem.parse import parse_page
from wikimem.search.query_syntax import Clause, PageFacts, parse_query


def fmt(clause: Clause) -> str:
    """A clause as a short string, so the table below stays readable."""
    cnf = " & ".join("|".join(alts) for alts in clause.terms)
    text = {"word": f"w:{clause.value}", "phrase": f"p:{clause.value}", "line": f"line:({cnf})",
            "section": f"section:({cnf})", "all": f"all:({cnf})",
            "property": f"[{clause.key}]" if not clause.op else
            f"[{clause.key}{':' if clause.op == '=' else clause.op}{clause.value}]"}.get(
        clause.kind, f"{clause.kind}:{clause.value}")
    return ("-" if clause.negated else "") + text


def summary(query: str) -> tuple[str, tuple[str, ...]]:
    parsed = parse_query(query)
    return parsed.text, tuple(" OR ".join("&".join(fmt(c) for c in m) for m in g) for g in parsed.groups)


TABLE = [
    # plain text, kept as typed (the gaps between words too), Chinese untouched
    ("foo bar", "foo bar", ()),
    ("  foo   bar  ", "foo   bar", ()),
    ("", "", ()),
    ("   ", "", ()),
    ("项目管理 进度", "项目管理 进度", ()),
    ("项目\u3000管理", "项目\u3000管理", ()),
    ("C++ #tag a/b e-mail", "C++ #tag a/b e-mail", ()),
    # tag:, nested and case-insensitive
    ("tag:#a/b", "", ("tag:a/b",)),
    ("tag:a/b", "", ("tag:a/b",)),
    ("TAG:Project", "", ("tag:project",)),
    ("Tag:#项目 进度", "进度", ("tag:项目",)),
    ('tag:"a b"', "", ("tag:a b",)),
    ("tag:a tag:b", "", ("tag:a", "tag:b")),
    ("tag:(a OR b)", "", ("tag:a OR tag:b",)),
    ("tag:(a b)", "", ("tag:a", "tag:b")),
    ("-tag:draft notes", "notes", ("-tag:draft",)),
    ("tag:#", "tag:#", ()),
    ("tag:", "tag:", ()),
    ("tag:OR", "tag:OR", ()),
    # path: and file:
    ('path:"folder/sub" x', "x", ("path:folder/sub",)),
    ("path:concepts", "", ("path:concepts",)),
    ("PATH:/raw/", "", ("path:raw/",)),
    ("path:概念/子目录 风险", "风险", ("path:概念/子目录",)),
    ("-path:raw x", "x", ("-path:raw",)),
    ("file:name", "", ("file:name",)),
    ('file:"my note"', "", ("file:my note",)),
    ("FILE:会议", "", ("file:会议",)),
    # excludes
    ("foo -bar", "foo", ("-w:bar",)),
    ('foo -"bad phrase"', "foo", ("-p:bad phrase",)),
    ("-项目", "", ("-w:项目",)),
    ("well - known", "well - known", ()),
    ("--verbose", "--verbose", ()),
    ("-(a b) c", "c", ("-all:(a & b)",)),
    ("-(a OR b)", "", ("-all:(a|b)",)),
    ("-content:foo", "", ("-w:foo",)),
    # phrases: required, and their words ranked
    ('"exact phrase"', "exact phrase", ("p:exact phrase",)),
    ('say "hello world" now', "say hello world now", ("p:hello world",)),
    ('"项目 管理"', "项目 管理", ("p:项目 管理",)),
    ('""', '""', ()),
    ('"a"b', '"a"b', ()),
    # OR joins the terms beside it; each side is ranked
    ("a OR b", "a b", ("w:a OR w:b",)),
    ("x a OR b y", "x a b y", ("w:a OR w:b",)),
    ("a OR b OR c", "a b c", ("w:a OR w:b OR w:c",)),
    ('"a b" OR c', "a b c", ("p:a b OR w:c",)),
    ("(a b) OR c", "a b c", ("w:a&w:b OR w:c",)),
    ("(a OR b) c", "a b c", ("w:a OR w:b",)),
    ("((a OR b)) c", "a b c", ("w:a OR w:b",)),
    ("(a OR b) OR c", "a b c", ("w:a OR w:b OR w:c",)),
    ("-a OR b", "b", ("-w:a OR w:b",)),
    ("苹果 OR 香蕉", "苹果 香蕉", ("w:苹果 OR w:香蕉",)),
    ("a or b", "a or b", ()),
    ("OR", "OR", ()),
    ("a OR", "a OR", ()),
    ("a OR OR b", "a OR OR b", ()),
    ("ORACLE OR", "ORACLE OR", ()),
    ("tag:a OR tag:b", "", ("tag:a OR tag:b",)),
    ("file:x OR path:y", "", ("file:x OR path:y",)),
    ("[status:draft] OR tag:wip", "", ("[status:draft] OR tag:wip",)),
    ("tag:a OR foo", "foo", ("tag:a",)),  # a filter OR text: read as AND
    # [property] and [property:value]
    ("[status]", "", ("[status]",)),
    ("[status:]", "", ("[status]",)),
    ("[status:draft]", "", ("[status:draft]",)),
    ("[Status:Draft]", "", ("[Status:Draft]",)),
    ("[updated:>2026-01-01]", "", ("[updated>2026-01-01]",)),
    ("[updated:>=2026-01-01]", "", ("[updated>=2026-01-01]",)),
    ("[updated:<2026-01-01]", "", ("[updated<2026-01-01]",)),
    ("[updated: <= 2026-01-01 ]", "", ("[updated<=2026-01-01]",)),
    ("[rating:>3] good", "good", ("[rating>3]",)),
    ('[title:"my page"]', "", ("[title:my page]",)),
    ("[status:draft OR active]", "", ("[status:draft] OR [status:active]",)),
    ("-[status:superseded]", "", ("-[status:superseded]",)),
    ("[状态:进行中] 计划", "计划", ("[状态:进行中]",)),
    ("[[Wiki Link]]", "[[Wiki Link]]", ()),
    ("[x](https://a.b)", "[x](https://a.b)", ()),
    ("[]", "[]", ()),
    ("[a b", "[a b", ()),
    ("-[status:a OR b] x", "-[status:a OR b] x", ()),
    # line: and section:, a group or one word; their words are ranked too
    ("line:(foo bar)", "foo bar", ("line:(foo & bar)",)),
    ("line:foo", "foo", ("line:(foo)",)),
    ('line:"foo bar"', "foo bar", ("line:(foo bar)",)),
    ("section:(a OR b c)", "a b c", ("section:(a|b & c)",)),
    ("LINE:(甲 乙)", "甲 乙", ("line:(甲 & 乙)",)),
    ("-line:(a b)", "", ("-line:(a & b)",)),
    ("line:(a -b)", "line:(a -b)", ()),
    ("line:(a", "line:(a", ()),
    # content: is just text
    ("content:foo", "foo", ()),
    ('content:"a b"', "a b", ("p:a b",)),
    ("content:(a b)", "a b", ()),
    # not operators: words (urls, times, unknown names)
    ("http://example.com/x", "http://example.com/x", ()),
    ("10:30 meeting", "10:30 meeting", ()),
    ("foo:bar", "foo:bar", ()),
    ("note:项目", "note:项目", ()),
    ("项目:进度", "项目:进度", ()),
    ("block:abc task:x", "block:abc task:x", ()),
    # not well formed: searched as text
    ('"unclosed phrase', '"unclosed phrase', ()),
    ("(unclosed group", "(unclosed group", ()),
    ("closed) stray", "closed) stray", ()),
    ("a (b", "a (b", ()),
    ("(a b)c", "(a b)c", ()),
    ("()", "()", ()),
    ('-"unclosed', '-"unclosed', ()),
    ("tag:(a -b) y", "tag:(a -b) y", ()),
    ('tag:"open', 'tag:"open', ()),
    # combinations
    ('tag:project "launch plan" -draft [status:active] budget', "launch plan budget",
     ("tag:project", "p:launch plan", "-w:draft", "[status:active]")),
    ("tag:项目 path:概念 风险 OR 问题 -草稿", "风险 问题", ("tag:项目", "path:概念", "w:风险 OR w:问题", "-w:草稿")),
    ('Tag:#work/meeting [updated:>=2026-01-01] line:(决定 预算) 会议', "决定 预算 会议",
     ("tag:work/meeting", "[updated>=2026-01-01]", "line:(决定 & 预算)")),
]


@pytest.mark.parametrize(("query", "text", "groups"), TABLE, ids=[row[0] or "<empty>" for row in TABLE])
def test_parser_table(query, text, groups):
    assert summary(query) == (text, groups)


def test_table_is_large():
    assert len(TABLE) >= 60


def test_only_filters_and_shapes():
    parsed = parse_query("tag:#A/B path:raw -draft -\"old text\" tag:c OR tag:d")
    assert parsed.only_filters
    assert parsed.tags == ("a/b",)  # the OR group is not a required tag
    assert parsed.paths == ("raw",)
    assert parsed.excludes == ("draft", "old text")
    assert not parse_query("tag:a words").only_filters


def test_explain_says_how_it_was_read():
    lines = parse_query('tag:a "x y" [updated:>2026-01-01] [n:<3] foo:bar "open').explain()
    assert lines[0] == 'ranked text: x y foo:bar "open'
    assert "page: tagged #a or a tag nested under it" in lines
    assert 'text: contains the phrase "x y"' in lines
    assert 'page: property "updated" > "2026-01-01" (as a date)' in lines
    assert 'page: property "n" < "3" (as a number)' in lines
    assert '"foo:" is not an operator: read as a word' in lines
    assert "an unclosed quote: searched as text" in lines
    assert parse_query("tag:a").explain()[0].startswith("no ranked text")
    assert any("read as AND" in line for line in parse_query("tag:a OR b").explain())


def test_deep_parentheses_stay_text():
    parsed = parse_query("(" * 50 + "a" + ")" * 50 + " b")
    assert parsed.text.endswith("b") and "a" in parsed.text


# -- the matcher --------------------------------------------------------------------------------
def page(path="notes/Meeting Notes.md", tags=(), front=None):
    return PageFacts(path, "Meeting", tuple(tags), front or {})


@pytest.mark.parametrize(("query", "tags", "expected"), [
    ("tag:a", ["a"], True),
    ("tag:a", ["a/b"], True),
    ("tag:a", ["a/b/c"], True),
    ("tag:a/b", ["a"], False),
    ("tag:a", ["ab"], False),
    ("tag:a", ["b/a"], False),
    ("tag:#A", ["a"], True),
    ("tag:a", ["#A/x"], True),
    ("tag:项目", ["项目/进行中"], True),
    ("-tag:draft", ["draft/old"], False),
    ("-tag:draft", ["drafting"], True),
    ("tag:a tag:b", ["a"], False),
    ("tag:a OR tag:b", ["b"], True),
    ("tag:(a OR b)", ["c"], False),
])
def test_tags(query, tags, expected):
    assert parse_query(query).page_matches(page(tags=tags)) is expected


@pytest.mark.parametrize(("query", "path", "expected"), [
    ("path:notes", "notes/x.md", True),
    ("path:NOTES/sub", "notes/sub/x.md", True),
    ('path:"my folder"', "My Folder/x.md", True),
    ("path:raw", "notes/x.md", False),
    ("-path:raw", "raw/a.md", False),
    ("file:meeting", "notes/Meeting Notes.md", True),
    ("file:notes", "notes/x.md", False),  # the folder is not the file name
    ("file:会议", "记录/周会议.md", True),
    ("file:x OR path:raw", "raw/a.md", True),
])
def test_path_and_file(query, path, expected):
    assert parse_query(query).page_matches(page(path=path)) is expected


@pytest.mark.parametrize(("query", "front", "expected"), [
    ("[status]", {"status": None}, True),
    ("[status]", {}, False),
    ("[Status]", {"status": "x"}, True),
    ("[status:draft]", {"status": "Draft"}, True),
    ("[status:draft]", {"status": "drafting"}, False),
    ("[STATUS:DRAFT]", {"status": "draft"}, True),
    ("[tags:b]", {"tags": ["a", "B"]}, True),
    ("[tags:c]", {"tags": ["a", "b"]}, False),
    ("[status:draft OR active]", {"status": "active"}, True),
    ("[status:draft OR active]", {"status": "done"}, False),
    ("-[status:superseded]", {}, True),
    ("-[status:superseded]", {"status": "superseded"}, False),
    ('[title:"my page"]', {"title": "My Page"}, True),
    ("[updated:>2026-01-01]", {"updated": dt.date(2026, 1, 2)}, True),
    ("[updated:>2026-01-01]", {"updated": "2026-01-02"}, True),
    ("[updated:>2026-01-01]", {"updated": "2026-01-01"}, False),
    ("[updated:>=2026-01-01]", {"updated": "2026-01-01"}, True),
    ("[updated:<2026-01-01]", {"updated": dt.date(2025, 12, 31)}, True),
    ("[updated:<=2026-01-01]", {"updated": dt.date(2026, 1, 2)}, False),
    ("[updated:2026-01-01]", {"updated": dt.date(2026, 1, 1)}, True),
    ("[updated:2026-01-01]", {"updated": "2026-01-01T10:30:00"}, True),  # dates compare as dates
    ("[updated:>2026-01-01]", {"updated": dt.datetime(2026, 1, 1, 23, 0)}, False),
    ("[updated:>2026-01-01T12:00]", {"updated": "2026-01-01T13:00:00+08:00"}, True),
    ("[updated:>2026-01-01T12:00]", {"updated": dt.date(2026, 1, 1)}, False),
    ("[updated:>2026-01-01]", {"updated": "soon"}, False),
    ("[updated:>2026-01-01]", {"updated": ["2025-01-01", "2026-06-01"]}, True),
    ("[rating:>3]", {"rating": 4}, True),
    ("[rating:>3]", {"rating": 3}, False),
    ("[rating:>=3.5]", {"rating": "3.5"}, True),
    ("[rating:<10]", {"rating": 9.9}, True),
    ("[rating:>3]", {"rating": "many"}, False),
    ("[rating:3]", {"rating": 3.0}, True),
    ("[rating:>1]", {"rating": True}, False),  # a bool is no number
    ("[draft:true]", {"draft": True}, True),
    ("[draft:false]", {"draft": True}, False),
    ("[version:>v2]", {"version": "v3"}, False),  # text does not compare by order
    ("[up:Index]", {"up": "[[index|Home]]"}, True),  # a link's target counts
    ("[sources:raw/a]", {"sources": ["[[raw/a#part]]", "[[raw/b]]"]}, True),
    ("[meta:x]", {"meta": {"x": 1}}, False),
    ("[状态:进行中]", {"状态": "进行中"}, True),
])
def test_properties(query, front, expected):
    assert parse_query(query).page_matches(page(front=front)) is expected


TEXT = "The launch plan was agreed.\nBudget: 300 for the pilot\n项目进度 正常，风险可控"


@pytest.mark.parametrize(("query", "expected"), [
    ("anything at all", True),  # plain words are ranked, not required
    ('"launch plan"', True),
    ('"LAUNCH   plan"', True),
    ('"plan launch"', False),
    ('"was agreed. budget:"', True),  # a phrase may cross a line break
    ("-budget", False),
    ("-missing", True),
    ('-"launch plan"', False),
    ("-项目", False),
    ("-(launch budget)", False),
    ("-(launch missing)", True),
    ("-(missing OR absent)", True),
    ("launch OR missing", True),
    ("missing OR absent", False),
    ("(launch missing) OR pilot", True),
    ("(launch missing) OR absent", False),
    ("line:(budget pilot)", True),
    ("line:(launch budget)", False),
    ("line:(launch OR budget pilot)", True),
    ('line:"for the pilot"', True),
    ("-line:(launch budget)", True),
    ("section:(launch budget)", True),
    ("section:(launch absent)", False),
    ("进度", True),
    ('"进度 正常"', True),
    ("line:(风险 进度)", True),
    ("风险 OR 问题", True),
    ("tag:nothing-here", True),  # page conditions are not text_matches' business
])
def test_text(query, expected):
    assert parse_query(query).text_matches(TEXT) is expected


def test_heading_counts_as_a_line_and_as_text():
    parsed = parse_query("line:(decisions budget)")
    assert not parsed.text_matches("Budget: 300")
    assert parsed.text_matches("Decisions: budget", heading="Plan")
    assert parse_query("section:(decisions budget)").text_matches("Budget: 300", heading="Plan > Decisions")
    assert not parse_query("-decisions").text_matches("Budget", heading="Decisions")


def test_page_matches_ignores_text_conditions():
    parsed = parse_query('tag:a "not in any page" -everything')
    assert parsed.page_matches(page(tags=["a"]))
    assert not parsed.page_matches(page(tags=["b"]))
    assert not parsed.text_matches("everything is here")


def test_facts_from_a_parsed_page():
    note = parse_page("projects/Alpha Plan.md",
                      "---\ntags: [work/q1]\nupdated: 2026-02-03\nowner: Ann\n---\n# Alpha\nSee #项目 notes.\n")
    facts = PageFacts.from_page(note)
    query = "tag:work tag:项目 path:projects file:alpha [owner:ann] [updated:>2026-02-01]"
    assert parse_query(query).page_matches(facts)
    assert not parse_query("[updated:<2026-02-01]").page_matches(facts)


# -- properties -----------------------------------------------------------------------------------
OPERATOR_HEAVY = st.text(alphabet=list(' :"-[]()ORortagpathfilelinesection#/<>=.x项目\n\t\u3000'), max_size=60)


@settings(max_examples=400, deadline=None)
@given(st.one_of(st.text(max_size=80), OPERATOR_HEAVY))
def test_never_raises(query):
    parsed = parse_query(query)
    assert isinstance(parsed.text, str) and parsed.raw == query
    assert isinstance(parsed.explain(), list)
    facts = PageFacts("a/b.md", "b", ("x", "x/y"), {"status": "draft", "updated": dt.date(2026, 1, 1), "n": 3})
    assert parsed.page_matches(facts) in (True, False)
    assert parsed.text_matches("some text\n项目 line", heading="H") in (True, False)


PLAIN = st.text(st.characters(exclude_characters=':"-[]()', exclude_categories=("Cs",)), max_size=80)


@settings(max_examples=400, deadline=None)
@given(PLAIN.filter(lambda s: "OR" not in s.split()))
def test_text_without_operators_reads_as_itself(query):
    parsed = parse_query(query)
    assert parsed.text == query.strip()
    assert parsed.groups == ()
    assert parsed.only_filters == (not query.strip())


def test_without_phrases_drops_only_the_absent_required_phrases():
    parsed = parse_query('x "a b" -"c d" tag:t ("e f" OR "g h") "i j"')
    assert parsed.required_phrases() == ("a b", "e f", "g h", "i j")
    looser = parsed.without_phrases(["a b", "g h"])
    kinds = sorted(c.kind + ("-" if c.negated else "") + ":" + c.value for g in looser.groups for m in g for c in m)
    assert kinds == ["phrase-:c d", "phrase:i j", "tag:t"]  # an OR group goes when a member is absent
    assert looser.text == parsed.text and looser.notes[-1] == 'no note has "a b", "g h": ranked as words instead'
    assert parse_query('x -"c d"').required_phrases() == () and parse_query('"a b" OR word').required_phrases() == ()
