"""A bad value for a frontmatter key wikimem interprets (impossible dates, self-referring anchors, YAML
bombs, values of the wrong type) is a page problem with the default used, never a crash of index,
search, status or parse (issue 10 items 1 and 2, issue 9 item 2)."""
import pytest

from wikimem.parse import chunk_page, parse_page

from support_vault_checks import GOOD, everything


BAD_FRONTMATTER = {
    "impossible-date.md": "---\ncreated: 2024-02-30\nupdated: 2024-13-45\n---\n# D\n\nbody\n",
    "self-anchor.md": "---\na: &a [*a]\ntitle: Loop\n---\n# S\n\nbody\n",
    "deep.md": "---\na: " + "[" * 3000 + "]" * 3000 + "\n---\n# Deep\n\nbody\n",
    "bomb.md": "---\na: &a [x,x,x,x,x,x,x,x,x]\n" + "".join(
        f"{chr(98 + i)}: &{chr(98 + i)} [{','.join(['*' + chr(97 + i)] * 9)}]\n" for i in range(8)) + "---\n# B\n\nbody\n",
    "huge-int.md": "---\nchunk_window: " + "9" * 5000 + "\n---\n# H\n\nbody\n",
    "odd-types.md": "---\ntype: [entity]\nstatus: {a: 1}\ntitle: {x: 1}\ntags: {a: b}\naliases: [[x, y], 3]\n"
                    "supersedes: 5\ncreated: 2024\nx: !!binary aGk=\ny: !!set {a, b}\nz: .nan\n---\n# Odd\n\nbody\n",
}


@pytest.mark.adversarial
def test_bad_frontmatter_values_are_page_problems(make_vault):
    root = make_vault({**GOOD, **BAD_FRONTMATTER})
    v, report, status, summary = everything(root)
    assert set(BAD_FRONTMATTER) <= set(summary["pages_with_errors"])
    problems = {p["path"]: " ".join(p["problems"]) for p in status["page_problems"]}
    assert "not a date" in problems["impossible-date.md"] and "2024-02-30" in problems["impossible-date.md"]
    assert "refers to itself" in problems["self-anchor.md"]
    # our depth cap, or (PyYAML >= 6.0.3) the loader's own nesting limit, whichever comes first
    assert "refers to itself" in problems["deep.md"] or "nesting depth" in problems["deep.md"]
    assert "has more than" in problems["bomb.md"]
    pages = v.load().pages
    odd = pages["odd-types.md"]
    assert (odd.type, odd.status, odd.title, odd.created) == ("note", "active", "Odd", None)
    assert pages["impossible-date.md"].created is None and pages["impossible-date.md"].updated is None
    assert v.pages() == pages  # served from the cache: the same pages


@pytest.mark.adversarial
@pytest.mark.parametrize("key,value,field,default", [
    ("created", "2024-02-30", "created", None),
    ("created", "2023-02-29", "created", None),
    ("updated", "[2024-01-01]", "updated", None),
    ("date", "yesterday", "created", None),
    ("status", "maybe", "status", "active"),
    ("status", "[active]", "status", "active"),
    ("type", "{a: 1}", "type", "concept"),
    ("type", "unicorn", "type", "concept"),
    ("title", "[a, b]", "title", "Heading"),
    ("aliases", "{a: 1}", "aliases", ()),
    ("tags", "[[[deep]]]", "tags", ()),
    ("supersedes", "{a: 1}", "supersedes", ()),
    ("chunk_window", "two", None, None),
    ("chunk_stride", "-3", None, None),
    ("chunk_window", "true", None, None),
])
def test_each_interpreted_key_validated(key, value, field, default):
    page = parse_page("concepts/p.md", f"---\n{key}: {value}\nkind: transcript\n---\n# Heading\n\n"
                                       "**Ann**: hello\n\n**Bob**: Yes.\n")
    assert any(e.startswith(key) for e in page.errors), page.errors
    if field == "tags":
        assert not any(t.source == "frontmatter" for t in page.tags)
    elif field:
        assert getattr(page, field) == default
    assert chunk_page(page)  # the chunker copes with whatever the page holds


def test_good_values_are_not_problems():
    page = parse_page("concepts/p.md", "---\ncreated: 2024-02-29\nupdated: 2024-03-01T10:00:00+01:00\n"
                                       "status: Superseded\ntype: entity\ntitle: 2024\naliases: [A, 7]\n"
                                       "tags: [x, '#y']\nsupersedes: [[Old]]\nchunk_window: 2\n---\nbody\n")
    assert page.errors == ()
    assert (page.created, page.updated, page.status, page.type, page.title) == \
        ("2024-02-29", "2024-03-01T10:00:00+01:00", "superseded", "entity", "2024")
    assert page.aliases == ("A", "7") and page.supersedes == ("Old",) and page.tag_names == ("x", "y")
