"""Ingest of odd input: a UTF-16 text file, ChatGPT conversations and Claude Code lines of the wrong
shape. The bad item is a problem, the others import, and no page
wikimem writes is one the index then skips."""
from __future__ import annotations

import json

import pytest

from wikimem.api import open_vault

from support_built_vault import built  # noqa: F401, F811 - the shared built-vault fixture

pytestmark = pytest.mark.adversarial


def test_ingesting_a_utf16_text_file_does_not_write_an_unreadable_source_page(built, tmp_path):
    # Was: `ingest notes.txt` of a UTF-16 file said "added ... source page sources/notes (source).md;
    # index.md not updated: sources/notes (source).md: binary file (contains NUL bytes); skipped": the
    # source page quoted the file's "first paragraph" decoded as UTF-8 with replacement, NUL bytes
    # included, so wikimem's own page was skipped by every build.
    root, _ = built
    src = tmp_path / "notes.txt"
    src.write_bytes("hello world, zebracorn notes\n".encode("utf-16"))
    vault = open_vault(root, embedder="fake")
    item = vault.ingest([src]).items[0]
    assert "binary" not in item.message, item.message
    skipped = vault.index().skipped
    assert not [s for s in skipped if s["path"].startswith("sources/")], skipped


# -- ChatGPT exports -------------------------------------------------------------------------------------
GOOD_CONV = {"title": "Good one", "conversation_id": "good-1", "current_node": "r",
             "mapping": {"r": {"message": {"author": {"role": "user"},
                                           "content": {"content_type": "text", "parts": ["zebracorn question"]}},
                               "parent": None, "children": []}}}


def _conv(**message):
    return {"title": "Bad one", "conversation_id": "bad-1", "current_node": "r",
            "mapping": {"r": {"message": message, "parent": None, "children": []}}}


@pytest.mark.parametrize("bad", [
    _conv(author="user", content={"parts": ["hi"]}),  # author a string
    _conv(author={"role": "user"}, content="hi"),  # content a string
    _conv(author={"role": "user"}, content={"parts": ["hi"]}, metadata=[1]),  # metadata a list
    _conv(author={"role": "user"}, content={"parts": 5}),  # parts not a list
    _conv(author={"role": {"x": 1}}, content={"parts": ["hi"]}),  # role an object
    {**GOOD_CONV, "conversation_id": "bad-2", "current_node": ["r"]},  # current_node a list
    {"title": "Bad", "mapping": {"r": {"message": None, "parent": ["x"]}}, "current_node": "r"},  # parent a list
], ids=["author_str", "content_str", "metadata_list", "parts_int", "role_obj", "current_node_list", "parent_list"])
def test_a_chatgpt_conversation_of_the_wrong_shape_is_a_problem_and_the_others_import(built, tmp_path, bad):
    # Was: AttributeError ("'str' object has no attribute 'get'") or TypeError ("unhashable type:
    # 'list'", "'int' object is not iterable") out of chatgpt._branch/_session/_text: read() only catches
    # ValueError, so one odd conversation aborted the whole export (`wikimem ingest` said "unexpected
    # AttributeError ... a wikimem bug") and the good conversations beside it were not imported.
    root, _ = built
    export = tmp_path / "conversations.json"
    export.write_text(json.dumps([GOOD_CONV, bad]), encoding="utf-8")
    vault = open_vault(root, embedder="fake")
    item = vault.ingest([export], kind="transcript").items[0]
    assert len(item.raw) == 1 and "Good one" in item.raw[0]
    assert item.problems


# -- Claude Code session logs ------------------------------------------------------------------------------
@pytest.mark.parametrize("bad_line", [
    json.dumps({"type": "assistant", "sessionId": "s1", "message": "not an object"}),
    json.dumps({"type": "assistant", "sessionId": "s1", "message": {"role": {"x": 1}, "content": "hi"}}),
    "[" * 100_000,  # nesting deeper than the JSON decoder's recursion limit
], ids=["message_str", "role_obj", "deep_nesting"])
def test_a_claude_code_line_of_the_wrong_shape_is_skipped_and_the_session_imports(built, tmp_path, bad_line):
    # Was: AttributeError / TypeError from claude_code._turns (message.get on a string, SPEAKERS.get on
    # a dict), or RecursionError from json.loads (only JSONDecodeError is caught), aborting the whole
    # file, although the module promises a bad line "is reported and skipped; the session's other
    # lines still import".
    root, _ = built
    good = {"type": "user", "sessionId": "s1", "timestamp": "2025-01-01T00:00:00Z",
            "message": {"role": "user", "content": "zebracorn question"}}
    log = tmp_path / "session.jsonl"
    log.write_text(json.dumps(good) + "\n" + bad_line + "\n", encoding="utf-8")
    vault = open_vault(root, embedder="fake")
    item = vault.ingest([log], kind="transcript").items[0]
    assert item.status == "added", item
    assert item.problems
