"""The site's files: created by a child process, recorded in a manifest of one line a file."""

from __future__ import annotations

import hashlib
import os
import struct
from pathlib import Path

import orjson
import polars as pl
import pytest

from pipeline import export
from pipeline.api.urls import store_column, store_of
from pipeline.build import build
from pipeline.export import files
from pipeline.export.files import FileCreator
from pipeline.export.records import filestat
from pipeline.export.records.manifest import Manifest, write_changes
from pipeline.export.records.state import seal
from pipeline.export.writer import SiteWriter
from pipeline.settings import load_settings
from tests.support.inputs import SAMPLE
from tests.support.runs import published_state, run_pipeline


@pytest.mark.parametrize(
    ("path", "key"),
    [
        ("v1.39.0/stores/ab-1/inventory/products/index.json", "ab-1"),
        ("v1.39.0/stores/ab-1/inventory/groups/index.json", "ab-1"),
        ("v1.39.0/catalog/categories/index.json", None),
        ("v1.39.0/stores.json", None),
        ("v1.39.0/storesX/ab/index.json", None),
    ],
)
def test_a_site_paths_store_key_is_read_one_way(path: str, key: str | None) -> None:
    """The writer and the object-store publish read a path's store alike."""
    assert store_of(path) == key
    frame = pl.DataFrame({"path": [path]})
    extracted = frame.select(store_column(pl.col("path")))
    assert extracted.item() == key


def test_the_children_create_links_and_copies(tmp_path: Path) -> None:
    source = tmp_path / "old.json"
    source.write_bytes(b"old")
    creator = FileCreator(batch=3, processes=2)  # frames go to whichever child is free
    for n in range(10):  # folder by folder, or not: each file is created in its own
        creator.submit((f"{tmp_path}/new/{'ab'[n % 3 == 0]}/{n}.json", b"%d" % n, None))
    creator.submit((f"{tmp_path}/new/linked.json", b"old", str(source)))
    creator.submit((f"{tmp_path}/new/gone.json", b"fresh", str(tmp_path / "missing")))
    creator.close()
    assert [(tmp_path / f"new/{'ab'[n % 3 == 0]}/{n}.json").read_bytes() for n in range(10)] == [
        b"%d" % n for n in range(10)
    ]
    assert os.stat(source).st_ino == os.stat(tmp_path / "new/linked.json").st_ino
    assert (tmp_path / "new/gone.json").read_bytes() == b"fresh"
    assert creator.linked == 1


def test_many_files_go_as_slices_of_one_buffer(tmp_path: Path) -> None:
    """`submit_many` takes bodies as an Arrow column holds them: one buffer and int64 offsets,
    which need not start at 0 (a slice of a longer column)."""
    source = tmp_path / "old.json"
    source.write_bytes(b"bcd")
    data = memoryview(b"___a" + b"bcd" + b"efg")
    offsets = memoryview(struct.pack("<5q", 3, 4, 4, 7, 10)).cast("q")
    targets = [f"{tmp_path}/new/{n}.json" for n in range(4)]
    creator = FileCreator(batch=2, processes=1)  # two frames: [a, ""], [bcd, efg]
    creator.submit_many(targets, offsets, data, [None, None, str(source), None])
    creator.close()
    assert [Path(t).read_bytes() for t in targets] == [b"a", b"", b"bcd", b"efg"]
    assert os.stat(source).st_ino == os.stat(targets[2]).st_ino
    assert creator.linked == 1


def test_a_file_that_cannot_be_created_fails_with_its_name(tmp_path: Path) -> None:
    (tmp_path / "taken.json").write_bytes(b"published")  # never written through
    creator = FileCreator()
    creator.submit((f"{tmp_path}/first.json", b"1", None))
    creator.submit((f"{tmp_path}/taken.json", b"2", None))
    creator.submit((f"{tmp_path}/after.json", b"3", None))
    with pytest.raises(OSError, match=rf"^{tmp_path}/taken\.json: File exists"):  # whole path
        creator.close()
    assert (tmp_path / "taken.json").read_bytes() == b"published"


def test_fewer_files_than_a_frame_are_created_without_a_child(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def no_child(*args: object, **kwargs: object) -> None:
        raise AssertionError("a child was started")

    monkeypatch.setattr(files.subprocess, "Popen", no_child)
    creator = FileCreator(batch=4)
    data = memoryview(b"abc")
    offsets = memoryview(struct.pack("<3q", 0, 1, 3)).cast("q")
    creator.submit_many([f"{tmp_path}/a/0.json", f"{tmp_path}/a/1.json"], offsets, data, [None] * 2)
    creator.submit((f"{tmp_path}/b/2.json", b"d", None))
    creator.close()
    assert [(tmp_path / p).read_bytes() for p in ("a/0.json", "a/1.json", "b/2.json")] == [
        b"a",
        b"bc",
        b"d",
    ]


def test_a_killed_child_is_an_error_not_a_hang(tmp_path: Path) -> None:
    creator = FileCreator(batch=1, processes=2)
    creator.submit((f"{tmp_path}/first.json", b"x", None))  # the first frame starts the children
    creator._children[1].kill()
    creator._children[1].wait()
    with pytest.raises(OSError, match="ended unexpectedly"):
        for n in range(1000):  # a full pipe would block for ever if the death went unseen
            creator.submit((f"{tmp_path}/{n}.json", b"x" * 4096, None))
        creator.close()


def test_the_writers_invariants_hold_under_python_o(tmp_path: Path) -> None:
    """Real errors, not asserts (which `python -O` removes)."""
    pool = tmp_path / "pages"
    pool.mkdir()
    with (
        SiteWriter(tmp_path / "site", pool=pool, staging=tmp_path / "staged") as writer,
        pytest.raises(RuntimeError, match="no previous release"),
    ):
        writer.carry("a")


def test_the_manifest_round_trips_and_lists_changes(tmp_path: Path) -> None:
    with SiteWriter(tmp_path / "one" / "site") as writer:
        for name in ("b/2.json", "a/1.json", "b/10.json", "c/x.json"):
            writer.write(name, name.encode())
    first = writer.manifest()
    first.write(tmp_path / "one")
    entries = orjson.loads((tmp_path / "one" / "manifest.json").read_bytes())["files"]
    assert [e["path"] for e in entries] == ["a/1.json", "b/10.json", "b/2.json", "c/x.json"]
    assert entries[0] == {
        "path": "a/1.json",
        "sha256": hashlib.sha256(b"a/1.json").hexdigest(),
        "bytes": 8,
    }
    loaded = Manifest.load(tmp_path / "one")  # from its Parquet copy
    assert loaded.frame.equals(first.frame)
    assert loaded.hashes_under("b") == {
        "b/10.json": hashlib.sha256(b"b/10.json").digest(),
        "b/2.json": hashlib.sha256(b"b/2.json").digest(),
    }

    # The next release: one file changed, one removed, one new, the rest linked, as each file
    # is found as it was written (its record: `filestat`).
    recorded = filestat.record(tmp_path / "one" / "site", loaded.frame["path"], None)
    with SiteWriter(
        tmp_path / "two" / "site", tmp_path / "one" / "site", loaded, recorded=recorded
    ) as writer:
        writer.write("a/1.json", b"a/1.json")
        writer.write("b/10.json", b"changed")
        writer.write("b/2.json", b"b/2.json")
        writer.write("d/new.json", b"new")
    second = writer.manifest()
    assert writer.linked == 2
    changed, removed = second.changes(loaded)
    assert len(second) - len(changed) == 2  # a/1.json and b/2.json, unchanged
    write_changes(tmp_path / "changes.json", changed, removed)
    assert orjson.loads((tmp_path / "changes.json").read_bytes()) == {
        "changed": ["b/10.json", "d/new.json"],
        "removed": ["c/x.json"],
    }
    site = tmp_path / "two" / "site"
    assert os.stat(site / "a/1.json").st_ino == os.stat(tmp_path / "one/site/a/1.json").st_ino
    assert (site / "b/10.json").read_bytes() == b"changed"


def test_an_empty_site_s_manifest_and_changes_load(tmp_path: Path) -> None:
    Manifest().write(tmp_path)
    assert len(Manifest.load(tmp_path)) == 0
    assert orjson.loads((tmp_path / "manifest.json").read_bytes()) == {"files": []}
    write_changes(tmp_path / "changes.json", pl.Series([], dtype=pl.String), pl.Series([]))
    assert orjson.loads((tmp_path / "changes.json").read_bytes()) == {
        "changed": [],
        "removed": [],
    }


def test_a_file_twice_in_one_site_is_refused() -> None:
    frame = pl.DataFrame(
        {"path": ["a", "a"], "sha256": [b"1", b"2"], "bytes": [1, 1]},
        schema={"path": pl.String, "sha256": pl.Binary, "bytes": pl.Int64},
    )
    with pytest.raises(ValueError, match="a: the same file twice"):
        Manifest(frame)


def test_without_a_pool_unchanged_stores_are_linked_file_by_file(tmp_path: Path) -> None:
    """A site written without the pool (plain store folders, as by older releases) is carried
    over by a hard link per file."""
    con = run_pipeline(SAMPLE)
    first = tmp_path / "first"
    settings = load_settings(None, export={"batch_listings": 1000})
    site = export.write_site(con, settings, first / "site")
    export.write_release_files(first, site, settings)
    seal(first)
    second = export.write_site(con, settings, tmp_path / "second" / "site", previous_release=first)
    assert second.counts["stores_unchanged"] == len(site.stores) > 0
    assert second.counts["files_unchanged"] == len(site.manifest)
    assert second.manifest.frame.equals(site.manifest.frame)
    for name in site.manifest.frame["path"].to_list()[::50]:
        assert (
            os.stat(first / "site" / name).st_ino == os.stat(tmp_path / "second/site" / name).st_ino
        )


def test_two_builds_of_the_same_inputs_are_byte_identical(
    sample_build: Path, tmp_path: Path
) -> None:
    again = tmp_path / "again"
    build(load_settings(None, input=SAMPLE, output=again))
    assert (again / "manifest.json").read_bytes() == (sample_build / "manifest.json").read_bytes()
    first, second = published_state(sample_build), published_state(again)
    for state in (first, second):
        del state["current"], state["warehouse"]
    assert first == second


def test_a_page_size_listed_twice_never_truncates_a_published_file(tmp_path: Path) -> None:
    config = tmp_path / "twice.toml"
    config.write_text("[export]\nlimits = [10, 10]\nvariants = ['categoryId', 'categoryId']\n")
    output = tmp_path / "out"
    for _ in range(2):
        build(load_settings(config, input=SAMPLE, output=output))
    for entry in orjson.loads((output / "manifest.json").read_bytes())["files"]:
        body = (output / "site" / entry["path"]).read_bytes()
        assert hashlib.sha256(body).hexdigest() == entry["sha256"], entry["path"]
