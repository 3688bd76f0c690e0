"""Progress display for long work: a callback the library calls, rendered in the CLI.

The library only ever calls ``progress(stage, done, total)``; it never imports rich itself. In a
terminal a rich bar appears as soon as a stage starts; off a terminal (a log, CI, a pipe: the
first index of a real vault printed nothing for 22 minutes) one plain line goes to stderr every
few seconds and when a stage ends: done/total, rate and time left.
"""
from __future__ import annotations

import sys
import time
from typing import TextIO

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

LINE_EVERY_S = 5.0  # off a terminal: one line this often per stage


class LineProgress:
    """One line per stage every ``every`` seconds (and at its end), for streams that are not terminals."""

    def __init__(self, stream: TextIO | None = None, every: float = LINE_EVERY_S, clock=time.monotonic):
        self.stream = stream or sys.stderr
        self.every = every
        self.clock = clock
        # stage -> (first report's time, done then, last line's time, done then)
        self._stages: dict[str, tuple[float, int, float | None, int]] = {}

    def __call__(self, stage: str, done: int, total: int) -> None:
        now = self.clock()
        started, done_at_start, last, last_done = self._stages.get(stage, (now, done, None, 0))
        finished = total and done >= total
        if last is not None and not finished and now - last < self.every:
            return
        if last is not None and finished and last_done >= total:
            return  # its end was already said
        self._stages[stage] = (started, done_at_start, now, done)
        if last is None and not finished and done == 0:
            self.stream.write(f"{stage}: {total} to do\n")
        else:
            self.stream.write(self.line(stage, done, total, now - started, done - done_at_start) + "\n")
        self.stream.flush()

    @staticmethod
    def line(stage: str, done: int, total: int, elapsed: float, progressed: int | None = None) -> str:
        """``progressed``: how much of ``done`` happened in ``elapsed`` (a stage first heard of
        mid-way counts its rate from there)."""
        share = f" ({done / total:.0%})" if total else ""
        if elapsed <= 0:  # the stage's first report: no rate yet (it read "0.0/s" mid-way through)
            return f"{stage}: {done}/{total}{share}"
        rate = (done if progressed is None else progressed) / elapsed
        left = (total - done) / rate if rate > 0 and total > done else None
        eta = f", {_duration(left)} left" if left is not None else (f", {_duration(elapsed)}" if done >= total else "")
        return f"{stage}: {done}/{total}{share}, {rate:.1f}/s{eta}"


def _duration(seconds: float) -> str:
    seconds = int(round(seconds))
    if seconds < 60:
        return f"{seconds} s"
    minutes, seconds = divmod(seconds, 60)
    if minutes < 60:
        return f"{minutes} min {seconds:02d} s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours} h {minutes:02d} min"


class ProgressReporter:
    """``mode``: "bar" (a terminal), "lines" (anything else) or "off" (``--quiet``, ``--json``)."""

    def __init__(self, console: Console, enabled: bool = True, mode: str | None = None):
        mode = mode or ("off" if not enabled else "bar" if console.is_terminal else "lines")
        self.mode = mode
        self._progress = Progress(TextColumn("{task.description:<10}"), BarColumn(), MofNCompleteColumn(),
                                  TimeRemainingColumn(), console=console, transient=True) if mode == "bar" else None
        self._lines = LineProgress(console.file) if mode == "lines" else None
        self._tasks: dict[str, int] = {}

    @property
    def enabled(self) -> bool:
        return self.mode != "off"

    def __enter__(self) -> "ProgressReporter":
        if self._progress:
            self._progress.start()
        return self

    def __exit__(self, *exc) -> None:
        if self._progress:
            self._progress.stop()

    def __call__(self, stage: str, done: int, total: int) -> None:
        if self._lines is not None:
            self._lines(stage, done, total)
        if not self._progress:
            return
        task = self._tasks.get(stage)
        if task is None:
            task = self._tasks[stage] = self._progress.add_task(stage, total=total)
        self._progress.update(task, completed=done, total=total)


def process_seconds() -> float | None:
    """Wall seconds since this process started (Linux: /proc), or None where that cannot be read.
    A one-shot command reports it beside the time its own work took: the interpreter, imports and
    opening the cache are part of what a person waits for (issue 36: "in ~610 ms" printed after 2 s)."""
    from .caller import FORWARDED_CLIENT, own_seconds
    client = FORWARDED_CLIENT.get()
    if client is not None:  # a command forwarded to a warm process: the client's own start
        import time
        started = client.get("started")
        return max(0.0, time.time() - started) if isinstance(started, (int, float)) else None
    return own_seconds()
