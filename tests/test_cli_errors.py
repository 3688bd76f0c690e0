"""`wikimem index/search/status/parse` in a subprocess on a hostile vault or with bad arguments: no
traceback, no hang, exit code <= 2, JSON that parses (errors too, under --json), and what was skipped
is said (issue 10 items 10, 11, 14)."""
import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.adversarial


ROOT = Path(__file__).parent.parent


def _cli(*args, cwd=None, env=None, timeout=120):
    clean = {k: v for k, v in os.environ.items() if not k.startswith("WIKIMEM_")}
    r = subprocess.run([sys.executable, "-m", "wikimem.cli", *args], capture_output=True, text=True, timeout=timeout,
                       env={**clean, "PYTHONPATH": str(ROOT), "WIKIMEM_EMBEDDER": "none", "COLUMNS": "80",
                            **(env or {})}, cwd=cwd, errors="replace")
    assert "Traceback" not in r.stderr, r.stderr
    assert r.returncode <= 2, (r.returncode, r.stderr)
    return r


@pytest.fixture(scope="module")
def hostile(tmp_path_factory):
    root = tmp_path_factory.mktemp("hostile") / "V"
    broot = os.fsencode(root)
    notes = {
        "SCHEMA.md": "# Schema\n",
        "good.md": "# Good\n\nAlpha beta gamma, the note that must stay searchable.\n",
        "date.md": "---\ncreated: 2024-02-30\n---\n# Date\n\nalpha\n",
        "anchor.md": "---\na: &a [*a]\n---\n# Anchor\n\nalpha\n",
        "bomb.md": "---\na: &a [x,x,x,x,x,x,x,x,x]\n" + "".join(
            f"{chr(98 + i)}: &{chr(98 + i)} [{','.join(['*' + chr(97 + i)] * 9)}]\n" for i in range(8)) + "---\nalpha\n",
        "raw/transcripts/chat.md": "---\nkind: transcript\nchunk_window: two\n---\n# Chat\n\n**Bob**: Yes.\n\n"
                                   "**Al**: alpha?\n\n**Bob**: Yes.\n\n**Al**: ok\n",
        "types.md": "---\ntype: [x]\nstatus: maybe\ntags: {a: 1}\nweight: .nan\n---\n# [/bold] markup [red]\n\nalpha\n",
        "latin1.md": "caf\xe9 alpha\n".encode("latin-1"),
        "binary.md": b"\x00\x01alpha",
    }
    for rel, content in notes.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(content if isinstance(content, bytes) else content.encode("utf-8"))
    os.makedirs(os.path.join(broot, b"assets"))
    with open(os.path.join(broot, b"assets", b"photo\xe9.png"), "wb") as fh:
        fh.write(b"\x89PNG")
    with open(os.path.join(broot, b"n\xe9e.md"), "wb") as fh:
        fh.write(b"# bad name\n")
    os.mkfifo(root / "pipe.md")
    sock = socket.socket(socket.AF_UNIX)
    sock.bind(str(root / "sock.md"))
    os.symlink("/dev/zero", root / "zero.md")
    os.symlink("/etc/hostname", root / "outside.md")
    os.symlink(root / "missing.md", root / "dangling.md")
    (root / "big.md").write_bytes(b"# Big\n" + b"alpha " * (2 * 1024 * 1024 // 6))
    (root / ".wikimem").mkdir()
    (root / ".wikimem" / "config.toml").write_text("max_file_mb = 1\n")
    yield root
    sock.close()


def test_index_search_status_parse_never_crash(hostile):
    first = _cli("index", str(hostile))
    assert first.returncode == 0
    summary = first.stdout
    assert "files skipped (" in summary and "see `wikimem status`" in summary
    assert "1 too large" in summary and "2 name not UTF-8" in summary and "2 not a regular file" in summary
    data = json.loads(_cli("index", str(hostile), "--json").stdout)
    skipped = {s["path"]: s["kind"] for s in data["skipped"]}
    assert skipped["assets/photo\\xe9.png"] == skipped["n\\xe9e.md"] == "bad_name"
    assert skipped["pipe.md"] == skipped["sock.md"] == "not_regular"
    assert skipped["zero.md"] == skipped["outside.md"] == "outside" and skipped["big.md"] == "too_large"
    assert skipped["latin1.md"] == "not_utf8" and skipped["binary.md"] == "binary"

    hits = _cli("search", "alpha beta gamma", "--vault", str(hostile), "--json")
    assert hits.returncode == 0 and "good.md" in {h["path"] for h in json.loads(hits.stdout)["hits"]}
    text = _cli("search", "alpha", "--vault", str(hostile))
    assert text.returncode == 0 and "[/bold] markup [red]" in text.stdout  # titles are not rich markup

    status = _cli("status", str(hostile))
    assert status.returncode == 0
    for line in ("skipped n\\xe9e.md: file name is not valid UTF-8", "skipped pipe.md: not a regular file",
                 "problem date.md: created: '2024-02-30' is not a date"):
        assert line in status.stdout, line
    info = json.loads(_cli("status", str(hostile), "--json").stdout)
    assert {"pipe.md", "zero.md", "n\\xe9e.md"} <= {s["path"] for s in info["skipped_files"]}
    assert not {"pipe.md", "zero.md", "sock.md"} & set(info["stale_files"]), info["stale_files"]
    assert {"date.md", "anchor.md", "bomb.md", "types.md", "raw/transcripts/chat.md"} <= \
        {p["path"] for p in info["page_problems"]}

    parse = json.loads(_cli("parse", str(hostile), "--json").stdout)
    assert "types.md" in parse["pages_with_errors"]


def test_status_lists_files_skipped_while_reading(hostile):
    _cli("index", str(hostile))
    status = _cli("status", str(hostile))
    assert "skipped big.md: file is 2.0 MiB, over the 1.0 MiB limit" in status.stdout
    info = json.loads(_cli("status", str(hostile), "--json").stdout)
    assert {"big.md", "latin1.md", "binary.md"} <= {s["path"] for s in info["skipped_files"]}
    assert not {"big.md", "latin1.md", "binary.md"} & set(info["stale_files"]), info["stale_files"]


def test_json_no_hits_exits_1_like_text(hostile):
    _cli("index", str(hostile))
    r = _cli("search", "zzqqxxnothing", "--vault", str(hostile), "--json", "--mode", "lexical")
    assert r.returncode == 1 and json.loads(r.stdout)["hits"] == []
    assert _cli("search", "zzqqxxnothing", "--vault", str(hostile), "--mode", "lexical").returncode == 1


def test_errors_under_json_are_json_on_stdout(tmp_path):
    r = _cli("search", "x", "--vault", str(tmp_path / "nope"), "--json")
    assert r.returncode == 1 and json.loads(r.stdout) == {"error": f"vault folder not found: {tmp_path / 'nope'}",
                                                          "code": 1}
    assert "vault folder not found" in r.stderr
    r = _cli("search", "   ", "--vault", str(tmp_path), "--json")
    assert r.returncode == 2 and json.loads(r.stdout)["code"] == 2


def test_usage_errors_typer_reports_are_json_on_stdout_too(tmp_path):
    # Was: `query -k 0 --json` and an unknown option printed typer's box on stderr and nothing on stdout
    for args, said in ((["query", "x", "-k", "0"], "greater than or equal to 1"),
                       (["status", "--bogus"], "No such option: --bogus")):
        r = _cli(*args, "--vault", str(tmp_path), "--json")
        assert r.returncode == 2 and said in json.loads(r.stdout)["error"] and json.loads(r.stdout)["code"] == 2
        plain = _cli(*args, "--vault", str(tmp_path))
        assert plain.returncode == 2 and plain.stdout == "" and said[:18] in plain.stderr  # typer's box, as it was


def test_long_errors_are_not_wrapped_when_stderr_is_a_file(tmp_path):
    long_name = tmp_path / ("a-very-long-folder-name-" * 8)
    r = _cli("status", str(long_name))
    lines = [l for l in r.stderr.splitlines() if l.strip()]
    assert r.returncode == 1 and len(lines) == 1 and str(long_name) in lines[0]


def test_search_outside_a_vault_refuses_to_create_a_cache(tmp_path):
    plain = tmp_path / "just-a-folder"
    plain.mkdir()
    (plain / "notes.md").write_text("# alpha\n")
    r = _cli("search", "alpha", cwd=plain)
    assert r.returncode == 2 and "--vault" in r.stderr and "WIKIMEM_VAULT" in r.stderr
    assert not (plain / ".wikimem").exists()
    assert _cli("search", "alpha", cwd=plain, env={"WIKIMEM_VAULT": str(plain)}).returncode == 0  # named: fine
    (plain / ".wikimem").exists() or pytest.fail("a named vault gets its cache")
    other = tmp_path / "obsidian-vault"
    (other / ".obsidian").mkdir(parents=True)
    (other / "n.md").write_text("# alpha\n")
    assert _cli("search", "alpha", cwd=other).returncode == 0  # looks like a vault: fine
