"""A note's held passages embedded by one detached process after ``wikimem index`` returns.

A note's *held* passages (index/passages.py) are only read back to re-rank the chunks a search
found; no search scans them. On a first build they are half the embedding (the 170-page vault:
~86 s of 172 s), so ``wikimem index`` (setting ``index_passages = "background"``, the default)
commits with every chunk's vector in, hands the passages to one detached child and returns, as
``git gc --auto`` detaches: search finds every chunk by meaning at once, and ranks as with
``embed_passages = "transcripts"`` until the last passage lands (``wikimem status`` shows how far).
Fewer than ``index_passages_min`` passages missing (a small vault, an edit) are embedded before
returning, as before; ``--wait`` or ``index_passages = "wait"`` always does.

The child is ``embed_pending(passages="held")`` (background.py) in a loop: it commits every few
seconds under the writer lock, re-syncs when a build or a rebuild commits meanwhile, never saves
over vectors another process saved, and takes over no chunk. Killing it loses at most the batch in
flight: the vectors it embedded are in the vector cache, and the next index / watch / serve picks
them up and continues. Its files in ``.wikimem/``::

    passages.lock       flock(2) held by the job for its life, its pid inside (for messages): one
                        job per vault on this machine; the kernel frees it when the job dies
    passages.json       the job's last state: running | done | stopped | failed, with counts
    logs/passages.log   its output (the one before kept as passages.log.1 past 2 MB)

Each is opened as a regular file of one link in ``.wikimem`` itself (O_NOFOLLOW, O_NONBLOCK,
fstat): a symlink, a hard link, a folder or a FIFO standing there is removed and the file made
anew, never written through (a linked lock had a note truncated to the pid). A job that cannot
start leaves the passages to the build that wanted it; ``--wait`` beside a stopped job (SIGSTOP)
is an error saying how to resume it; a job whose cache a build moved to another embedder or
passage record stops instead of syncing it back to its own.

The lock is taken by the parent and inherited by the child (the same open file), so two
``wikimem index`` at once start one job, never two. While it is held, every other embedder of the
vault (a watcher, a server, another ``index``) leaves the held passages to it (``embed_pending``
turns ``all`` into ``searched``). The job stops without saving when its lock file is no longer the
one it holds (``.wikimem`` deleted or replaced: a rebuild from nothing follows, not this job).
"""
from __future__ import annotations

import contextlib
import errno
import fcntl
import json
import logging
import os
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

from ..errors import LockError
from ..stores.sidefiles import SAFE_OPEN, clear_cache_entry, flock_holder, open_cache_file, pid_alive
from ..vault.files import ensure_cache_folder

log = logging.getLogger(__name__)

LOCK = "passages.lock"
STATE = "passages.json"
LOG = Path("logs") / "passages.log"
LOG_KEEP_BYTES = 2 * 1024 * 1024
NICE = 10  # below the user's own commands: a search beside the job gets the cores first
SLICE_S = 30.0  # one embed_pending call of the job; its state file is rewritten between slices
LOCK_WAIT_S = 30.0
LOCK_RETRIES = 40  # the writer lock busy this many slices in a row (a long rebuild's lexical stage): give up

# As the watch daemon starts (watch/control.py DAEMON_MAIN): not `-m`, which puts the current folder
# first on sys.path, where a folder named `wikimem` would shadow the package. The folder this process
# imported wikimem from goes first instead (argv[1]), so the job runs the same code as the command
# that started it (a checkout run from its folder, beside an older installed copy).
CHILD_MAIN = ("import sys; sys.path[:] = [sys.argv.pop(1)] + [p for p in sys.path if p not in ('', '.')]; "
              "from wikimem.index.passages_job import child_main; child_main()")
PACKAGE_HOME = str(Path(__file__).resolve().parents[2])


def _dir(root: Path) -> Path:
    return Path(root) / ".wikimem"


# Every file of the job is opened as a regular file of ``.wikimem`` itself (sidefiles.open_cache_file):
# a ``passages.lock`` linked to a note had the job's pid written over the note (truncated).
STATE_MAX_BYTES = 64 * 1024  # a state file is ~300 bytes: a bigger one is not the job's, and is not read

def job_pid(root: Path) -> int | None:
    """The pid of the passages job running for the vault at ``root`` (on this machine), or None.
    As ``sidefiles.flock_holder``: the ``flock``, not the pid, says whether one runs (a dead job's
    pid taken by another process is not a job), but only on the lock file itself."""
    return flock_holder(_dir(root) / LOCK)


def _saved_state(folder: Path) -> dict[str, Any]:
    """The job's last state file, or {} (missing, not a regular file, too big, not a JSON object)."""
    try:
        fd = open_cache_file(folder / STATE, os.O_RDONLY)
    except OSError:
        return {}
    try:
        data = b""
        while len(data) <= STATE_MAX_BYTES and (part := os.read(fd, STATE_MAX_BYTES + 1 - len(data))):
            data += part
    except OSError:
        return {}
    finally:
        os.close(fd)
    if len(data) > STATE_MAX_BYTES:
        return {}
    try:
        saved = json.loads(data.decode("utf-8"))
    except (ValueError, RecursionError):  # a nesting 100,000 deep is a RecursionError, not a ValueError
        return {}
    return saved if isinstance(saved, dict) else {}


def read_state(root: Path) -> dict[str, Any] | None:
    """What ``wikimem status`` shows of the job: whether one runs (its lock) and its last state."""
    pid = job_pid(root)
    saved = _saved_state(_dir(root))
    if pid is None and not saved:
        return None
    info = {"running": pid is not None, "pid": pid if pid is not None else saved.get("pid")}
    if pid is None and saved.get("state") in ("running", "starting"):
        saved["state"] = "died"
        saved["reason"] = "killed or crashed; the next `wikimem index` continues its work"
    info.update((k, v) for k, v in saved.items() if k not in info)
    info["log"] = str(_dir(root) / LOG)
    return info


# -- the parent: after the chunk stage of a build ------------------------------------------------
def embed_after_build(ctx, mode: str, held_missing: int, batch: int, progress, wait: float):
    """The embedding step of a build. ``mode``: "all" (every missing vector here, but the held
    passages a running job holds: never waits for it; a write-back's or a Python caller's build),
    "wait" (every missing vector before returning, waiting for a running job to finish its share:
    ``wikimem index --wait``), "background" (every searched vector, then the held passages to a
    detached job when at least ``index_passages_min`` are missing). Returns (the embed_pending
    report, the job's dict or None)."""
    from .background import embed_pending

    def embed(which: str):
        return embed_pending(ctx, batch=batch, progress=progress, wait=wait, background=False, passages=which)

    running = job_pid(ctx.root)
    detach = mode == "background" and held_missing > 0 and held_missing >= ctx.settings.index_passages_min
    which = "searched" if (detach or running is not None) else "all"
    more = embed(which)
    left = more.passages_wanted - more.passages_held
    if which == "all" or left <= 0:
        return more, None
    searched_left = (more.vectors_wanted - more.passages_wanted) - (more.vectors - more.passages_held)
    if searched_left > 0 or more.embedder is None:  # embedding failed (the notices say why): no job
        return more, None
    if mode == "wait" or (mode == "all" and job_pid(ctx.root) is None):
        _wait_for_job(ctx, progress)  # its share first (nothing embedded twice), then what is left, here
        rest = embed("all")
        rest.embedded_now += more.embedded_now
        rest.searched_ready_s = more.searched_ready_s
        return rest, None
    try:
        job = start(ctx, left) if mode == "background" else None
    except OSError as exc:  # no job to be had: the passages are embedded here, as `--wait` would
        log.warning("could not start the background passages job: %s", exc)
        rest = embed("all")
        rest.embedded_now += more.embedded_now
        rest.searched_ready_s = more.searched_ready_s
        rest.notices.append(f"could not start the background passages job ({exc}); the note passages were "
                            "embedded before returning")
        return rest, None
    if job is None:  # one runs (it was already, or another index started it a moment ago)
        job = {"pid": job_pid(ctx.root), "started": False, "passages": left, "log": str(_dir(ctx.root) / LOG)}
    return more, job


def _wait_for_job(ctx, progress) -> None:
    """Until the running job lets go of its lock, showing its progress from the manifest."""
    while (pid := job_pid(ctx.root)) is not None:
        if _stopped(pid):  # SIGSTOP, a frozen cgroup: it would never let go, and this wait never end
            raise LockError(f"the passages job (pid {pid}) of {ctx.root} is stopped: `kill -CONT {pid}` resumes it, "
                            f"`kill {pid}` ends it (the next `wikimem index` continues its work)")
        if progress:
            with contextlib.suppress(Exception):  # a display only: a busy database must not stop the wait
                meta = ctx.cache.meta()
                from .embedding import PASSAGES_STAGE
                progress(PASSAGES_STAGE, int(meta.get("passages_held") or 0), int(meta.get("passages_wanted") or 0))
        time.sleep(0.5)


def _stopped(pid: int) -> bool:
    """Whether process ``pid`` is stopped by a signal (state T) or frozen, from /proc (Linux)."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] in ("T", "t")
    except (OSError, IndexError):
        return False


def _take_lock(folder: Path) -> int | None:
    """The job's lock, taken (an open fd), or None when a live job holds it. A status probe holds it
    shared for a moment (``flock_holder``): that is retried for up to a second, as the watcher does."""
    fd = open_cache_file(folder / LOCK, os.O_RDWR | os.O_CREAT)
    deadline = time.monotonic() + 1.0
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return fd
        except OSError as exc:
            if exc.errno not in (errno.EAGAIN, errno.EACCES, errno.EWOULDBLOCK):
                os.close(fd)
                raise
            holder = os.pread(fd, 32, 0).decode("ascii", "replace").strip()
            if pid_alive(holder) or time.monotonic() >= deadline:
                os.close(fd)
                return None
            time.sleep(0.02)


def start(ctx, passages: int) -> dict[str, Any] | None:
    """Start the job detached (its own session, stdin closed, output to logs/passages.log) holding
    the lock this process took for it; None when a job already runs. OSError: it could not start
    (no log file to be had, no Python at ``sys.executable``): the caller embeds the passages itself."""
    folder = _dir(ctx.root)
    ensure_cache_folder(folder, parents=False)
    fd = _take_lock(folder)
    if fd is None:
        return None
    folder_fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    out = None
    try:
        # "starting" until the child writes its own state: a child that dies before (an import error,
        # a killed start) shows as died in `wikimem status`, not as nothing at all
        _write_state(folder_fd, {"state": "starting", "started_at": time.time(), "passages": passages})
        env = dict(os.environ)
        # the flags this command was given (--embedder ...), as the settings' own environment names:
        # never on the command line, where `ps` shows them to every user of the machine
        env.update((f"WIKIMEM_{k.upper()}", str(v)) for k, v in ctx.overrides.items())
        try:
            out = _open_log(folder)
            with open(os.devnull, "rb") as devnull:
                proc = subprocess.Popen([sys.executable, "-c", CHILD_MAIN, PACKAGE_HOME, str(ctx.root), str(fd)],
                                        stdin=devnull, stdout=out, stderr=subprocess.STDOUT, start_new_session=True,
                                        close_fds=True, pass_fds=(fd,), env=env)
        except OSError as exc:
            _write_state(folder_fd, {"state": "failed", "reason": f"could not start: {exc}", "passages": passages,
                                     "finished_at": time.time()})
            raise
        os.ftruncate(fd, 0)
        os.pwrite(fd, str(proc.pid).encode("ascii"), 0)
    finally:
        if out is not None:
            os.close(out)
        os.close(folder_fd)
        os.close(fd)  # the child holds the same open file, and so the lock, until it exits
    # reaped when it exits: a caller that lives on (a Python program, a server) keeps no zombie
    threading.Thread(target=proc.wait, name=f"wikimem-passages-{proc.pid}", daemon=True).start()
    return {"pid": proc.pid, "started": True, "passages": passages, "log": str(folder / LOG)}


def _open_log(folder: Path) -> int:
    """``logs/passages.log`` opened to append (a real folder and file of the cache: a symlink there is
    removed, never written through), the log before kept as ``.1`` once it passes LOG_KEEP_BYTES."""
    logs = folder / LOG.parent
    if logs.is_symlink() or (logs.exists() and not logs.is_dir()):
        clear_cache_entry(logs)
    logs.mkdir(exist_ok=True)
    path = folder / LOG
    with contextlib.suppress(OSError):
        if path.lstat().st_size > LOG_KEEP_BYTES:  # one old log kept, never growing without bound
            os.replace(path, path.with_name(LOG.name + ".1"))
    return open_cache_file(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT)


def _write_state(folder_fd: int, state: dict[str, Any]) -> None:
    """``passages.json`` replaced whole in the folder open at ``folder_fd`` (wherever it is now): a
    temp file made new (never written through a symlink left at its name), then renamed."""
    text = json.dumps(state, ensure_ascii=False, indent=1)
    tmp = f".{STATE}.{os.getpid()}.tmp"
    with contextlib.suppress(OSError):
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp, dir_fd=folder_fd)
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | SAFE_OPEN, 0o644, dir_fd=folder_fd)
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
        os.replace(tmp, STATE, src_dir_fd=folder_fd, dst_dir_fd=folder_fd)


# -- the child -------------------------------------------------------------------------------------
class Job:
    """The detached process: embeds the held passages, slice by slice, while its lock is its own."""

    def __init__(self, ctx, fd: int):
        self.ctx, self.fd = ctx, fd
        self.folder = _dir(ctx.root)
        self.folder_fd = os.open(self.folder, os.O_RDONLY | os.O_DIRECTORY)  # the state file goes there
        self.state: dict[str, Any] = {"pid": os.getpid(), "started_at": time.time(), "state": "running",
                                      "embedded": 0}

    def intact(self) -> bool:
        """Whether ``.wikimem/passages.lock`` is still the file this job holds (not deleted with
        the cache folder, nor replaced)."""
        try:
            here, held = os.stat(self.folder / LOCK), os.fstat(self.fd)
        except OSError:
            return False
        return (here.st_dev, here.st_ino) == (held.st_dev, held.st_ino)

    def save_state(self, **values: Any) -> None:
        self.state.update(values)
        _write_state(self.folder_fd, self.state)  # in the folder the job started in, wherever it is now

    def run(self) -> int:
        from .background import JobLost, embed_pending

        os.ftruncate(self.fd, 0)
        os.pwrite(self.fd, str(os.getpid()).encode("ascii"), 0)
        self.save_state()
        busy = 0
        while True:
            if not self.intact():
                return self._end("stopped", reason="the cache folder was deleted or replaced; nothing saved")
            try:
                report = embed_pending(self.ctx, max_seconds=SLICE_S, batch=self.ctx.settings.embed_batch,
                                       wait=LOCK_WAIT_S, background=False, passages="held", still_ours=self.intact)
            except JobLost as exc:
                return self._end("stopped", reason=str(exc))
            except LockError as exc:
                busy += 1
                if busy > LOCK_RETRIES:
                    return self._end("failed", reason=str(exc), code=1)
                log.info("the cache is busy (%s); trying again", exc)
                time.sleep(2.0)
                continue
            busy = 0
            held, wanted = report.passages_held, report.passages_wanted
            self.state["embedded"] += report.embedded_now
            self.save_state(passages_held=held, passages_wanted=wanted)
            log.info("passages %d/%d (%d embedded by this job)", held, wanted, self.state["embedded"])
            if held >= wanted:
                return self._end("done")
            if report.embedded_now == 0:  # no progress: the embedder failed, or nothing is to be had
                notices = "; ".join(report.notices) or "no passage could be embedded"
                return self._end("stopped", reason=notices, code=1)

    def _end(self, state: str, reason: str | None = None, code: int = 0) -> int:
        times = os.times()
        self.save_state(state=state, reason=reason, finished_at=time.time(), cpu_s=round(times.user + times.system, 2))
        log.info("passages job %s%s", state, f": {reason}" if reason else "")
        with contextlib.suppress(OSError):
            if self.intact():
                os.ftruncate(self.fd, 0)
        return code


def child_main(argv: list[str] | None = None) -> None:
    """``python -c CHILD_MAIN ROOT FD``: the job for the vault at ROOT, holding the lock on FD."""
    args = sys.argv[1:] if argv is None else argv
    logging.basicConfig(level=logging.INFO, format="%(asctime)s pid %(process)d %(message)s")
    logging.getLogger("faiss").setLevel(logging.WARNING)  # which CPU build it loaded: not news in this log
    with contextlib.suppress(OSError):
        os.nice(NICE)
    from ..core import Context

    root, fd = Path(args[0]), int(args[1])
    ctx = Context(root)
    code = 1
    job = None
    try:
        job = Job(ctx, fd)
        code = job.run()
    except Exception as exc:  # noqa: BLE001 - a detached process: its log is where a failure can be read
        log.exception("passages job failed")
        if job is not None:
            job.save_state(state="failed", reason=f"{type(exc).__name__}: {exc}", finished_at=time.time())
    finally:
        with contextlib.suppress(Exception):
            ctx.close()
    sys.exit(code)
