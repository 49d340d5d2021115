"""The build's handled failures: each message names the file or table and what is wrong, and
the command line prints it on one line and exits 1."""

from __future__ import annotations


class BuildError(Exception):
    """A handled build failure: the message names the file or table and what is wrong."""


class InputError(BuildError):
    """A problem with the input that stops the build: names the file and what is wrong."""


def first_line(exc: BaseException) -> str:
    """The first line of an error's message, or its type's name when the message is empty."""
    lines = str(exc).strip().splitlines()
    return lines[0] if lines else type(exc).__name__
