"""The settings' sections, one per stage: their keys, defaults, bounds and descriptions."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from pipeline.api.catalog import MATERIALISED_CATALOG
from pipeline.contract import TABLES

Variant = Literal["categoryId", "groupId"]
SITE_FILES = "site"  # the site's file count, among the tables in the volume limits
PageSize = Annotated[int, Field(ge=1, le=100)]  # the API's limit range


class ExportSettings(BaseModel):
    """Which parameter combinations of the inventory operation are written as static pages."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    channels: list[int] | None = Field(
        default=None,
        description="Channels to materialise; unset: every channel with listings",
        examples=[[0, 1]],
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
        description="Catalog and price operations whose default pages are files",
    )
    bulk_files: bool = Field(
        default=True,
        description="Write the bulk files: a CSV per group, a Parquet per category, their index",
    )
    batch_listings: int = Field(
        default=1_000_000,
        ge=1,
        description="Listings per run of the inventory query (bounds the export's memory)",
    )

    @field_validator("catalog_operations")
    @classmethod
    def _known_operations(cls, value: list[str]) -> list[str]:
        unknown = [v for v in value if v not in MATERIALISED_CATALOG]
        if unknown:
            raise ValueError(f"{', '.join(unknown)}: not one of {', '.join(MATERIALISED_CATALOG)}")
        return value

    def pages_json(self) -> bytes:
        """The settings the pages depend on, as JSON, for the digests (`batch_listings` only
        bounds memory: a new value rewrites no page; `bulk_files` changes no store's page, and
        the bulk files are written every night)."""
        return self.model_dump_json(exclude={"batch_listings", "bulk_files"}).encode()


class VolumeLimit(BaseModel):
    """One count's own limits; unset: the defaults of `VolumeSettings`."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    max_drop: float | None = Field(default=None, ge=0, le=1)
    max_rise: float | None = Field(default=None, ge=0)


class VolumeSettings(BaseModel):
    """The volume guards: how far tonight's counts may move before the build stops."""

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
        description="Counts the published build had fewer of are not compared",
    )
    tables: dict[str, VolumeLimit] = Field(
        default={},
        description='A count\'s own max_drop and max_rise: a table ("stores/listings") or "site"',
        examples=[{"stores/listings": {"max_drop": 0.1}, "site": {"max_rise": 3.0}}],
    )
    max_stores_lost: float = Field(
        default=0.01,
        ge=0,
        le=1,
        description="Share of the published build's stores with listings that may have none, "
        "rounded down",
    )
    baseline_builds: int = Field(
        default=7,
        ge=1,
        description="Published builds whose median listings and site files are also compared",
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


MAX_COLUMNS = 1_000  # the default of build.max_columns: real exports have tens of columns


class BuildSettings(BaseModel):
    """`pipeline build`: DuckDB's resources, the input's checks, the guards and the releases."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    duckdb_memory_limit: str = Field(
        default="2GB", description="DuckDB memory_limit (the build's whole peak is about 1.5x)"
    )
    duckdb_threads: int = Field(default=2, ge=1, description="DuckDB threads of the build")
    max_reject_share: float = Field(
        default=0.05,
        ge=0,
        le=1,
        description="Share of rejected rows of any input table above which the build fails",
    )
    max_columns: int = Field(
        default=MAX_COLUMNS,
        ge=1,
        description="Columns an input file may have; a file with more stops the build",
    )
    releases_kept: int = Field(default=3, ge=1, description="Published site releases kept")
    history_nights: int = Field(
        default=400,
        ge=1,
        description="Published nights history.* lists; files no kept release lists are removed",
    )
    history_block_nights: int = Field(
        default=30,
        ge=2,
        description="Nights gathered into one history file, once, when the block closes",
    )
    accept_volume_change: bool = Field(
        default=False,
        description="Publish though a count moved past the volume limits (the change is real)",
    )
    volume: VolumeSettings = VolumeSettings()


KEEP = 2  # releases whose versions a bucket keeps: the current one and the one before
GRACE = 3600  # seconds a release stays after it stopped being current, and a leftover's age
LEASE_SECONDS = 3600  # advisory: past it, another publish starts without asking
PUBLISH_JOBS = 64  # requests of a publish in flight at once


class PublishSettings(BaseModel):
    """`pipeline publish`: the bucket a release goes to, and how."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    to: str | None = Field(
        default=None,
        description="The bucket published to: s3://bucket/prefix (gs://, az://)",
        examples=["s3://bucket/prefix"],
    )
    jobs: int = Field(
        default=PUBLISH_JOBS,
        ge=1,
        description="Requests in flight at once: uploads, and the collection's listings and "
        "deletions",
    )
    lease_seconds: int = Field(
        default=LEASE_SECONDS,
        ge=1,
        description="How long a publish's lease holds off others (advisory)",
    )
    keep: int = Field(
        default=KEEP,
        ge=1,
        description="Releases whose versions collection keeps (the current one included)",
    )
    grace: float = Field(
        default=GRACE,
        ge=0,
        description="Seconds a release stays after it stopped being current, and a leftover's age",
    )


HEADER_BUFFER = 16384  # bytes: nginx's header buffer, the longest request or header line
FIRST_HEADER_BUFFER = 1024  # bytes: nginx's buffer a request is read into first


class ServeSettings(BaseModel):
    """`pipeline serve` (waitress) and the generated nginx.conf, which takes the same limits."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    host: str = Field(default="127.0.0.1", description="Address `pipeline serve` listens on")
    port: int = Field(
        default=8000, ge=0, le=65535, description="Port `pipeline serve` listens on (0: any free)"
    )
    threads: int = Field(default=8, ge=1, description="Worker threads: requests answered at once")
    duckdb_threads: int = Field(default=1, ge=1, description="DuckDB threads of a live answer")
    cache_mb: int = Field(default=256, ge=0, description="MiB of answers kept whole (0: none)")
    cache_store_listings: int = Field(
        default=250_000, ge=0, description="Stores with more listings are answered a page at a time"
    )
    connection_limit: int = Field(
        default=1000,
        ge=1,
        description="Connections held open at once, idle ones included (nginx: worker_connections)",
    )
    channel_timeout: int = Field(
        default=60,
        ge=1,
        description="Seconds an idle connection is kept open (nginx: keepalive_timeout and others)",
    )
    max_request_header_size: int = Field(
        default=65536,
        ge=HEADER_BUFFER,
        multiple_of=HEADER_BUFFER,
        description="Bytes of request line and headers, a multiple of 16384; more: 431 "
        "(nginx: large_client_header_buffers)",
    )
    max_request_body_size: int = Field(
        default=1048576,
        ge=1,
        description="Bytes of request body; more: 413 (nginx: client_max_body_size)",
    )
    nginx_listen: str = Field(
        default="127.0.0.1:8080", description="Address the generated nginx.conf listens on"
    )
    nginx_upstream: str = Field(
        default="127.0.0.1:8000",
        description="Address of `pipeline serve` in nginx.conf, for requests not materialised",
    )
    max_age: int = Field(
        default=86400,
        ge=0,
        description="Seconds nginx keeps a live answer or a bucket's object in its cache, and "
        "drops one unasked that long (a new release never reads the last one's)",
    )
    publish_at: str | None = Field(
        default=None,
        pattern=r"^([01][0-9]|2[0-3]):[0-5][0-9]$",
        description="The time of day (HH:MM, UTC) the nightly publish is scheduled: answers "
        "are fresh until the next one (nginx's `expires @HH:MM`); unset: `no-cache`, every "
        "use revalidates",
        examples=["04:30"],
    )
    nginx_cache: Path | None = Field(
        default=None,
        description="The folder nginx keeps the live answers in (proxy_cache_path; nginx creates "
        "it for its user); unset: OUTPUT/nginx-cache, and DIR/cache for `pipeline nginx-bucket`",
        examples=["/var/cache/nginx/pipeline"],
    )
    nginx_cache_mb: int = Field(
        default=1024,
        ge=1,
        description="MiB of live answers nginx keeps at most; past it the least recently asked "
        "go (proxy_cache_path max_size)",
    )
    nginx_bucket_dir: Path | None = Field(
        default=None,
        description="`pipeline nginx-bucket`: the folder its nginx.conf and release.map go to",
        examples=["/etc/nginx/pipeline"],
    )


class RaySettings(BaseModel):
    """`pipeline ray-build`: the build on a Ray cluster, straight to the bucket `publish.to`."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    address: str | None = Field(
        default=None,
        description="The cluster (`auto` on its head node, or head:6379); unset: a local one",
        examples=["auto"],
    )
    shards: int = Field(default=2, ge=1, description="Shards of stores: one task each")
    cpus_per_shard: float = Field(
        default=1, gt=0, description="CPUs a shard's task reserves (match build.duckdb_threads)"
    )
    retries: int = Field(default=2, ge=0, description="Times a task whose worker died is run again")
    scratch: Path | None = Field(
        default=None,
        description="Node-local folder a shard task builds in; unset: the system's temporary one",
        examples=["/local/scratch"],
    )
