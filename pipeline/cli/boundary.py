"""The error boundary every command has (`failures`)."""

from __future__ import annotations

import functools
import os
import sys
import traceback
from collections.abc import Callable
from typing import Any, NoReturn

import click

from pipeline.errors import BuildError, first_line

# A handled failure: the message names the file or setting and what is wrong.
HANDLED = (BuildError, FileNotFoundError, ValueError)


def failures(command: Callable[..., None], end_at_once: bool = False) -> Callable[..., None]:
    """A command's error boundary, with a `--debug` option: a handled failure exits 1 and a
    crash 2 (README "Commands"), each with one line on stderr naming the command; `--debug`
    also prints the traceback. Click's own exits (usage errors, --help) and `sys.exit` pass.
    With `end_at_once`, the process that runs the command line (`run`) ends without the
    interpreter's shutdown (`ending_at_once`)."""

    @click.option("--debug", is_flag=True, help="Show the traceback of a failure.")
    @functools.wraps(command)
    def run(*args: Any, debug: bool = False, **kwargs: Any) -> None:
        global _end_at_once
        _end_at_once = _end_at_once or end_at_once
        try:
            command(*args, **kwargs)
        except (click.ClickException, click.exceptions.Exit, click.Abort):
            raise
        except Exception as exc:
            name = click.get_current_context().info_name
            if debug:
                traceback.print_exc()
            if isinstance(exc, HANDLED):
                click.echo(f"{name} failed: {first_line(exc)}", err=True)
                sys.exit(1)
            rerun = "" if debug else " (rerun with --debug)"
            click.echo(f"{name} crashed: {type(exc).__name__}: {first_line(exc)}{rerun}", err=True)
            sys.exit(2)

    return run


_end_at_once = False  # a command asked the process to end without the interpreter's shutdown


def ending_at_once(command: Callable[..., None]) -> Callable[..., None]:
    """`failures` for a command that talks to an object store: obstore's runtime threads (and
    pyarrow's S3 finaliser, which pyarrow.parquet loads) can abort the interpreter's shutdown
    of a process whose work is done and said (exit 134 after a successful publish), so the
    process ends at once (`run`), everything flushed: nothing is left to run."""
    return failures(command, end_at_once=True)


def run(main: Callable[[], object]) -> NoReturn:
    """Run the command line `main` (a click group, standalone) as the process's program, and
    end the process with its exit code: at once, without the interpreter's shutdown, after a
    command that asked for it (`ending_at_once`)."""
    try:
        main()
        code: object = 0
    except SystemExit as exc:
        code = exc.code
    if not isinstance(code, int):
        if code is not None:
            print(code, file=sys.stderr)
        code = 0 if code is None else 1
    if _end_at_once:
        for stream in (sys.stdout, sys.stderr):
            try:
                if stream is not None:
                    stream.flush()
            except (OSError, ValueError):  # said already where it could be (`say`)
                pass
        os._exit(code)
    sys.exit(code)


def say(line: str) -> None:
    """A command's closing line on standard output, once its work is done: an output that
    cannot take it (closed, a full device) changes nothing of what was done, nor the exit
    code, and is said on standard error where that can take it."""
    try:
        if sys.stdout is None:
            raise OSError("standard output is closed")
        sys.stdout.write(line + "\n")
        sys.stdout.flush()
    except (OSError, ValueError) as exc:
        try:
            if sys.stderr is not None:
                sys.stderr.write(f"{line} (standard output could not take this line: {exc})\n")
                sys.stderr.flush()
        except (OSError, ValueError):
            pass
