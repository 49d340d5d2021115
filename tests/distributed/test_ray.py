"""The distributed build on a real local Ray cluster: the same site, byte for byte, and the same
warehouse rows as the one-machine build, with 1, 2 and 3 shards; a worker killed in the middle
of a shard is run again, and the build publishes the same release."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import duckdb
import pytest

from bench.ray import ray_figures
from pipeline.build import build
from pipeline.distributed import SHARDS_DIR, build_on_ray
from pipeline.export.records.report import BuildReport
from pipeline.paths import MANIFEST, POOL, SITE, WAREHOUSE
from pipeline.publish.release import store_folders
from pipeline.settings import load_settings
from pipeline.tools.generate import generate
from tests.support.inputs import SAMPLE
from tests.support.local_ray import local_cluster
from tests.support.nights import Nights, two_nights


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A local Ray cluster of its own, of two CPUs, no dashboard, no usage statistics; yields
    the path of the file that, when it exists, has one shard's worker killed."""
    trigger = tmp_path_factory.mktemp("ray") / "kill-a-shard"
    with local_cluster(trigger):
        yield trigger


def _tables(con: duckdb.DuckDBPyConnection, database: str) -> list[str]:
    rows = con.execute(
        "SELECT schema_name || '.' || table_name FROM duckdb_tables() "
        "WHERE database_name = ? ORDER BY 1",
        [database],
    ).fetchall()
    return [name for (name,) in rows if name != "meta.build_run"]  # one row a build


def _differences(con: duckdb.DuckDBPyConnection, one: str, other: str) -> int:
    return int(
        con.execute(
            f"SELECT (SELECT count(*) FROM (FROM {one} EXCEPT ALL FROM {other})) "
            f"+ (SELECT count(*) FROM (FROM {other} EXCEPT ALL FROM {one}))"
        ).fetchone()[0]  # type: ignore[index]
    )


def assert_same_build(one_machine: Path, distributed: Path) -> None:
    """The same manifest, byte for byte; the same rows in every table of the warehouse, the
    listings' raw rows being the shards' Parquet files."""
    assert (distributed / MANIFEST).read_bytes() == (one_machine / MANIFEST).read_bytes()
    con = duckdb.connect()
    con.execute(f"ATTACH '{one_machine / WAREHOUSE}' AS one (READ_ONLY)")
    con.execute(f"ATTACH '{distributed / WAREHOUSE}' AS other (READ_ONLY)")
    tables = _tables(con, "one")
    assert sorted([*_tables(con, "other"), "raw.listings"]) == tables
    for table in tables:
        other = f"other.{table}"
        if table == "raw.listings":
            shards = distributed.resolve() / "current" / SHARDS_DIR
            other = f"read_parquet('{shards}/*/raw.listings.parquet')"
        assert _differences(con, f"one.{table}", other) == 0, table
    con.close()


@pytest.fixture(scope="module")
def generated(tmp_path_factory: pytest.TempPathFactory) -> Path:
    directory = tmp_path_factory.mktemp("generated")
    generate(directory, stores=30, listings=20_000, seed=5)
    return directory


@pytest.mark.slow
def test_the_distributed_build_is_the_one_machine_build(
    cluster: Path, generated: Path, tmp_path: Path
) -> None:
    for name, inputs in (("sample", SAMPLE), ("generated", generated)):
        one_machine = tmp_path / f"{name}-one"
        build(load_settings(None, input=inputs, output=one_machine))
        for shards in (1, 2, 3):
            output = tmp_path / f"{name}-{shards}"
            settings = load_settings(
                None, input=inputs, output=output, engine="ray", ray={"shards": shards}
            )
            result = build_on_ray(settings)
            report = BuildReport.read(one_machine)
            assert result.report.inputs_digest == report.inputs_digest
            assert result.report.tables == report.tables
            assert_same_build(one_machine, output)
            figures = ray_figures(output, one_machine, shards, 0.0)  # `make bench`'s figures
            assert figures["ray_equals_one_machine"] and figures["ray_shuffle_bytes"] > 0
            assert len(figures["ray_shard_worker_peak_rss_mb"]) == shards


@pytest.mark.slow
def test_a_worker_killed_in_a_shard_is_run_again_and_the_release_is_the_same(
    cluster: Path, generated: Path, tmp_path: Path
) -> None:
    one_machine = tmp_path / "one"
    build(load_settings(None, input=generated, output=one_machine))
    cluster.touch()
    output = tmp_path / "distributed"
    build_on_ray(
        load_settings(None, input=generated, output=output, engine="ray", ray={"shards": 2})
    )
    assert not cluster.exists()  # a worker was killed, and its shard run again
    assert_same_build(one_machine, output)


@pytest.fixture(scope="module")
def nights(tmp_path_factory: pytest.TempPathFactory) -> Nights:
    """Two inputs and their one-machine builds: a generated one of 40 stores ("same"), and a
    copy where 2 stores (5%, `CHANGED`) changed a price ("changed")."""
    return two_nights(tmp_path_factory, "night", 40, 4_000, CHANGED)


CHANGED = {"store-00003", "store-00017"}


def _store_links(output: Path) -> dict[str, str]:
    """Each store of the published release -> the pool folder its pages are in."""
    return store_folders(output / "current" / SITE)


@pytest.mark.slow
@pytest.mark.parametrize("shards", [1, 2])
def test_three_nights_into_one_output_carry_the_unchanged_stores(
    cluster: Path, nights: dict[str, tuple[Path, Path]], shards: int, tmp_path: Path
) -> None:
    """Night 1 builds every store; night 2, the same input, carries every store over; night 3,
    with 5% of the stores changed, builds only those. Each night's release is the one-machine
    build's, byte for byte, and its store folders are whole in the pool."""
    output = tmp_path / "distributed"
    links: list[dict[str, str]] = []
    for night, name in enumerate(("same", "same", "changed")):
        inputs, one_machine = nights[name]
        result = build_on_ray(
            load_settings(None, input=inputs, output=output, engine="ray", ray={"shards": shards})
        )
        assert (output / MANIFEST).read_bytes() == (one_machine / MANIFEST).read_bytes()
        links.append(_store_links(output))
        stores = len(links[-1])
        assert stores == 40
        for key, folder in links[-1].items():
            assert (output / POOL / folder).is_dir(), (night, key)
        unchanged = result.report.site.stores_unchanged
        if night == 0:
            assert unchanged == 0
        elif night == 1:
            assert unchanged == stores  # carried, not built again
            assert links[1] == links[0]
        else:
            assert unchanged == stores - len(CHANGED)
            moved = {key for key in links[2] if links[2][key] != links[1][key]}
            assert moved == CHANGED
    assert_same_build(nights["changed"][1], output)
