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


def failures(
    command: Callable[..., None], exit_without_shutdown: bool = False
) -> Callable[..., None]:
    """A command's error boundary, with `--debug` (docs/operating.md, "Failures and exit
    codes"): one line on stderr, exit 1 for a handled failure and 2 for a crash."""

    @click.option("--debug", is_flag=True, help="Show the traceback of a failure.")
    @functools.wraps(command)
    def run(*args: Any, debug: bool = False, **kwargs: Any) -> None:
        global _exit_without_shutdown
        _exit_without_shutdown = _exit_without_shutdown or exit_without_shutdown
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


# Whether a command asked the process to end without the interpreter's shutdown.
_exit_without_shutdown = False


def object_store_failures(command: Callable[..., None]) -> Callable[..., None]:
    """`failures` for a command that talks to an object store. Its process ends at once when
    the work is done: obstore's threads and pyarrow's S3 finaliser can abort the interpreter's
    shutdown (exit 134 after a successful publish)."""
    return failures(command, exit_without_shutdown=True)


def run(main: Callable[[], object]) -> NoReturn:
    """Run the command line `main` (a click group, standalone) as the process's program, and
    end the process with its exit code: at once, without the interpreter's shutdown, after a
    command that asked for it (`object_store_failures`)."""
    try:
        main()
        code: object = 0
    except SystemExit as exc:
        code = exc.code
    if not isinstance(code, int):
        if code is not None:
            print(code, file=sys.stderr)
        code = 0 if code is None else 1
    if _exit_without_shutdown:
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
