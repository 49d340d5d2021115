"""docs/reference.md and docs/pipeline.example.toml, generated from click's commands and the
settings' model. `python -m pipeline.cli.reference` writes them (`make golden`); with `--check`
it writes nothing, names a file out of date and exits 1."""

from __future__ import annotations

import inspect
import json
import sys
import types
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Literal, Union, get_args, get_origin

import annotated_types
import click
from pydantic import BaseModel
from pydantic.fields import FieldInfo

from pipeline.cli import main
from pipeline.cli.options import FLAG_ONLY, TOOLS, SettingOption, field_of
from pipeline.settings import Settings, env_name

ROOT = Path(__file__).resolve().parents[2]
REFERENCE = ROOT / "docs" / "reference.md"
EXAMPLE = ROOT / "docs" / "pipeline.example.toml"
COMMAND = "python -m pipeline.cli.reference"


def sections(
    model: type[BaseModel] = Settings, above: str = ""
) -> Iterator[tuple[str, type[BaseModel], list[tuple[str, FieldInfo]]]]:
    """(dotted name, model, its settings as (key, field)) of the top level and of every
    section, nested ones after their own settings."""
    own, nested = [], []
    for name, field in model.model_fields.items():
        kind = field.annotation
        if isinstance(kind, type) and issubclass(kind, BaseModel):
            nested.append((f"{above}{name}", kind))
        else:
            own.append((f"{above}{name}", field))
    yield above.rstrip("."), model, own
    for name, kind in nested:
        yield from sections(kind, f"{name}.")


def type_name(kind: Any) -> str:
    """A setting's type as the reference writes it."""
    origin, args = get_origin(kind), get_args(kind)
    if origin in (Union, types.UnionType):
        return " or ".join(type_name(a) for a in args if a is not type(None))
    if origin is Literal:
        return " or ".join(json.dumps(a) for a in args)
    if origin is list:
        return f"list of {type_name(args[0])}"
    if origin is dict:
        return f"table of {type_name(args[1])}"
    if get_origin(kind) is not None and hasattr(kind, "__metadata__"):  # Annotated
        return type_name(args[0])
    if isinstance(kind, type) and issubclass(kind, BaseModel):
        return "table (" + ", ".join(kind.model_fields) + ")"
    return {Path: "path", str: "string", bool: "boolean"}.get(kind, getattr(kind, "__name__", ""))


def bounds(field: FieldInfo) -> str:
    """A setting's bounds: `>= 1`, `<= 65535`, a multiple."""
    said = []
    for m in field.metadata:
        if isinstance(m, annotated_types.Ge):
            said.append(f">= {m.ge}")
        elif isinstance(m, annotated_types.Gt):
            said.append(f"> {m.gt}")
        elif isinstance(m, annotated_types.Le):
            said.append(f"<= {m.le}")
        elif isinstance(m, annotated_types.MultipleOf):
            said.append(f"multiple of {m.multiple_of}")
    return ", ".join(said)


def toml(value: Any) -> str:
    """A value as TOML writes it, inline."""
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, str | Path):
        return json.dumps(str(value))
    if isinstance(value, list):
        return "[" + ", ".join(toml(v) for v in value) + "]"
    if isinstance(value, dict):
        inner = ", ".join(
            f"{json.dumps(k) if '/' in k else k} = {toml(v)}" for k, v in value.items()
        )
        return "{ " + inner + " }" if inner else "{}"
    raise TypeError(f"{value!r}: no TOML form")


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def default(value: Any) -> str:
    """A default as the reference writes it: TOML, or unset."""
    return "unset" if value is None else f"`{toml(value)}`"


def _help(text: str | None) -> list[str]:
    """A command's help, each paragraph on one line."""
    paragraphs = inspect.cleandoc(text or "").split("\n\n")
    return [line for p in paragraphs for line in (" ".join(p.split("\n")), "")]


def _commands() -> list[str]:
    lines = ["## Commands", ""]
    lines += [
        "Every option but the flag-only ones below is also a setting: its default is the "
        "setting's (from the model, the settings file or the environment), and given, it "
        "overrides them. Each command also takes `-h`/`--help`.",
        "",
    ]
    for name, command in main.commands.items():
        lines += [f"### `pipeline {name}`", ""]
        lines += _help(command.help)
        lines += ["| Option | Setting | Default | What it does |", "|---|---|---|---|"]
        for param in command.params:
            if isinstance(param, click.Argument):
                flag, setting, said, text = param.human_readable_name, "argument", "", ""
            elif isinstance(param, SettingOption):
                flag, setting = ", ".join(param.opts), f"`{param.setting}`"
                said, text = default(field_of(param.setting).default), param.description
            else:
                assert isinstance(param, click.Option)
                flag, said, text = ", ".join(param.opts), "", param.help or ""
                setting = "flag only" if param.opts[0] in FLAG_ONLY else "tool option"
                if isinstance(param.default, int | str) and not isinstance(param.default, bool):
                    said = default(param.default)
            flat = isinstance(param, click.Argument) or getattr(param, "is_flag", False)
            metavar = "" if flat else f" {param.type.name.split()[0].upper()}"
            flag = f"`{flag}{metavar}`"
            lines.append(f"| {flag} | {setting} | {said} | {_cell(text)} |")
        lines.append("")
    lines += ["## Flag-only options", ""]
    lines += ["One run's actions, not settings:", ""]
    lines += [f"- `{flag}`: {why}" for flag, why in FLAG_ONLY.items()]
    lines += [f"- every option of `pipeline {name}`: {why}" for name, why in TOOLS.items()]
    return [*lines, ""]


def _settings() -> list[str]:
    lines = ["## Settings", ""]
    lines += [
        "Defaults < the TOML file (`--config`, [pipeline.example.toml](pipeline.example.toml) "
        "holds every setting) < the environment < the command line. Unknown keys are an error; "
        "a key of an older layout is refused with the key that replaced it.",
        "",
    ]
    for name, model, fields in sections():
        title = "Top level" if not name else f"`[{name}]`"
        lines += [f"### {title}", ""]
        if name:
            lines += [inspect.cleandoc(model.__doc__ or "").replace("\n", " "), ""]
        lines += ["| Key | Type | Default | Environment | Description |", "|---|---|---|---|---|"]
        for key, field in fields:
            kind = type_name(field.annotation) + (f" ({b})" if (b := bounds(field)) else "")
            lines.append(
                f"| `{key}` | {_cell(kind)} | {_cell(default(field.default))} "
                f"| `{env_name(key)}` | {_cell(field.description or '')} |"
            )
        lines.append("")
    return lines


def reference() -> str:
    """docs/reference.md."""
    head = [
        "# Reference: commands, options and settings",
        "",
        f"Generated from the code by `{COMMAND}` (`make golden`); a test fails when it is out "
        "of date. Edit the code (the commands' help, the settings' descriptions), not this page.",
        "",
    ]
    return "\n".join(head + _commands() + _settings()).rstrip("\n") + "\n"


def example() -> str:
    """docs/pipeline.example.toml: every setting with its default, under its description; an
    unset one commented out, with an example."""
    lines = [
        "# pipeline.toml: every setting with its default; `pipeline build --config pipeline.toml`.",
        f"# Generated by `{COMMAND}`; docs/reference.md says more.",
        "# The environment overrides the file: PIPELINE_<KEY>, sections joined by __",
        "# (PIPELINE_BUILD__DUCKDB_THREADS=4). Unknown keys are an error.",
    ]
    for name, model, fields in sections():
        lines.append("")
        if name:
            lines += [f"# {inspect.cleandoc(model.__doc__ or '')}", f"[{name}]"]
        for key, field in fields:
            leaf = key.rsplit(".", 1)[-1]
            lines.append(f"# {field.description}")
            if field.default is None:
                lines.append(f"# {leaf} = {toml((field.examples or [''])[0])}")
            else:
                lines.append(f"{leaf} = {toml(field.default)}")
                if field.examples:
                    lines.append(f"# {leaf} = {toml(field.examples[0])}")
    return "\n".join(lines) + "\n"


def outputs() -> dict[Path, str]:
    return {REFERENCE: reference(), EXAMPLE: example()}


def main_(argv: list[str]) -> int:
    """Write the files, or with `--check` say which differ from what the code generates."""
    if argv not in ([], ["--check"]):
        print(f"usage: {COMMAND} [--check]", file=sys.stderr)
        return 2
    stale = [p for p, text in outputs().items() if not p.is_file() or p.read_text() != text]
    if argv == ["--check"]:
        for path in stale:
            print(f"{path.relative_to(ROOT)}: out of date: run `{COMMAND}`", file=sys.stderr)
        return 1 if stale else 0
    for path, text in outputs().items():
        path.write_text(text, encoding="utf-8")
    said = ", ".join(str(p.relative_to(ROOT)) for p in stale) or "nothing changed"
    print(f"written: {said}")
    return 0


if __name__ == "__main__":
    sys.exit(main_(sys.argv[1:]))
