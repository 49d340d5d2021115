"""Progress of a build: progress bars with counts and rates in a terminal (rich), structured
JSON log lines on standard error otherwise (one object per line: time, event, stage, ...)."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from typing import IO, Any

import orjson
from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    SpinnerColumn,
    TextColumn,
    TimeElapsedColumn,
)

Advance = Callable[[int], None]
JSON_EVERY_SECONDS = 5.0


class Reporter:
    """`with reporter.stage("export", total=n) as advance: advance(1)`."""

    def __init__(
        self, stream: IO[str] | None = None, interactive: bool | None = None, enabled: bool = True
    ) -> None:
        self.stream = stream or sys.stderr
        self.enabled = enabled
        self.interactive = enabled and (
            self.stream.isatty() if interactive is None else interactive
        )
        self._bars: Progress | None = None

    def event(self, event: str, **fields: Any) -> None:
        """A log line (JSON) when not in a terminal; nothing in a terminal (the bars say it)."""
        if self.interactive or not self.enabled:
            return
        record = {"time": datetime.now(UTC).isoformat(timespec="milliseconds"), "event": event}
        self.stream.write(orjson.dumps({**record, **fields}).decode() + "\n")
        self.stream.flush()

    def warning(self, message: str) -> None:
        """A problem the build went on past: a line in the terminal, a log line otherwise."""
        if not self.enabled:
            return
        if self._bars is not None:
            self._bars.console.print(f"warning: {message}", markup=False, highlight=False)
        elif self.interactive:
            self.stream.write(f"warning: {message}\n")
            self.stream.flush()
        else:
            self.event("warning", message=message)

    @contextmanager
    def stage(self, name: str, total: int | None = None, unit: str = "items") -> Iterator[Advance]:
        started = time.perf_counter()
        done = 0
        last_log = started
        self.event("stage_started", stage=name, total=total, unit=unit)
        task = None
        if self.interactive:
            if self._bars is None:
                self._bars = Progress(
                    SpinnerColumn(),
                    TextColumn("{task.description:<10}"),
                    BarColumn(),
                    MofNCompleteColumn(),
                    TextColumn("{task.fields[unit]}"),
                    TextColumn("{task.fields[rate]}"),
                    TimeElapsedColumn(),
                    console=Console(file=self.stream, force_terminal=True),
                    transient=False,
                )
                self._bars.start()
            task = self._bars.add_task(name, total=total, unit=unit, rate="")

        def advance(n: int = 1) -> None:
            nonlocal done, last_log
            done += n
            now = time.perf_counter()
            rate = f"{done / max(now - started, 1e-9):,.0f}/s"
            if self._bars is not None and task is not None:
                self._bars.update(task, advance=n, rate=rate)
            elif now - last_log >= JSON_EVERY_SECONDS:
                last_log = now
                self.event("progress", stage=name, done=done, total=total, unit=unit)

        try:
            yield advance
        finally:
            seconds = round(time.perf_counter() - started, 3)
            self.event("stage_finished", stage=name, done=done, unit=unit, seconds=seconds)

    def close(self) -> None:
        if self._bars is not None:
            self._bars.stop()
            self._bars = None


SILENT = Reporter(enabled=False)  # for library use and tests: no output at all
