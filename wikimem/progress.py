"""Progress display for long work: a callback the library calls, rendered by rich in the CLI.

The library only ever calls ``progress(stage, done, total)``; it never imports rich itself.
"""
from __future__ import annotations

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn


class ProgressReporter:
    def __init__(self, console: Console, enabled: bool = True):
        self.enabled = enabled
        self._progress = Progress(TextColumn("{task.description:<10}"), BarColumn(), MofNCompleteColumn(),
                                  TimeRemainingColumn(), console=console, transient=True) if enabled else None
        self._tasks: dict[str, int] = {}

    def __enter__(self) -> "ProgressReporter":
        if self._progress:
            self._progress.start()
        return self

    def __exit__(self, *exc) -> None:
        if self._progress:
            self._progress.stop()

    def __call__(self, stage: str, done: int, total: int) -> None:
        if not self._progress:
            return
        task = self._tasks.get(stage)
        if task is None:
            task = self._tasks[stage] = self._progress.add_task(stage, total=total)
        self._progress.update(task, completed=done, total=total)
