"""`wikimem search plonkwise` ended with "1 results in 37 ms" (and "1 results from URL" for
--server): the count line says "1 result"."""
from __future__ import annotations

from typer.testing import CliRunner

from wikimem.api import open_vault
from wikimem.cli import app

runner = CliRunner()


def test_one_hit_is_one_result_and_two_are_results(make_vault, monkeypatch):
    root = make_vault({"SCHEMA.md": "# Schema\n", "a.md": "# Alpha\n\nplonkwise flags\n", "b.md": "# Beta\n\nflags too\n"})
    v = open_vault(root, embedder="none")
    v.index()
    v.close()
    one = runner.invoke(app, ["search", "plonkwise", "-V", str(root)])
    assert one.exit_code == 0 and "1 result in" in one.stdout and "1 results" not in one.stdout, one.stdout
    two = runner.invoke(app, ["search", "flags", "-V", str(root)])
    assert "2 results in" in two.stdout, two.stdout

    import wikimem.serve.remote as remote
    monkeypatch.setattr(remote, "search", lambda *a, **k: {"url": "http://box/v1/vaults/t", "took_ms": 1.0, "notices": [],
                                                           "hits": [{"path": "a.md", "title": "Alpha", "excerpt": "x"}]})
    far = runner.invoke(app, ["search", "plonkwise", "--server", "http://box/v/t"])
    assert "1 result from" in far.stdout, far.stdout
