"""Command-line options that are settings. `setting` makes an option from the model, with the
setting's help and default; `with_settings` hands a command its settings. The options that are
no setting are `FLAG_ONLY`."""

from __future__ import annotations

import functools
import types
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar, Union, get_args, get_origin

import annotated_types
import click
from pydantic import BaseModel
from pydantic.fields import FieldInfo

from pipeline.errors import BuildError
from pipeline.settings import Settings, load_settings

T = TypeVar("T")

# The options that are no setting: one run's actions, the settings file itself, and `--debug`.
FLAG_ONLY = {
    "--config": "the TOML settings file itself",
    "--dry-run": "one run's action: validate, build nothing",
    "--take-over": "one run's action: take the lease of a publish known to be dead",
    "--allow-older": "one run's action: a rollback",
    "--collect-only": "one run's action: collect, publish nothing",
    "--debug": "how a failure is shown",
}
TOOLS = {"generate": "a tool, not a stage: its options are its own"}

config_option = click.option(
    "--config",
    type=click.Path(path_type=Path, dir_okay=False),
    help="TOML settings file (docs/pipeline.example.toml holds every setting).",
)


class SettingOption(click.Option):
    """An option that is the setting `setting` (a dotted key: publish.jobs)."""

    def __init__(self, *args: Any, setting: str, description: str, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.setting, self.description = setting, description


def field_of(key: str) -> FieldInfo:
    """The model's field of a dotted key."""
    model: type[BaseModel] = Settings
    *sections, name = key.split(".")
    for section in sections:
        kind = model.model_fields[section].annotation
        assert isinstance(kind, type) and issubclass(kind, BaseModel), key
        model = kind
    return model.model_fields[name]


def _click_type(field: FieldInfo) -> click.ParamType[Any]:
    """The option's type: the field's, with its bounds, so that a bad value is a usage error."""
    kind: Any = field.annotation
    if get_origin(kind) in (Union, types.UnionType):
        kinds = [k for k in get_args(kind) if k is not type(None)]
        kind = kinds[0] if len(kinds) == 1 else str
    low = next((m.ge for m in field.metadata if isinstance(m, annotated_types.Ge)), None)
    above = next((m.gt for m in field.metadata if isinstance(m, annotated_types.Gt)), None)
    high = next((m.le for m in field.metadata if isinstance(m, annotated_types.Le)), None)
    if kind is int:
        return click.IntRange(min=low, max=high)  # type: ignore[arg-type]
    if kind is float:
        least = low if above is None else above
        return click.FloatRange(min=least, max=high, min_open=above is not None)  # type: ignore[arg-type]
    if kind is Path:
        return click.Path(path_type=Path)
    return click.STRING


def shown(value: object) -> str:
    """A default as the reference and the help show it."""
    if value is None:
        return "unset"
    if isinstance(value, bool):
        return str(value).lower()
    return str(value)


def setting(key: str, *decls: str, more: str = "") -> Callable[[T], T]:
    """The option of the setting `key` (`--` and its last part, unless `decls` name it): its
    help the setting's description (and `more`, in parentheses), its default the setting's
    (from the file, the environment or the model)."""
    field = field_of(key)
    name = key.rsplit(".", 1)[-1]
    flags = decls or (f"--{name.replace('_', '-')}",)
    said = f"{field.description} ({more})" if more else field.description
    text = f"{said}. [setting {key}; default: {shown(field.default)}]"
    if field.annotation is bool:
        kind: dict[str, Any] = {"is_flag": True, "default": False}
    else:
        kind = {"type": _click_type(field), "default": None}
    return click.option(  # type: ignore[return-value]
        *flags,
        key.replace(".", "__"),
        cls=SettingOption,
        setting=key,
        description=said,
        help=text,
        **kind,
    )


def with_settings(command: Callable[..., None]) -> Callable[..., None]:
    """The command called with `settings` in place of `--config` and its setting options (an
    option not given, or a flag not set, leaves the setting as the file or the environment
    says)."""

    @functools.wraps(command)
    def run(*args: Any, config: Path | None = None, **kwargs: Any) -> None:
        params = {p.name: p for p in click.get_current_context().command.params}
        overrides: dict[str, Any] = {}
        rest: dict[str, Any] = {}
        for name, value in kwargs.items():
            option = params.get(name)
            if not isinstance(option, SettingOption):
                rest[name] = value
            elif value is not None and value is not False:
                *sections, last = option.setting.split(".")
                table = overrides
                for section in sections:
                    table = table.setdefault(section, {})
                table[last] = value
        command(*args, settings=load_settings(config, **overrides), **rest)

    return run


def needed(value: T | None, key: str, flag: str) -> T:
    """A setting the command cannot go without; unset, a failure naming it and its option."""
    if value is None:
        raise BuildError(f"{key} is not set: give {flag}, or set it in the settings")
    return value
