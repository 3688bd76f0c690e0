"""Moves, deletes and raw/ held to the writer's standard (issue 35 items 3-6, and the move cases of
items 10 and 13): nothing replaced in the trash, nothing outside the vault, no save lost to a
move or an edit, raw/ never touched, one door for every write."""
from __future__ import annotations

import importlib.util
import os
import threading
import time
from pathlib import Path

import pytest

from wikimem.api import open_vault
from wikimem.errors import ConflictError, NoteReadError, PathEscapeError, WikimemError
from wikimem.vault import safe_write

pytestmark = pytest.mark.skipif(not safe_write.supported(), reason="needs dir_fd support (POSIX)")
BENCH = Path(__file__).resolve().parent.parent / "benchmarks" / "bench_save_race.py"


def _vault(make_vault, files=None):
    v = open_vault(make_vault(files or {"SCHEMA.md": "# Schema\n", "notes/A.md": "# A\n\nalpha\n",
                                        "notes/B.md": "# B\n\n[[A]]\n"}), embedder="none")
    v.index()
    return v


def _sha(v, rel):
    return v.files.read_note(rel).sha256


def test_two_deletes_of_one_path_within_a_second_keep_both_copies(make_vault):
    # Was: the second copy replaced the first in .trash/ (1 s stamps, os.replace)
    v = _vault(make_vault)
    gone = []
    for text in ("# A\n\nfirst\n", "# A\n\nsecond\n", "# A\n\nthird\n"):
        (v.root / "notes/A.md").write_text(text)
        gone.append(v.delete_page("notes/A.md", expected_sha256=_sha(v, "notes/A.md")).moved_to)
    assert len(set(gone)) == 3
    kept = sorted((v.root / p).read_text() for p in gone)
    assert kept == sorted(["# A\n\nfirst\n", "# A\n\nsecond\n", "# A\n\nthird\n"])


def test_a_symlinked_trash_is_refused_and_nothing_leaves_the_vault(make_vault, tmp_path):
    # Was: delete_page followed a .trash symlink out of the vault every time
    v = _vault(make_vault)
    outside = tmp_path / "outside"
    outside.mkdir()
    os.symlink(outside, v.root / ".trash")
    with pytest.raises(PathEscapeError, match=r"\.trash"):
        v.delete_page("notes/A.md", expected_sha256=_sha(v, "notes/A.md"))
    assert list(outside.iterdir()) == [] and (v.root / "notes/A.md").exists()


def test_a_move_onto_an_existing_file_names_it_vault_relative(make_vault):
    # Was: a raw FileExistsError with an absolute path
    v = _vault(make_vault)
    with pytest.raises(ConflictError) as err:
        v.move_page("notes/A.md", "notes/B.md", expected_sha256=_sha(v, "notes/A.md"))
    assert "notes/B.md" in str(err.value) and str(v.root) not in str(err.value)
    assert (v.root / "notes/A.md").read_text() == "# A\n\nalpha\n"
    with pytest.raises(ConflictError) as err:  # under an existing file: was FileExistsError, absolute path
        v.move_page("notes/A.md", "notes/B.md/C.md", expected_sha256=_sha(v, "notes/A.md"))
    assert "notes/B.md is a file" in str(err.value) and str(v.root) not in str(err.value)
    with pytest.raises(ConflictError):
        v.write_page("notes/B.md/D.md", "# D\n")


def test_a_move_to_a_case_twin_is_refused(make_vault):
    # Was: notes/b.md created beside notes/B.md (one file on macOS and Windows)
    v = _vault(make_vault)
    with pytest.raises(ConflictError, match="another case"):
        v.move_page("notes/A.md", "notes/b.md", expected_sha256=_sha(v, "notes/A.md"))
    assert sorted(p.name for p in (v.root / "notes").iterdir()) == ["A.md", "B.md"]


def test_a_move_of_a_note_that_is_not_utf8_is_refused_before_anything_moves(make_vault):
    # Was: renamed and logged, then reported as failed
    v = _vault(make_vault)
    (v.root / "notes/latin.md").write_bytes("caf\xe9\n".encode("latin-1"))
    sha = __import__("hashlib").sha256((v.root / "notes/latin.md").read_bytes()).hexdigest()
    log_before = (v.root / "log.md").read_text() if (v.root / "log.md").exists() else ""
    with pytest.raises(NoteReadError):
        v.move_page("notes/latin.md", "notes/moved.md", expected_sha256=sha)
    assert (v.root / "notes/latin.md").exists() and not (v.root / "notes/moved.md").exists()
    assert ((v.root / "log.md").read_text() if (v.root / "log.md").exists() else "") == log_before


def test_index_never_removes_a_temp_named_file_inside_raw(make_vault):
    # Was: raw/.wikimem-*.tmp older than 10 minutes was swept by `wikimem index`
    v = _vault(make_vault, {"SCHEMA.md": "# S\n", "raw/a.md": "# a\n"})
    for rel in ("raw/.wikimem-0123456789ab.tmp", "notes/.wikimem-0123456789ab.tmp"):
        p = v.root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text("a person's file")
        old = time.time() - 3600
        os.utime(p, (old, old))
    v.index()
    assert (v.root / "raw/.wikimem-0123456789ab.tmp").read_text() == "a person's file"
    assert not (v.root / "notes/.wikimem-0123456789ab.tmp").exists()  # ours, outside raw/: still tidied


def test_a_move_raced_by_a_save_between_link_and_unlink_keeps_the_save(make_vault, monkeypatch):
    """The exact window of the issue: a save lands under the old name after the link."""
    from wikimem.vault import moves
    v = _vault(make_vault)
    real = moves._link

    def link_then_save(sfd, name, dfd, new_name, expected, rel):
        linked = real(sfd, name, dfd, new_name, expected, rel)
        tmp = v.root / "notes/.A.md.saving"
        tmp.write_text("# A\n\nthe person's save\n")
        os.replace(tmp, v.root / "notes/A.md")
        return linked

    monkeypatch.setattr(moves, "_link", link_then_save)
    with pytest.raises(ConflictError, match="saved while"):
        v.move_page("notes/A.md", "notes/C.md", expected_sha256=_sha(v, "notes/A.md"))
    assert (v.root / "notes/A.md").read_text() == "# A\n\nthe person's save\n"
    assert not (v.root / "notes/C.md").exists()
    assert not [p for p in (v.root / "notes").iterdir() if p.name.endswith(".tmp")]


def test_an_edit_raced_by_a_save_after_its_last_check_keeps_the_save(make_vault, monkeypatch):
    """The edit's window: a save renamed over the note after the last check, before the swap."""
    if not safe_write._exchange_works:
        pytest.skip("no renameat2(RENAME_EXCHANGE) here: the edit keeps its documented microsecond window")
    v = _vault(make_vault)
    real = safe_write.exchange
    done = []

    def save_then_exchange(fd, a, b):
        if not done:
            done.append(1)
            tmp = v.root / "notes/.A.md.saving"
            tmp.write_text("# A\n\nthe person's save\n")
            os.replace(tmp, v.root / "notes/A.md")
        return real(fd, a, b)

    monkeypatch.setattr(safe_write, "exchange", save_then_exchange)
    with pytest.raises(ConflictError, match="their save is kept"):
        v.edit_page("notes/A.md", "append", expected_sha256=_sha(v, "notes/A.md"), content="agent line")
    assert (v.root / "notes/A.md").read_text() == "# A\n\nthe person's save\n"
    assert not [p for p in (v.root / "notes").iterdir() if p.name.endswith(".tmp")]


def _bench():
    spec = importlib.util.spec_from_file_location("bench_save_race", BENCH)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.adversarial
def test_obsidian_style_saves_racing_edits_and_moves_lose_nothing(tmp_path):
    """The stress version (the 60 s run is benchmarks/bench_save_race.py): an editor saving every
    10 ms while wikimem edits, then moves, the same note. Before the fix: 2 lost in 10 s of edits,
    8 in 10 s of moves on the machine this was written on."""
    bench = _bench()
    vault = bench.make_vault(tmp_path / "v")
    edits = bench.race_edits(vault, 3.0)
    moves = bench.race_moves(vault, 3.0)
    if not moves["moves"]:
        # a move looks at the cache between reading the note and renaming it (its links): on a
        # database store that takes longer than 10 ms, so every move met a newer save and was
        # refused, as it should be; an editor saving every 50 ms lets some through
        more = bench.race_moves(vault, 3.0, interval=0.05)
        moves = {key: moves[key] + more[key] for key in moves}
    assert edits["lost"] == 0 and moves["lost"] == 0, (edits, moves)
    assert edits["saves"] > 0 and moves["saves"] > 0 and moves["moves"] > 0


def _swap(folder: Path, outside: Path, stop: threading.Event, patient: threading.Event | None = None) -> None:
    """Swap ``folder`` between a real folder and a symlink to ``outside`` as fast as possible
    (``patient`` set: the real folder stays 50 ms at a time, so a starved mover gets through)."""
    aside = folder.with_name(folder.name + ".real")
    while not stop.is_set():
        try:
            os.rename(folder, aside)
            os.symlink(outside, folder)
            time.sleep(0.0005)
            os.unlink(folder)
            os.rename(aside, folder)
            # the real folder in place for a while too: some moves succeed
            time.sleep(0.05 if patient is not None and patient.is_set() else 0.002)
        except OSError:
            pass
    if folder.is_symlink():
        os.unlink(folder)
    if aside.exists() and not folder.exists():
        os.rename(aside, folder)


@pytest.mark.adversarial
def test_moves_and_deletes_raced_by_a_symlink_swap_never_land_outside(make_vault, tmp_path):
    # Was: 19 of 23 successful moves landed outside the vault
    from wikimem.vault.trash import move_to_trash, rename_note
    root = make_vault({"SCHEMA.md": "# S\n", **{f"inside/n{i}.md": f"# n{i}\n" for i in range(200)}})
    files = open_vault(root, embedder="none").files
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    stop, patient = threading.Event(), threading.Event()
    swapper = threading.Thread(target=_swap, args=(root / "inside", outside, stop, patient))
    swapper.start()
    done = 0
    try:
        started = time.monotonic()
        i = 0
        # 2.5 s, longer (up to 60 s) until a few moves got through: a loaded machine fails most of them.
        # A refused move leaves its note in place and is tried again (was: 200 refusals in a row under
        # stress-ng --cpu 4 used every note up and left no move done, a vacuous run)
        while i < 200 and (time.monotonic() - started < 2.5 or (done < 5 and time.monotonic() - started < 60)):
            rel = f"inside/n{i}.md"
            sha = __import__("hashlib").sha256(f"# n{i}\n".encode()).hexdigest()
            try:
                if i % 2:
                    rename_note(files, rel, f"inside/sub/m{i}.md", sha)
                else:
                    move_to_trash(files, rel, sha)
                done += 1
            except (WikimemError, OSError):
                if done == 0 and time.monotonic() - started > 5:
                    patient.set()  # starved under load: longer windows, the swaps still racing
                if (root / rel).exists():
                    continue  # still in place: the same note again
            i += 1
    finally:
        stop.set()
        swapper.join()
    leaked = [p for p in outside.rglob("*")]
    assert leaked == [], leaked
    assert done > 0
    kept = {p.read_text() for p in root.rglob("*.md") if p.name != "SCHEMA.md"}
    assert all(f"# n{j}\n" in kept for j in range(i))  # every note still in the vault (moved, trashed or not)


def test_every_write_goes_through_a_door():
    """Structure: only the door modules call a primitive that writes, renames or removes files.
    The cache's own modules write only under .wikimem/ (or the per-user model cache) and are listed
    with that reason; anything else that wants to write a file of the vault calls a door
    (VaultFiles.write_note / write_file / create_file, ingest.raw.add_raw, vault.trash)."""
    import re
    package = Path(__file__).resolve().parent.parent / "wikimem"
    doors = {"vault/safe_write.py", "vault/moves.py", "vault/files.py", "vault/trash.py"}
    cache = {  # write only inside the cache folder or the user's model cache, never a vault file
        "stores/local/cachedir.py", "stores/local/vectors.py", "stores/sidefiles.py", "lint/memo.py", "lint/rules/content.py", "watch/control.py",
        "embed/e5_onnx.py",
        "cli/forward.py",  # its socket, in .wikimem/
        "serve/tokens.py",  # the token file, in the user's config folder (never in a vault)
        "stores/usage.py",  # .wikimem/usage.sqlite, replaced when damaged
        "index/passages_job.py",  # the background passages job's lock, state and log, in .wikimem/
    }
    tooling = {  # never a vault's file
        "mcp/listing.py",  # `python -m wikimem.mcp.listing` regenerates the package's own listing.json
        "mcp/wire.py",  # points fd 1 at stderr (or /dev/null) while serving, as the SDK did
    }
    init = {"api.py"}  # `wikimem init` creating a new vault's template files ("x": never replacing)
    writes = re.compile(r"os\.(replace|rename|link|unlink|remove|rmdir|makedirs|mkdir)\(|shutil\.(move|copy\w*|rmtree)\("
                        r"|\.(write_bytes|write_text|unlink|rmdir|mkdir|rename|touch)\(|atomic_write_bytes\("
                        r"|open\([^)\n]*['\"][wax]b?\+?['\"]|os\.O_(WRONLY|RDWR|CREAT)")
    offenders = []
    for path in sorted(package.rglob("*.py")):
        rel = path.relative_to(package).as_posix()
        if rel in doors | cache | init | tooling:
            continue
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            code = line.split("#", 1)[0]
            if writes.search(code) and "def " not in code:
                offenders.append(f"{rel}:{n}: {line.strip()}")
    assert offenders == [], "write outside a door:\n" + "\n".join(offenders)


def test_a_save_displaced_by_the_swap_goes_back_even_when_the_note_was_removed_meanwhile(tmp_path):
    """_settle after the exchange: what went aside is a person's save (not what the caller read) and
    the note is gone by now: their save comes back under the name, nothing is unlinked."""
    folder = tmp_path / "f"
    folder.mkdir()
    (folder / ".wikimem-aside.tmp").write_bytes(b"their save")
    fd = os.open(folder, os.O_RDONLY)
    try:
        with pytest.raises(ConflictError, match="their save is kept"):
            safe_write._settle(fd, ".wikimem-aside.tmp", "n.md", b"ours", "0" * 64, "n.md")
    finally:
        os.close(fd)
    assert (folder / "n.md").read_bytes() == b"their save"
    assert sorted(p.name for p in folder.iterdir()) == ["n.md"]
