"""The warehouse's connections (`pipeline/db.py`): memory given back, limits kept."""

from __future__ import annotations

from pathlib import Path

import duckdb

from pipeline import db


def _duckdb_bytes(con: duckdb.DuckDBPyConnection) -> int:
    """The memory DuckDB accounts for (its buffer pool: cached blocks, temporary data)."""
    return int(db.scalar(con, "SELECT coalesce(sum(memory_usage_bytes), 0) FROM duckdb_memory()"))


def test_duckdb_gives_its_memory_back_and_keeps_its_limit(tmp_path: Path) -> None:
    """Before the exporter holds manifests of millions of files, DuckDB's cache of the
    warehouse's blocks is evicted, and the memory limit is the one the build was opened with."""
    con = db.connect(tmp_path / "w.duckdb", memory_limit="1GB", threads=2)
    limit = db.scalar(con, "SELECT current_setting('memory_limit')")
    # 24M hashes: about 190 MB that do not compress, cached once written and read.
    con.execute("CREATE TABLE t AS SELECT hash(range) AS h FROM range(24000000)")
    con.execute("CHECKPOINT")
    total = db.scalar(con, "SELECT sum(h) FROM t")
    assert _duckdb_bytes(con) > 150_000_000
    db.release_memory(con, "1GB")
    assert _duckdb_bytes(con) <= 64_000_000  # the 64MB (DuckDB: 10^6 bytes) it lowers the limit to
    assert db.scalar(con, "SELECT current_setting('memory_limit')") == limit
    assert db.scalar(con, "SELECT sum(h) FROM t") == total  # evicted, not lost
    con.close()
