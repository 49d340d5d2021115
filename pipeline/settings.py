"""Typed settings: defaults < TOML file (`--config`) < environment (`PIPELINE_*`) < command line.

Unknown keys in the TOML file are an error, so a typo cannot pass silently. Nested keys in the
environment use `__`: `PIPELINE_EXPORT__LIMITS='[10, 100]'`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, ClassVar, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    field_validator,
)
from pydantic_settings import (
    BaseSettings,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
    TomlConfigSettingsSource,
)

from pipeline.api.catalog import MATERIALISED_CATALOG
from pipeline.contract import TABLES
from pipeline.remote import InputLocation

Variant = Literal["categoryId", "groupId"]
SITE_FILES = "site"  # the site's file count, among the tables in the volume limits
PageSize = Annotated[int, Field(ge=1, le=100)]  # the API's limit range


class ExportSettings(BaseModel):
    """Which parameter combinations of the inventory operation are written as static pages."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    channels: list[int] | None = Field(
        default=None, description="Channels to materialise; none: every channel with listings"
    )
    limits: list[PageSize] = Field(
        default=[10], description="Page sizes to materialise; 10 is the API's default limit"
    )
    variants: list[Variant] = Field(
        default=["categoryId", "groupId"],
        description="Filtered variants materialised besides the unfiltered pages",
    )
    category_limits: list[PageSize] = Field(
        default=[10],
        description="Page sizes of the category listing and of a category's groups to materialise",
    )
    catalog_operations: list[str] = Field(
        default=list(MATERIALISED_CATALOG),
        description="Catalog and price operations whose default pages are files: "
        + ", ".join(MATERIALISED_CATALOG),
    )

    @field_validator("catalog_operations")
    @classmethod
    def _known_operations(cls, value: list[str]) -> list[str]:
        unknown = [v for v in value if v not in MATERIALISED_CATALOG]
        if unknown:
            raise ValueError(f"{', '.join(unknown)}: not one of {', '.join(MATERIALISED_CATALOG)}")
        return value


class VolumeLimit(BaseModel):
    """One count's own limits; unset: the defaults of `VolumeSettings`."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    max_drop: float | None = Field(default=None, ge=0, le=1)
    max_rise: float | None = Field(default=None, ge=0)


class VolumeSettings(BaseModel):
    """How far tonight's counts may move from the published build's before the build stops:
    each input table's accepted rows, and the site's file count ("site"); from the median of
    the last published builds; and how many stores may lose every listing."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    max_drop: float = Field(
        default=0.2, ge=0, le=1, description="Largest share by which a count may fall"
    )
    max_rise: float = Field(
        default=1.0, ge=0, description="Largest share by which a count may rise (1.0: double)"
    )
    min_count: int = Field(
        default=1000,
        ge=0,
        description="Counts the published build had fewer of are not compared (small ones "
        "move by large shares)",
    )
    tables: dict[str, VolumeLimit] = Field(
        default={},
        description='Limits of one count: a table ("stores/listings") or "site"',
    )
    max_stores_lost: float = Field(
        default=0.01,
        ge=0,
        le=1,
        description="Largest share of the published build's stores with listings that may have "
        "none tonight, rounded down: 1% lets none of up to 99 stores go, 1 of 100 to 199, 2 of "
        "200; whatever min_count",
    )
    baseline_builds: int = Field(
        default=7,
        ge=1,
        description="The counts (listings, site files) are also compared with the median of the "
        "last this many published builds (meta.build_run), so that a slow drift stops; it "
        "starts again at a build let through by accept_volume_change",
    )

    @field_validator("tables")
    @classmethod
    def _known(cls, tables: dict[str, VolumeLimit]) -> dict[str, VolumeLimit]:
        known = [f"{t.group}/{t.name}" for t in TABLES] + [SITE_FILES]
        for name in tables:
            if name not in known:
                raise ValueError(f"{name!r}: not a table or site (one of {', '.join(known)})")
        return tables

    def limits(self, name: str) -> tuple[float, float]:
        """(max_drop, max_rise) of the count `name`."""
        own = self.tables.get(name, VolumeLimit())
        return (
            self.max_drop if own.max_drop is None else own.max_drop,
            self.max_rise if own.max_rise is None else own.max_rise,
        )


HEADER_BUFFER = 16384  # bytes: nginx's header buffer, the longest request or header line
FIRST_HEADER_BUFFER = 1024  # bytes: nginx's buffer a request is read into first


class ServeSettings(BaseModel):
    """The live server's limits (`pipeline serve`, waitress); the generated nginx.conf uses the
    same numbers where nginx has the same limit, so that one setting governs both."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    threads: int = Field(default=8, ge=1, description="Worker threads: requests answered at once")
    duckdb_threads: int = Field(default=1, ge=1, description="DuckDB threads of a live answer")
    cache_mb: int = Field(default=256, ge=0, description="MiB of answers kept whole (0: none)")
    cache_store_listings: int = Field(default=250_000, ge=0, description="Larger: pages only")
    connection_limit: int = Field(
        default=1000,
        ge=1,
        description="Connections held open at once, idle ones included; more wait to be "
        "accepted (nginx: worker_connections, in nginx's own events block)",
    )
    channel_timeout: int = Field(
        default=60,
        ge=1,
        description="Seconds an idle connection is kept open (nginx: keepalive_timeout, "
        "client_header_timeout, client_body_timeout, send_timeout)",
    )
    max_request_header_size: int = Field(
        default=65536,
        ge=HEADER_BUFFER,
        multiple_of=HEADER_BUFFER,
        description="Bytes of nginx's large header buffers (after a first of 1 KiB): a head "
        "they cannot hold as nginx fills them, or a header line over 16 KiB: 431 "
        "(nginx: large_client_header_buffers <this / 16k> 16k)",
    )
    max_request_body_size: int = Field(
        default=1048576,
        ge=1,
        description="Bytes of request body; more: 413 (nginx: client_max_body_size)",
    )


MAX_COLUMNS = 1_000  # the default of Settings.max_columns: real exports have tens of columns


class RaySettings(BaseModel):
    """`pipeline ray-build`: the night on a Ray cluster, straight to a bucket
    (`pipeline.distributed`)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    address: str | None = Field(
        default=None,
        description="The cluster to run on (`auto` on its head node, or `head:6379`); "
        "unset (and no RAY_ADDRESS): a local cluster of the build's own, for its time",
    )
    shards: int = Field(default=2, ge=1, description="Shards of stores: one task each")
    cpus_per_shard: float = Field(
        default=1, gt=0, description="CPUs a shard's task reserves (set duckdb_threads to match)"
    )
    retries: int = Field(default=2, ge=0, description="Times a task whose worker died is run again")
    to: str | None = Field(
        default=None,
        description="The bucket (s3://bucket/prefix) the night publishes to straight from its "
        "shards: nothing shared but the bucket (`pipeline ray-build --to`); required",
    )
    scratch: Path | None = Field(
        default=None,
        description="The node-local folder a shard task builds in (default: the "
        "system's temporary folder); each task's own folder in it is removed when it ends",
    )


DEFAULT_OUTPUT = Path("data/out")


class Settings(BaseSettings):
    model_config = SettingsConfigDict(
        env_prefix="PIPELINE_", env_nested_delimiter="__", extra="forbid", frozen=True
    )
    toml_file: ClassVar[Path | None] = None

    input: InputLocation = Field(default=Path("data"), description="Input directory or s3:// URL")
    output: Path = Field(default=DEFAULT_OUTPUT, description="Output directory")
    export: ExportSettings = ExportSettings()
    serve: ServeSettings = ServeSettings()
    max_reject_share: float = Field(
        default=0.05,
        ge=0,
        le=1,
        description="Share of rejected rows of any input table above which the build fails",
    )
    max_columns: int = Field(
        default=MAX_COLUMNS,
        ge=1,
        description="Columns an input file may have (header fields, Parquet columns, NDJSON "
        "keys); a file with more stops the build",
    )
    volume: VolumeSettings = VolumeSettings()
    ray: RaySettings = RaySettings()
    accept_volume_change: bool = Field(
        default=False,
        description="Publish though a count moved past the volume limits (a night when the "
        "change is real; `pipeline build --accept-volume-change`)",
    )
    duckdb_memory_limit: str = Field(
        default="2GB", description="DuckDB memory_limit (the build's whole peak is about 1.5x)"
    )
    duckdb_threads: int = Field(default=2, ge=1, description="DuckDB threads")
    export_batch_listings: int = Field(
        default=1_000_000,
        ge=1,
        description="Listings per run of the inventory query in the export (bounds its memory)",
    )
    releases_kept: int = Field(default=3, ge=1, description="Published site releases kept")
    nginx_listen: str = Field(default="127.0.0.1:8080", description="nginx.conf: listen address")
    nginx_upstream: str = Field(
        default="127.0.0.1:8000",
        description="nginx.conf: address of `pipeline serve`, for requests not materialised",
    )

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


def load_settings(config: Path | None = None, **overrides: Any) -> Settings:
    """Settings from an optional TOML file, the environment and explicit overrides."""
    if config is not None and not config.is_file():
        raise FileNotFoundError(f"{config}: configuration file not found")

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
