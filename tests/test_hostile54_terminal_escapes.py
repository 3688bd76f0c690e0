"""A note holding terminal control sequences (ESC [2J clears the screen, OSC 0 sets the window
title, OSC 52 writes the clipboard in some terminals) reached the user's terminal verbatim through
`wikimem search`'s hit lines, local, vimgrep and `--server` (a teammate's vault, a synced note).
The hit lines now show control characters as visible escapes; the words around them still show."""
from __future__ import annotations

from typer.testing import CliRunner

from wikimem.api import open_vault
from wikimem.cli import app

runner = CliRunner()
EVIL = "# Evil\x1b[31m title\n\nThe zappotron \x1b]52;c;cm0gLXJmIH4=\x07 clears \x1b[2J the \x9b6n screen.\n"


def _vault(make_vault):
    root = make_vault({"SCHEMA.md": "# Schema\n", "notes/evil.md": EVIL, "notes/good.md": "# Good\n\nplain words\n"})
    v = open_vault(root, embedder="none")
    v.index()
    v.close()
    return root


def _clean(text: str) -> None:
    assert not any(ord(c) < 32 and c not in "\n\t" or 0x7f <= ord(c) <= 0x9f for c in text), repr(text)


def test_search_hit_lines_carry_no_control_characters(make_vault):
    root = _vault(make_vault)
    for extra in ([], ["--format", "vimgrep"], ["--explain"]):
        result = runner.invoke(app, ["search", "zappotron", "-V", str(root), *extra])
        assert result.exit_code == 0, result.output
        assert "zappotron" in result.stdout and "screen" in result.stdout
        _clean(result.stdout)
        assert "\\x1b" in result.stdout  # shown, not hidden: the note does hold it


def test_a_remote_servers_hits_are_shown_the_same_way(monkeypatch):
    import wikimem.serve.remote as remote

    def fake(server, token, query, **params):
        return {"url": "http://box:8765/v1/vaults/team", "took_ms": 3.0, "notices": ["n\x1b[2Jote"],
                "hits": [{"path": "notes/evil\x1b[2J.md", "title": "Evil\x1b[31m", "line": 3, "heading": "H\x1b]0;x\x07",
                          "excerpt": "The zappotron \x1b]52;c;cm0=\x07 clears"}]}
    monkeypatch.setattr(remote, "search", fake)
    result = runner.invoke(app, ["search", "zappotron", "--server", "http://box:8765/v/team"])
    assert result.exit_code == 0, result.output
    assert "zappotron" in result.stdout
    _clean(result.stdout)
    _clean(result.stderr)
