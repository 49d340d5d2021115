"""Typed settings, one section per stage: defaults < TOML file < environment (`PIPELINE_*`,
`__` between a section and its key) < command line. An unknown key is an error, and an older
layout's key is refused with its new name (`OLD_KEYS`). docs/reference.md lists every setting."""

from __future__ import annotations

import os
import tomllib
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any, ClassVar

from pydantic import Field, ValidationError, field_validator
from pydantic_settings import (
    BaseSettings,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
    TomlConfigSettingsSource,
)

from pipeline.remote import InputLocation
from pipeline.settings.sections import (
    FIRST_HEADER_BUFFER,
    GRACE,
    HEADER_BUFFER,
    KEEP,
    LEASE_SECONDS,
    MAX_COLUMNS,
    PUBLISH_JOBS,
    SITE_FILES,
    BuildSettings,
    ExportSettings,
    PublishSettings,
    RaySettings,
    ServeSettings,
    VolumeLimit,
    VolumeSettings,
)

__all__ = [
    "FIRST_HEADER_BUFFER",
    "GRACE",
    "HEADER_BUFFER",
    "KEEP",
    "LEASE_SECONDS",
    "MAX_COLUMNS",
    "PUBLISH_JOBS",
    "SITE_FILES",
    "BuildSettings",
    "ExportSettings",
    "PublishSettings",
    "RaySettings",
    "ServeSettings",
    "Settings",
    "VolumeLimit",
    "VolumeSettings",
    "env_name",
    "load_settings",
]

# The characters an output's path may not hold: DuckDB reads them otherwise (`Settings.output`).
UNREADABLE_PATH = ("?", "*", "[", "\\")

ENV_PREFIX = "PIPELINE_"
ENV_NESTING = "__"


# Keys of older layouts: each refused with what replaced it. A table's key covers its keys.
OLD_KEYS: dict[str, str] = {
    **{
        key: f"moved to build.{key}"
        for key in (
            "duckdb_memory_limit",
            "duckdb_threads",
            "max_reject_share",
            "max_columns",
            "releases_kept",
            "accept_volume_change",
            "volume",
        )
    },
    "export_batch_listings": "moved to export.batch_listings",
    "nginx_listen": "moved to serve.nginx_listen",
    "nginx_upstream": "moved to serve.nginx_upstream",
    "ray.to": "moved to publish.to",
    "shard": "removed; a cluster build is `pipeline ray-build`",
    "engine": "removed; one machine is `pipeline build`, a cluster `pipeline ray-build`",
}


class Settings(BaseSettings):
    """Every setting: the paths every command shares, then one section per stage."""

    model_config = SettingsConfigDict(
        env_prefix=ENV_PREFIX, env_nested_delimiter=ENV_NESTING, extra="forbid", frozen=True
    )
    toml_file: ClassVar[Path | None] = None

    input: InputLocation = Field(
        default=Path("data"), description="Input directory of raw exports, or s3://bucket/prefix"
    )
    output: Path = Field(
        default=Path("data/out"), description="Output directory: warehouse, site, releases"
    )
    build: BuildSettings = BuildSettings()
    export: ExportSettings = ExportSettings()
    publish: PublishSettings = PublishSettings()
    serve: ServeSettings = ServeSettings()
    ray: RaySettings = RaySettings()

    @field_validator("output")
    @classmethod
    def _duckdb_reads_it(cls, value: Path) -> Path:
        """An output DuckDB would misread: a `?` in a database's path starts its options (the
        WAL goes elsewhere), `*`, `?` and `[` in a file's path are a glob, `\\` a separator."""
        if any(c in str(value) for c in UNREADABLE_PATH):
            raise ValueError(
                f"'{value}': DuckDB would read {' '.join(UNREADABLE_PATH)} in its path as a "
                "glob, its options or a separator; choose a folder without them"
            )
        return value

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        sources: list[PydanticBaseSettingsSource] = [init_settings, env_settings]
        if cls.toml_file is not None:
            sources.append(TomlConfigSettingsSource(settings_cls, toml_file=cls.toml_file))
        return tuple(sources)


def env_name(key: str) -> str:
    """The environment variable of a setting's dotted key: build.duckdb_threads ->
    PIPELINE_BUILD__DUCKDB_THREADS."""
    return ENV_PREFIX + key.replace(".", ENV_NESTING).upper()


def _dotted(table: Mapping[str, Any], above: str = "") -> Iterator[str]:
    """Every key of a TOML document, dotted, tables included (`volume`, `volume.max_drop`)."""
    for name, value in table.items():
        key = f"{above}{name}"
        yield key
        if isinstance(value, Mapping):
            yield from _dotted(value, f"{key}.")


def _moved(key: str) -> str | None:
    """What a dotted key of an older layout became, the hint; None for a key of today's."""
    for old, hint in OLD_KEYS.items():
        if key == old or key.startswith(old + "."):
            new = hint.removeprefix("moved to ")
            return hint if new == hint else f"moved to {new}{key[len(old) :]}"
    return None


def _old_keys(config: Path | None, overrides: Mapping[str, Any]) -> str | None:
    """Keys of an older layout in the file, the environment or the overrides, each with its
    hint (the environment's naming the new variable), on one line; None when there is none."""
    found: list[str] = []
    if config is not None:
        try:
            document = tomllib.loads(config.read_text(encoding="utf-8"))
        except (tomllib.TOMLDecodeError, UnicodeDecodeError):
            document = {}  # the TOML source says what is wrong, naming the file
        found += [f"{config}: {k}: {OLD_KEYS[k]}" for k in _dotted(document) if k in OLD_KEYS]
    for variable in sorted(os.environ):
        if variable.upper().startswith(ENV_PREFIX):
            key = variable[len(ENV_PREFIX) :].lower().replace(ENV_NESTING, ".")
            if (hint := _moved(key)) is not None:
                new = hint.removeprefix("moved to ")
                said = hint if new == hint else f"moved to {env_name(new)}"
                found.append(f"{variable}: {said}")
    found += [f"settings: {k}: {OLD_KEYS[k]}" for k in _dotted(overrides) if k in OLD_KEYS]
    return "; ".join(found) or None


def load_settings(config: Path | None = None, **overrides: Any) -> Settings:
    """Settings from an optional TOML file, the environment and explicit overrides (a section
    as a dict of the keys it overrides: `build={"releases_kept": 1}`)."""
    if config is not None and not config.is_file():
        raise FileNotFoundError(f"{config}: configuration file not found")
    if (old := _old_keys(config, overrides)) is not None:
        raise ValueError(old)

    class _FromFile(Settings):
        toml_file: ClassVar[Path | None] = config

    try:
        return _FromFile(**{k: v for k, v in overrides.items() if v is not None})
    except ValidationError as exc:
        where = str(config) if config else "settings"
        problems = "; ".join(
            f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']}" for e in exc.errors()
        )
        raise ValueError(f"{where}: {problems}") from None
