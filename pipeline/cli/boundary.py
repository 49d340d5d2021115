"""The error boundary every command has (`failures`), and the options several share."""

from __future__ import annotations

import functools
import os
import sys
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any, NoReturn

import click

from pipeline.errors import BuildError, first_line
from pipeline.settings import DEFAULT_OUTPUT

# A handled failure: the message names the file or setting and what is wrong.
HANDLED = (BuildError, FileNotFoundError, ValueError)


def failures(command: Callable[..., None], exit_now: bool = False) -> Callable[..., None]:
    """A command's error boundary, with a `--debug` option: a handled failure exits 1 and a
    crash 2 (README "Commands"), each with one line on stderr naming the command; `--debug`
    also prints the traceback. Click's own exits (usage errors, --help) and `sys.exit` pass.
    With `exit_now`, the process ends as soon as the command has, without the interpreter's
    shutdown (`ending_now`)."""

    @click.option("--debug", is_flag=True, help="Show the traceback of a failure.")
    @functools.wraps(command)
    def run(*args: Any, debug: bool = False, **kwargs: Any) -> None:
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
                _exit(1, exit_now)
            rerun = "" if debug else " (rerun with --debug)"
            click.echo(f"{name} crashed: {type(exc).__name__}: {first_line(exc)}{rerun}", err=True)
            _exit(2, exit_now)
        if exit_now:
            _exit(0, exit_now)

    return run


def ending_now(command: Callable[..., None]) -> Callable[..., None]:
    """`failures` for a command that talks to an object store: obstore's runtime threads (and
    pyarrow's S3 finaliser, which pyarrow.parquet loads) can abort the interpreter's shutdown
    of a process whose work is done and said (exit 134 after a successful publish), so the
    process ends at once, everything flushed: nothing is left to run."""
    return failures(command, exit_now=True)


def _exit(code: int, now: bool) -> NoReturn:
    if now:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)
    sys.exit(code)


published_output = click.option(
    "--output",
    "output_dir",
    type=click.Path(path_type=Path),
    default=DEFAULT_OUTPUT,
    show_default=True,
    help="Output directory of a build.",
)
