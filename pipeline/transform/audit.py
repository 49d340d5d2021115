"""The audit between transform and export: a build whose input is too broken stops here, before
anything is written for publishing; and the volume guards, which the audit and the release
tail (`conductor`) run: counts against the published build's and against the median of the
last builds, tables that vanished, stores that lost every listing."""

from __future__ import annotations

import statistics
from collections.abc import Collection, Mapping, Sequence
from decimal import Decimal

import duckdb

from pipeline import db
from pipeline.errors import BuildError
from pipeline.ingest import IngestedTable
from pipeline.settings import SITE_FILES, Settings


def rejected_rows(con: duckdb.DuckDBPyConnection) -> dict[str, int]:
    """Rejected input rows per table (a row breaking several rules counts once)."""
    rows = con.execute(
        "SELECT table_name, count(DISTINCT (source_file, source_row)) FROM meta.rejects GROUP BY 1"
    ).fetchall()
    return {table: int(n) for table, n in rows}


def unreadable_rows(con: duckdb.DuckDBPyConnection) -> dict[tuple[str, str], int]:
    """Rows whose optional column's value could not be read (staged absent, a warning), per
    (table, column): most unreadable first."""
    rows = con.execute(
        "SELECT table_name, column_name, count(DISTINCT (source_file, source_row)) AS n "
        "FROM meta.warnings WHERE check_name = 'contract' "
        "GROUP BY ALL ORDER BY n DESC, table_name, column_name"
    ).fetchall()
    return {(table, column): int(n) for table, column, n in rows}


def audit(
    con: duckdb.DuckDBPyConnection, settings: Settings, ingested: Sequence[IngestedTable]
) -> None:
    """Stop the build when the input is too broken to publish: an input table's rejects, or an
    optional column that cannot be read, in more than `max_reject_share` of its rows."""
    if db.count_rows(con, "staging.products") == 0:
        raise BuildError("catalog/products: no usable product rows (empty catalog)")
    share = settings.build.max_reject_share
    rejected, unreadable = rejected_rows(con), unreadable_rows(con)
    for ingested_table in ingested:
        table = ingested_table.table
        raw_rows, bad = ingested_table.rows, rejected.get(table.name, 0)
        if raw_rows and bad / raw_rows > share:
            raise BuildError(
                f"{table.group}/{table.name}: {bad} of {raw_rows} rows rejected "
                f"({bad / raw_rows:.1%}, above build.max_reject_share "
                f"{share:.1%}); the rows are in meta.rejects"
            )
        for (name, column), bad in unreadable.items():
            if name == table.name and raw_rows and bad / raw_rows > share:
                raise BuildError(
                    f"{table.group}/{table.name}: {column} cannot be read in {bad} of "
                    f"{raw_rows} rows ({bad / raw_rows:.1%}, above build.max_reject_share "
                    f"{share:.1%}); the rows are in meta.warnings"
                )


ACCEPT_FLAG = "--accept-volume-change"
NAMED_STORES = 5  # the stores lost a guard's line names; it counts the others


def _stop_or_accept(move: str, settings: Settings) -> str:
    """A move past a volume guard: the build stops on it, in one line, unless
    `accept_volume_change` says the change is real; then it is returned, for the warnings."""
    if not settings.build.accept_volume_change:
        raise BuildError(f"{move}; if the change is real, build with {ACCEPT_FLAG}")
    return f"{move}: accepted (build.accept_volume_change)"


def _what(name: str) -> str:
    return "files" if name == SITE_FILES else "accepted rows"


def _past(change: float, name: str, settings: Settings) -> str | None:
    """The limit of `settings.build.volume` that a share `change` of the count `name` is past."""
    max_drop, max_rise = settings.build.volume.limits(name)
    if change < -max_drop:
        return f"max_drop {max_drop:.0%}"
    if change > max_rise:
        return f"max_rise {max_rise:.0%}"
    return None


def check_volumes(
    published: Mapping[str, int], tonight: Mapping[str, int], settings: Settings
) -> list[str]:
    """Stop the build when a count moved from the published build's past its limits
    (`settings.build.volume`): an export cut in half must not publish half a site. A count that
    had rows and has none (an optional table whose file went: every store would show its
    excluded categories) stops it whatever `min_count`, unless its max_drop is 1. With
    `accept_volume_change`, returns those moves instead, for the build's warnings."""
    accepted = []
    for name, before in published.items():
        if name not in tonight:
            continue
        now = tonight[name]
        if before > 0 and now == 0 and settings.build.volume.limits(name)[0] < 1:
            move = (
                f"{name}: 0 {_what(name)}, against {before} in the published build "
                "(-100.0%: the table vanished, compared whatever build.volume.min_count)"
            )
            accepted.append(_stop_or_accept(move, settings))
            continue
        if before < max(settings.build.volume.min_count, 1):
            continue
        change = (now - before) / before
        past = _past(change, name, settings)
        if past:
            move = (
                f"{name}: {now} {_what(name)}, against {before} in the published build "
                f"({change:+.1%}, past build.volume.{past})"
            )
            accepted.append(_stop_or_accept(move, settings))
    return accepted


def check_baseline(
    baseline: Mapping[str, Sequence[int]], tonight: Mapping[str, int], settings: Settings
) -> list[str]:
    """Stop the build when a count moved past its limits from its median over the last
    published builds (`baseline`, from meta.build_run): five nights of -18% pass the guard
    against the night before, not this one. A baseline of fewer than two builds is the
    published build, compared already."""
    accepted = []
    for name, counts in baseline.items():
        if name not in tonight or len(counts) < 2:
            continue
        median = statistics.median(counts)
        if median < max(settings.build.volume.min_count, 1):
            continue
        now = tonight[name]
        change = (now - median) / median
        past = _past(change, name, settings)
        if past:
            shown = int(median) if median == int(median) else median
            move = (
                f"{name}: {now} {_what(name)}, against a median of {shown} over the last "
                f"{len(counts)} published builds ({change:+.1%}, past build.volume.{past})"
            )
            accepted.append(_stop_or_accept(move, settings))
    return accepted


def check_stores_lost(
    published: Collection[str], tonight: Collection[str], settings: Settings
) -> list[str]:
    """Stop the build when more of the stores that had listings in the published build have
    none tonight than `volume.max_stores_lost` allows (a share of them, rounded down: one
    store of 20 gone is all its users lose), naming the first few."""
    lost = sorted(set(published) - set(tonight))
    share = settings.build.volume.max_stores_lost
    allowed = int(Decimal(str(share)) * len(published))  # 0.29 * 100 is 28.999... in floats
    if len(lost) <= allowed:
        return []
    names = ", ".join(lost[:NAMED_STORES])
    if len(lost) > NAMED_STORES:
        names += f" and {len(lost) - NAMED_STORES} more"
    move = (
        f"stores: {len(lost)} of {len(published)} stores with listings in the published build "
        f"have none ({names}), past build.volume.max_stores_lost {share * 100:g}% "
        f"(at most {allowed} of {len(published)})"
    )
    return [_stop_or_accept(move, settings)]
