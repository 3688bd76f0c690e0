"""One-shot read commands answered by a warm process over .wikimem/serve.sock (issue 37 item 5):
the same output and exit codes as in-process, no heavy import on the way, and a quiet fall back
for a stale socket, another version or other settings."""
from __future__ import annotations

import json
import os
import socket
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from serve_helpers import NONE_EMBEDDER
from wikimem import __version__
from wikimem.api import open_vault
from wikimem.cli.forward import ForwardServer, refusal
from wikimem.serve.protocol import PROTOCOL

WIKIMEM = str(Path(sys.executable).parent / "wikimem")
FILES = {"SCHEMA.md": "# Schema\n", ".wikimem.toml": NONE_EMBEDDER,
         "concepts/Alpha.md": "---\ntags: [greek]\n---\n# Alpha\n\nalpha particles and [[Beta]]\n",
         "concepts/Beta.md": "# Beta\n\nbeta decay of nuclei\n", "notes/Gamma.md": "# Gamma\n\ngamma rays, [[Alpha]]\n"}


def _env(**extra):
    keep = ("WIKIMEM_STORE", "WIKIMEM_DATABASE_URL")  # the stores the suite runs on (--store)
    env = {k: v for k, v in os.environ.items() if not k.startswith("WIKIMEM_") or k in keep}
    env.update(extra)
    return env


def _run(args, cwd, **extra):
    return subprocess.run([WIKIMEM, *args], cwd=cwd, env=_env(**extra), capture_output=True, text=True, timeout=120)


@pytest.fixture
def warm(make_vault):
    root = make_vault(FILES)
    vault = open_vault(root)
    vault.index()
    forwarding = ForwardServer(vault).start()
    yield root
    forwarding.stop()
    vault.close()


def _probe(args, cwd):
    """Call the entry point's forward() alone: whether it was answered, and what it imported."""
    code = ("import sys, json; from wikimem.launch import forward; code = forward(sys.argv[1:]); "
            "heavy = sorted(m for m in ('faiss', 'onnxruntime', 'igraph', 'typer', 'rich', 'numpy') if m in sys.modules); "
            "print(json.dumps({'code': code, 'heavy': heavy}), file=sys.stderr)")
    done = subprocess.run([sys.executable, "-c", code, *args], cwd=cwd, env=_env(), capture_output=True, text=True,
                          timeout=120)
    return json.loads(done.stderr.strip().splitlines()[-1]), done.stdout


@pytest.mark.parametrize("args", [["search", "alpha"], ["search", "zzzz-nothing", "--mode", "lexical"],
                                  ["search", "alpha", "--json"], ["status", "--json"], ["stats", "--json"],
                                  ["read", "concepts/Beta"], ["read", "concepts/Nope.md"], ["neighbors", "concepts/Alpha.md"],
                                  ["path", "notes/Gamma.md", "concepts/Beta.md"], ["search"], ["related", "nope.md"]])
def test_forwarded_output_and_exit_code_are_the_in_process_ones(warm, args):
    forwarded = _run(args, warm)
    alone = _run(args, warm, WIKIMEM_NO_FORWARD="1")
    assert forwarded.returncode == alone.returncode, (forwarded.stderr, alone.stderr)
    assert forwarded.stdout or forwarded.stderr, (forwarded, alone)

    def same(text: str) -> str:  # the timings differ, and status's own cache size and age
        lines = [line for line in text.splitlines() if " results in " not in line and " result in " not in line]
        if not text.strip():
            return ""
        if args[0] in ("status", "stats") and "--json" in args and text.lstrip().startswith("{"):
            data = json.loads(text)
            for key in ("took_ms", "cache_bytes", "size", "age", "watcher", "built_at", "last_build", "watch"):
                data.pop(key, None)
            return json.dumps(data, sort_keys=True)
        if "--json" in args and text.strip().startswith("{"):
            data = json.loads(text)
            data.pop("took_ms", None)
            return json.dumps(data, sort_keys=True)
        return "\n".join(lines)
    assert same(forwarded.stdout) == same(alone.stdout)
    assert same(forwarded.stderr) == same(alone.stderr)


def test_the_forwarding_path_imports_nothing_heavy_and_is_answered(warm):
    result, stdout = _probe(["search", "alpha"], warm)
    assert result["code"] == 0 and "Alpha" in stdout
    assert result["heavy"] == []


def test_the_socket_is_owner_only(warm):
    sock = warm / ".wikimem" / "serve.sock"
    assert stat.S_ISSOCK(sock.stat().st_mode)
    assert stat.S_IMODE(sock.stat().st_mode) == 0o600


def test_a_stale_socket_falls_back_to_running_in_process(make_vault):
    root = make_vault(FILES)
    open_vault(root).index()
    stale = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    stale.bind(str(root / ".wikimem" / "serve.sock"))
    stale.close()  # its process is gone; the file stays
    result, _ = _probe(["search", "alpha"], root)
    assert result["code"] is None  # not answered: the command runs here
    done = _run(["search", "alpha"], root)
    assert done.returncode == 0 and "Alpha" in done.stdout


def test_no_forward_variable_and_commands_that_write_run_in_process(warm):
    for args in (["query", "what is alpha"], ["search", "alpha", "--format", "vimgrep"]):
        result, _ = _probe(args, warm)
        assert result["code"] is None, args
    env_probe = subprocess.run([sys.executable, "-c", "import sys; from wikimem.launch import forward; "
                                "print(forward(['search', 'alpha']))"], cwd=warm, env=_env(WIKIMEM_NO_FORWARD="1"),
                               capture_output=True, text=True, timeout=60)
    assert env_probe.stdout.strip().splitlines()[-1] == "None"


def test_the_warm_process_refuses_what_it_would_not_answer_the_same_way():
    from wikimem.serve.protocol import settings_digest
    here = {k: v for k, v in os.environ.items() if k.startswith("WIKIMEM_")}  # a store chosen by the environment
    good = {"protocol": PROTOCOL, "version": __version__, "argv": ["search", "x"], "salt": "s1",
            "settings_sha256": settings_digest(here, "s1")}
    assert refusal(good) is None
    assert "runs wikimem" in refusal({**good, "version": "0.0.1"})
    assert refusal({**good, "argv": ["index"]})
    assert refusal({**good, "argv": ["search", 3]})
    other = {**here, "WIKIMEM_EMBEDDER": "fake"}
    assert "settings differ" in refusal({**good, "settings_sha256": settings_digest(other, "s1")})
    assert "settings differ" in refusal({**good, "salt": "s2"})  # the digest is of the salt it names
    assert "settings differ" in refusal({k: v for k, v in good.items() if k != "settings_sha256"})
    # a token, the vault, the tokens file: they do not change an answer, so they may differ
    assert refusal({**good, "settings_sha256": settings_digest({**here, "WIKIMEM_TOKEN": "x"}, "s1")}) is None


def test_a_vault_given_as_a_relative_path_from_another_folder_is_forwarded(warm):
    forwarded = _run(["search", "alpha", "-V", warm.name], warm.parent)
    assert forwarded.returncode == 0 and "Alpha" in forwarded.stdout
    result, _ = _probe(["search", "alpha", "-V", warm.name], warm.parent)
    assert result["code"] == 0


def test_a_peer_of_another_user_is_not_answered(warm, monkeypatch):
    """The socket is 0600, and the warm side also checks the peer's uid (SO_PEERCRED): a process of
    another user gets no answer (here: this process pretends to be another user)."""
    import wikimem.cli.forward as forward
    me = os.getuid()
    monkeypatch.setattr(forward.os, "getuid", lambda: me + 4242)
    result, _ = _probe(["search", "alpha"], warm)
    assert result["code"] is None  # not answered: the client runs the command itself


def test_the_mcp_bridge_answers_an_error_when_the_serve_is_gone(tmp_path):
    import io

    from serve_helpers import free_port
    from wikimem.serve.bridge import Relay
    out = io.StringIO()
    relay = Relay(f"http://127.0.0.1:{free_port()}/mcp/v", "secret", out=out)
    relay.handle('{"jsonrpc": "2.0", "id": 7, "method": "tools/list"}')
    relay.handle("{not json")
    answers = [json.loads(line) for line in out.getvalue().splitlines()]
    assert answers[0]["id"] == 7 and "went away" in answers[0]["error"]["message"]
    assert answers[1]["error"]["code"] == -32700
    assert relay.gone.is_set()


def test_the_options_that_take_a_value_are_the_typer_apps():
    """launch.py keeps its own list (a forwarded start imports no typer); every option of a forwarded
    command that takes a value must be on it, or its value is read as the vault (issue 47 item 5:
    ``--as-of`` and ``--chunks`` were missing)."""
    import typer

    from wikimem.cli import app
    from wikimem.launch import VALUE_OPTIONS
    from wikimem.serve.protocol import FORWARDED
    commands = typer.main.get_command(app).commands
    takes_value = {opt for name in FORWARDED for p in commands[name].params
                   if getattr(p, "param_type_name", "") == "option" and not p.is_flag and not p.count
                   for opt in (*p.opts, *p.secondary_opts)}
    assert takes_value - VALUE_OPTIONS == set()
    flags = {opt for name in FORWARDED for p in commands[name].params
             if getattr(p, "param_type_name", "") == "option" and (p.is_flag or p.count)
             for opt in (*p.opts, *p.secondary_opts)}
    assert VALUE_OPTIONS & flags == set()  # a flag on the list would swallow the next word


class FakeWarm:
    """A socket at ``.wikimem/serve.sock`` answered by whoever bound it (here: the test): it keeps
    every byte a client sends and answers any request with output of its choosing."""

    def __init__(self, root: Path):
        import struct
        import threading

        from wikimem.serve.protocol import short_address
        self.struct = struct
        (root / ".wikimem").mkdir(exist_ok=True)
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        address, fd = short_address(root / ".wikimem" / "serve.sock")
        try:
            self.sock.bind(address)
        finally:
            if fd is not None:
                os.close(fd)
        self.sock.listen(4)
        self.sock.settimeout(0.1)
        self.received = b""
        self.connections = 0
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self):
        from wikimem.serve.protocol import send
        while not self.stop.is_set():
            try:
                conn, _ = self.sock.accept()
            except OSError:
                continue
            self.connections += 1
            with conn:
                conn.settimeout(5)
                data = b""
                try:
                    while len(data) < 4 or len(data) < 4 + self.struct.unpack(">I", data[:4])[0]:
                        chunk = conn.recv(1 << 16)
                        if not chunk:
                            break
                        data += chunk
                except OSError:
                    pass
                self.received += data
                if len(data) > 4:
                    send(conn, {"code": 0, "stdout": "the fake's output\n", "stderr": ""})

    def close(self):
        self.stop.set()
        self.thread.join(timeout=5)
        self.sock.close()


@pytest.fixture
def fake_warm(make_vault, monkeypatch):
    root = make_vault(FILES)
    monkeypatch.chdir(root)
    fake = FakeWarm(root)
    yield root, fake
    fake.close()


def test_the_client_sends_a_digest_of_its_settings_never_their_values(fake_warm, monkeypatch, capsys):
    from wikimem import launch
    _root, fake = fake_warm
    monkeypatch.setenv("WIKIMEM_DATABASE_URL", "postgresql://ann:hunter2-db-pass@db.internal/team")
    monkeypatch.setenv("WIKIMEM_LLM_API_KEY", "sk-very-secret-key")
    assert launch.forward(["search", "alpha"]) == 0  # this user's own socket: answered
    assert "the fake's output" in capsys.readouterr().out
    assert fake.received and b"settings_sha256" in fake.received
    for value in (b"hunter2-db-pass", b"sk-very-secret-key", b"db.internal", b"WIKIMEM_"):
        assert value not in fake.received, value


def test_a_socket_owned_by_another_user_gets_nothing(fake_warm, monkeypatch, capsys):
    from wikimem import launch
    _root, fake = fake_warm
    me = os.getuid()
    monkeypatch.setattr(launch.os, "getuid", lambda: me + 4242)  # the socket is not this "user"'s
    assert launch.forward(["search", "alpha"]) is None  # run here instead
    assert launch.mcp_bridge(["mcp"]) is None
    assert fake.connections == 0 and fake.received == b""
    assert "fake" not in capsys.readouterr().out


def test_a_peer_running_as_another_user_gets_nothing(fake_warm, monkeypatch):
    """The file can be this user's and the process behind it another's (a socket swapped in after
    the look): the peer's uid (SO_PEERCRED) is asked before a byte is sent."""
    from wikimem import launch
    _root, fake = fake_warm
    assert launch.peer_uid is not None
    me = os.getuid()
    monkeypatch.setattr(launch, "peer_uid", lambda sock: me + 4242)
    assert launch.forward(["search", "alpha"]) is None
    fake.close()
    assert fake.received == b""


def test_a_socket_in_a_folder_others_may_write_is_not_trusted(fake_warm):
    from wikimem import launch
    root, fake = fake_warm
    os.chmod(root / ".wikimem", 0o777)
    try:
        assert launch.forward(["search", "alpha"]) is None
        assert fake.connections == 0 and fake.received == b""
    finally:
        os.chmod(root / ".wikimem", 0o755)


def _answers(root) -> bool:
    probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    probe.settimeout(1)
    try:
        probe.connect(str(root / ".wikimem" / "serve.sock"))
        return True
    except OSError:
        return False
    finally:
        probe.close()


def test_a_second_warm_process_takes_the_socket_over_when_the_first_ends(make_vault):
    # Was: a second serve / mcp / watch of the vault never answered forwarded commands, even after
    # the first ended: every one-shot command then started its own process (1-2 s instead of ~0.1 s)
    import time
    root = make_vault(FILES)
    first_vault, second_vault = open_vault(root), open_vault(root)
    first_vault.index()
    first = ForwardServer(first_vault).start()
    second = ForwardServer(second_vault).start()
    try:
        assert first.sock is not None and second.sock is None and _answers(root)  # the first answers
        first.stop()
        deadline = time.monotonic() + 30
        while second.sock is None and time.monotonic() < deadline:
            time.sleep(0.1)
        assert second.sock is not None and _answers(root), "the standing-by process never took the socket"
        result, _ = _probe(["search", "alpha"], root)
        assert result["code"] == 0  # answered warm, by the second process
    finally:
        second.stop()
        first_vault.close()
        second_vault.close()
    assert not (root / ".wikimem" / "serve.sock").exists()
