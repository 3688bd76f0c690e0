"""WM2xx: frontmatter and SCHEMA.md: YAML that does not parse, fields the page type requires or
types it forbids (schema/*.json), tags outside the taxonomy, file names against the convention."""
from __future__ import annotations

import re

from ...vault.files import is_raw_path
from .. import fields
from ..registry import Fix, rule


@rule("WM201", "invalid-frontmatter", severity="error")
def invalid_frontmatter(ctx):
    """Frontmatter that is not a valid YAML mapping; wikimem (and Obsidian) then ignore every field
    in it. Example: ``title: [unclosed`` between the ``---`` fences."""
    for path in sorted(ctx.pages):
        page = ctx.pages[path]
        if page.frontmatter.error:
            yield ctx.finding(path, 1, f"frontmatter: {page.frontmatter.error}")


def _required(ctx, page_type: str) -> list[str]:
    wanted = list((fields.page_schema(page_type) or {}).get("required", ()))
    for sub in (fields.page_schema(page_type) or {}).get("allOf", ()):
        wanted += [k for k in sub.get("required", ()) if k not in wanted]
    extra = ctx.rule_options().get("required", {})
    if isinstance(extra, dict):
        wanted += [str(k) for k in extra.get(page_type, []) or [] if str(k) not in wanted]
    return wanted


@rule("WM202", "missing-required-field", severity="error")
def missing_required(ctx):
    """A field the page's type requires is missing (schema/page-<type>.json ``required``, plus
    ``lint.rules.WM202.required`` in SCHEMA.md). Example: a comparison page without ``title``."""
    for page in ctx.wiki_pages():
        if page.frontmatter.error:
            continue
        for key in _required(ctx, page.type):
            if page.frontmatter.data.get(key) in (None, "", []):
                yield ctx.finding(page.path, 1, f"{page.type} page is missing required field '{key}'")


@rule("WM203", "unknown-tag", severity="warning")
def unknown_tag(ctx):
    """A tag that is not in SCHEMA.md's taxonomy (``## Taxonomy Tags``); a nested tag is accepted
    when its top level is listed. Example: ``#retreival`` when the taxonomy has ``#retrieval``."""
    taxonomy = set(ctx.schema.tags)
    if not taxonomy:
        return
    for page in ctx.wiki_pages():
        seen = set()
        for tag in page.tags:
            if tag.name in seen or tag.name in taxonomy or tag.name.split("/", 1)[0] in taxonomy:
                continue
            seen.add(tag.name)
            line = tag.line + 1 if tag.line is not None else ctx.key_line(page, "tags")
            yield ctx.finding(page.path, line, f"tag '#{tag.name}' is not in the SCHEMA.md taxonomy")


@rule("WM204", "wrong-field-type", severity="error")
def wrong_field_type(ctx):
    """A frontmatter field of the wrong type or value for its page type (schema/page-<type>.json).
    Example: ``status: old`` (not active, superseded or draft) or ``created: last week``."""
    for path in sorted(ctx.pages):
        page = ctx.pages[path]
        if page.frontmatter.error or not page.frontmatter.data or path == "SCHEMA.md":
            continue
        schema = fields.page_schema(page.type)
        if schema is None:
            ctx.notice("schema/ JSON Schemas not found; field types not checked")
            return
        for key, message in fields.page_errors(page.frontmatter.data, page.type):
            if message == "missing":
                continue  # WM202
            top = key.split(".", 1)[0].split("[", 1)[0]
            yield ctx.finding(path, ctx.key_line(page, top), f"field '{key}': {message}")


_TITLE_CASE = re.compile(r"title[ -]case", re.I)
_KEBAB = re.compile(r"kebab[ -]case", re.I)
_SNAKE = re.compile(r"snake[ _-]case", re.I)
_VS = re.compile(r"\bA vs\.? B\b")


def naming_problem(stem: str, title: str, page_type: str, naming: str) -> str | None:
    """Why ``stem`` breaks the naming convention SCHEMA.md states in words, or None."""
    first = next((ch for ch in stem if ch.isalpha()), "")
    if _TITLE_CASE.search(naming) and first and first.islower() and first.upper() != first and stem != title:
        return "is not in Title Case"
    if _KEBAB.search(naming) and not re.fullmatch(r"[a-z0-9]+(?:-[a-z0-9]+)*", stem):
        return "is not kebab-case"
    if _SNAKE.search(naming) and not re.fullmatch(r"[a-z0-9]+(?:_[a-z0-9]+)*", stem):
        return "is not snake_case"
    if page_type == "comparison" and _VS.search(naming) and " vs " not in f" {stem.lower()} ":
        return "is a comparison not named 'A vs B'"
    return None


@rule("WM205", "naming-convention", severity="info")
def naming_convention(ctx):
    """A file name that breaks SCHEMA.md's ``## Naming Convention`` (understood: "Title Case",
    "kebab-case", "snake_case", comparisons named "A vs B"). Example: ``concepts/vector search.md``
    under "Title Case file names". A name written exactly as the page title is accepted; memories
    and source pages are named by their writers and not checked."""
    naming = ctx.schema.naming
    if not naming:
        return
    for page in ctx.wiki_pages():
        if page.type in ("memory", "source"):
            continue  # written by agents and ingest under their own naming scheme
        stem = page.path.rsplit("/", 1)[-1].rsplit(".", 1)[0]
        why = naming_problem(stem, page.title, page.type, naming)
        if why:
            yield ctx.finding(page.path, 1, f"file name '{stem}' {why} (SCHEMA.md naming convention)")


def normal_tags(value) -> list[str] | None:
    """The frontmatter tag list in normal form (lower case, no '#', no duplicates), or None when
    ``value`` is already normal or is not a tag list."""
    items = value if isinstance(value, list) else ([value] if isinstance(value, str) else None)
    if items is None or not all(isinstance(t, str) for t in items):
        return None
    if isinstance(value, str) and ("," in value or " " in value.strip()):
        return None  # "a, b" strings: left as the user wrote them
    out: list[str] = []
    for t in items:
        n = t.strip().lstrip("#").lower()
        if n and n not in out:
            out.append(n)
    return None if out == list(items) else out


@rule("WM206", "tag-case", severity="info")
def tag_case(ctx):
    """A tag written in a non-normal form (upper case, a leading '#' or a duplicate in the
    frontmatter list); tags are case-insensitive, so ``Retrieval`` and ``retrieval`` split one tag
    in two in other tools. Example: ``tags: [Retrieval, "#graph"]``. Fixable (frontmatter only)."""
    for page in ctx.wiki_pages():
        if page.frontmatter.error or is_raw_path(page.path):
            continue
        value = page.frontmatter.data.get("tags")
        fixed = normal_tags(value)
        if fixed is not None:
            yield ctx.finding(page.path, ctx.key_line(page, "tags"),
                              f"tags {value!r} are not in normal form; expected {fixed!r}",
                              fix=Fix("tag_case", (page.path, page.sha256, tuple(fixed)), "normalise tag case"))
        for name, line in _inline_upper(page):
            yield ctx.finding(page.path, line, f"inline tag '#{name}' is not lower case")


_UPPER_TAG = re.compile(r"#([\w/-]*[^\W\d_a-z][\w/-]*)")  # a literal first: re finds '#' fast


def _inline_upper(page):
    """Inline tags written with upper-case letters, once per tag (one regex pass per page)."""
    inline = {t.name: t.line for t in page.tags if t.source == "inline" and t.line is not None}
    if not inline:
        return
    body, seen = page.body, set()
    for m in _UPPER_TAG.finditer(body):
        if m.start() and not body[m.start() - 1].isspace():
            continue
        name = m.group(1).rstrip("/")
        low = name.lower()
        if low in inline and low not in seen and name != low:
            seen.add(low)
            yield name, inline[low] + 1
