"""README: `wikimem search QUERY VAULT` (a last word that is a vault's folder names the vault, as
`rg PATTERN PATH`). A new user who ran `wikimem watch ~/notes` and then `wikimem search tar
~/notes` from their home folder was not forwarded to the warm watcher: the entry point found the
vault only by `--vault`, $WIKIMEM_VAULT or the current folder, so the search ran cold (2.5 s
instead of 0.3 s on the tldr vault), with the same output, silently."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from serve_helpers import NONE_EMBEDDER
from wikimem.api import open_vault
from wikimem.cli.forward import ForwardServer
from wikimem.launch import vault_of

FILES = {"SCHEMA.md": "# Schema\n", ".wikimem.toml": NONE_EMBEDDER,
         "concepts/Alpha.md": "# Alpha\n\nalpha particles and [[Beta]]\n",
         "concepts/Beta.md": "# Beta\n\nbeta decay of nuclei\n"}


def _env():
    keep = ("WIKIMEM_STORE", "WIKIMEM_DATABASE_URL")
    return {k: v for k, v in os.environ.items() if not k.startswith("WIKIMEM_") or k in keep}


@pytest.fixture
def warm(make_vault):
    root = make_vault(FILES)
    vault = open_vault(root)
    vault.index()
    forwarding = ForwardServer(vault).start()
    yield root
    forwarding.stop()
    vault.close()


def _forwarded(args, cwd) -> int | None:
    code = ("import sys; from wikimem.launch import forward; code = forward(sys.argv[1:]); "
            "print('FORWARD=' + repr(code), file=sys.stderr)")
    done = subprocess.run([sys.executable, "-c", code, *args], cwd=cwd, env=_env(), capture_output=True, text=True,
                          timeout=120)
    line = [x for x in done.stderr.splitlines() if x.startswith("FORWARD=")][-1]
    return eval(line.split("=", 1)[1])


def test_a_search_naming_its_vault_last_is_answered_by_the_warm_process(warm, tmp_path):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    assert _forwarded(["search", "alpha", str(warm)], elsewhere) == 0
    assert _forwarded(["search", "alpha", "particles", str(warm), "--json"], elsewhere) == 0
    assert _forwarded(["query", "what is alpha", str(warm), "--no-write"], elsewhere) == 0
    # relative, as `rg PATTERN PATH` takes it
    assert _forwarded(["search", "alpha", os.path.relpath(warm, elsewhere)], elsewhere) == 0


def test_the_vault_word_is_read_as_the_cli_reads_it(tmp_path):
    vault = tmp_path / "notes"
    (vault / ".obsidian").mkdir(parents=True)
    plain = tmp_path / "plain"
    plain.mkdir()
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    assert vault_of(["search", "tar", "archive", str(vault)], "search", cwd) == vault
    assert vault_of(["search", "-k", "3", "tar", str(vault)], "search", cwd) == vault
    # one word is a query, never a vault; a folder that is no vault root is a word; --vault wins
    assert vault_of(["search", str(vault)], "search", cwd) is None
    assert vault_of(["search", "tar", str(plain)], "search", cwd) is None
    assert vault_of(["search", "tar", str(vault), "-V", str(plain)], "search", cwd) == plain
