"""The build report as one typed record, `build_report.json`: collected from the warehouse at
the end of a build, and read back by the next build and the benchmarks. Its JSON keys
are the fields, in their order; `report_html` draws it for people."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import duckdb
import orjson
from pydantic import BaseModel, Field, ValidationError

from pipeline import db
from pipeline.ingest import IngestedTable
from pipeline.paths import REPORT_JSON
from pipeline.settings import Settings
from pipeline.transform import StepResult, staged_rows
from pipeline.transform.audit import rejected_rows

# A report is read as far as it is this version's: a field an earlier version did not write
# has a default (an empty list, None, a count of 0); one every version wrote is required.


class TableCounts(BaseModel):
    """One input table: its files, the rows read, staged and rejected."""

    files: list[str]
    rows: int
    accepted: int
    rejected: int


class RowsByReason(BaseModel):
    """Rows rejected (meta.rejects) or warned about (meta.warnings), for one reason in one file:
    how many, and the first `FIRST_ROWS` of them as examples."""

    table: str
    file: str | None = None  # absent from reports before it
    column: str
    reason: str
    rows: int
    first_rows: list[int] = Field(default_factory=list)


FIRST_ROWS = 5


class StepFigures(BaseModel):
    name: str
    rows: int
    seconds: float


class SiteCounts(BaseModel):
    """The site's counts: its pages and files, and what was carried from the previous release."""

    store_channels: int = 0
    pages: int
    products: int = 0
    stores_unchanged: int = 0
    category_pages: int = 0
    catalog_pages: int = 0  # the catalog and price operations' (`export.catalog_operations`)
    files: int
    files_unchanged: int = 0
    files_removed: int = 0
    bytes: int

    @classmethod
    def of(cls, counts: dict[str, int]) -> SiteCounts:
        """The counts a build made (`Site.counts`): every one of them is a field here."""
        unknown = counts.keys() - cls.model_fields.keys()
        if unknown:
            raise ValueError(f"site counts the report has no field for: {sorted(unknown)}")
        return cls.model_validate(counts)


class StoreSize(BaseModel):
    store: str
    listings: int


class CategoryPrices(BaseModel):
    """The prices of one category's listings for sale."""

    category: str
    listings: int
    p10: float
    median: float
    p90: float
    max: float


class BuildRun(BaseModel):
    """One build of meta.build_run, as the history charts show it (None: not recorded)."""

    build_id: str
    started_at: str | None  # YYYY-MM-DD HH:MM
    listings: int | None
    files_changed: int | None
    rejected_rows: int | None
    seconds: float | None


class BucketFigures(BaseModel):
    """A Ray night straight to a bucket's: what its shards wrote (their new versions' pages and
    their parts) and the driver (the common pages), the stores given a new version, the shards
    whose parts of the previous release were named again without a task, and the bytes of
    the parts the driver downloaded."""

    puts: int
    bytes: int
    stores_new: int
    shards_reused: int = 0  # absent from reports before it
    parts_downloaded_bytes: int = 0


class DistributedFigures(BaseModel):
    """A Ray build's own figures (`pipeline.distributed`)."""

    engine: str
    shards: int
    listings_files: int
    shuffle_bytes: int
    ingest_peak_rss_mb: float
    shard_peak_rss_mb: list[float]
    shard_seconds: list[float]
    bucket: BucketFigures | None = None  # a night straight to a bucket (--to)


class BuildReport(BaseModel):
    """`build_report.json`: one published build's figures."""

    build_id: str
    started_at: str  # ISO 8601, UTC, to the second
    finished_at: str
    input: str
    tables: dict[str, TableCounts]
    rejects: list[RowsByReason]
    warnings: list[RowsByReason]
    stores: int
    site: SiteCounts
    stages_seconds: dict[str, float]
    steps: list[StepFigures]
    store_sizes: list[StoreSize] = Field(default_factory=list)
    price_by_category: list[CategoryPrices] = Field(default_factory=list)
    inputs_digest: str | None = None
    build_warnings: list[str] = Field(default_factory=list)
    volume_change_accepted: bool = False
    distributed: DistributedFigures | None = None  # a Ray night's, and only its

    history: list[BuildRun] = Field(default_factory=list)  # the last builds, oldest first

    def to_json(self) -> bytes:
        """The JSON of `build_report.json` (a one-machine build's without `distributed`)."""
        leave_out = {"distributed"} if self.distributed is None else set()
        return orjson.dumps(self.model_dump(exclude=leave_out), option=orjson.OPT_INDENT_2)

    @classmethod
    def from_json(cls, data: bytes) -> BuildReport:
        """Raises ValueError: not JSON, or not a report of this version (what is wrong)."""
        try:
            return cls.model_validate(orjson.loads(data))
        except ValidationError as exc:
            problems = [
                ".".join(map(str, e["loc"])) + f": {e['msg']}" if e["loc"] else e["msg"]
                for e in exc.errors()
            ]
            more = f" and {len(problems) - 3} more" if len(problems) > 3 else ""
            raise ValueError("not a build report: " + "; ".join(problems[:3]) + more) from None

    @classmethod
    def read(cls, folder: Path) -> BuildReport:
        """The report of a release (or of an output directory, through its stable link).
        Raises OSError, or ValueError (see `from_json`)."""
        return cls.from_json((folder / REPORT_JSON).read_bytes())

    def write(self, release: Path) -> None:
        (release / REPORT_JSON).write_bytes(self.to_json())


def _grouped(con: duckdb.DuckDBPyConnection, table: str) -> list[RowsByReason]:
    rows = con.execute(
        "SELECT table_name, source_file, column_name, reason, count(*) AS n, "
        "min(source_row, $first) "
        f"FROM {table} GROUP BY table_name, source_file, column_name, reason "
        "ORDER BY n DESC, table_name, source_file, column_name, reason",
        {"first": FIRST_ROWS},
    ).fetchall()
    return [
        RowsByReason(table=t, file=f, column=c, reason=r, rows=n, first_rows=first)
        for t, f, c, r, n, first in rows
    ]


def collect(
    con: duckdb.DuckDBPyConnection,
    build_id: str,
    settings: Settings,
    ingested: Sequence[IngestedTable],
    steps: Sequence[StepResult],
    site: dict[str, int],
    stages: dict[str, float],
    started_at: datetime,
) -> BuildReport:
    """The report of a build from its warehouse; what only the build knows (its warnings, its
    inputs' digest, its kind's figures, its history) is the caller's to add."""
    staged = staged_rows(steps)
    rejected = rejected_rows(con)
    tables = {
        i.table.name: TableCounts(
            files=list(i.files),
            rows=i.rows,
            accepted=staged.get(i.table.name, 0),
            rejected=rejected.get(i.table.name, 0),
        )
        for i in ingested
    }
    return BuildReport(
        build_id=build_id,
        started_at=started_at.isoformat(timespec="seconds"),
        finished_at=datetime.now(UTC).isoformat(timespec="seconds"),
        input=str(settings.input),
        tables=tables,
        rejects=_grouped(con, "meta.rejects"),
        warnings=_grouped(con, "meta.warnings"),
        stores=db.count_rows(con, "marts.store"),
        site=SiteCounts.of(site),
        stages_seconds=stages,
        steps=[StepFigures(name=s.name, rows=s.rows, seconds=round(s.seconds, 3)) for s in steps],
        store_sizes=[
            StoreSize(store=k, listings=n)
            for k, n in con.execute(
                "SELECT store_key, listing_count FROM marts.store "
                "ORDER BY listing_count DESC, store_key LIMIT 40"
            ).fetchall()
        ],
        price_by_category=[_prices(*row) for row in con.execute(_PRICES).fetchall()],
    )


_PRICES = """
SELECT c.name, count(*), quantile_cont(l.price, 0.1),
       quantile_cont(l.price, 0.5), quantile_cont(l.price, 0.9), max(l.price)
FROM marts.listing AS l JOIN staging.categories AS c USING (category_id)
WHERE l.quantity > 0 GROUP BY 1 ORDER BY 2 DESC, 1
"""


def _prices(category: str, listings: int, *prices: Any) -> CategoryPrices:
    p10, median, p90, top = map(float, prices)
    return CategoryPrices(
        category=category, listings=listings, p10=p10, median=median, p90=p90, max=top
    )
