"""Export stage: the warehouse -> the static site of one release, and its manifest.

First, DuckDB fingerprints every store's inputs in one pass; a store whose digest
(fingerprint, export settings, code) equals the previous release's is carried over without
being answered. The others are exported in batches of about `export_batch_listings` listings,
so memory does not grow with the input: each batch is answered by one run of the store
inventory SQL, for every channel with the default parameters, read straight into polars
ordered by store, channel and position. Each product's JSON is built once (in SQL) and shared
by the unfiltered pages and the categoryId / groupId pages, which keep the products of one
category or group in the same order: filtering by category or group removes whole products
and changes no other product's entry. The pages of a chunk of stores are made in polars, as
columns: paging, envelopes and file names are expressions (`inventory_pages`). Their bodies
stay in one Arrow buffer, so Python's work per page is the SHA-256 of a slice of it.

Files are created by child processes while this one builds the next pages, so the export costs
about the larger of the two, not their sum.
"""

from __future__ import annotations

import hashlib
import io
import itertools
import os
import shutil
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path, PurePosixPath
from types import TracebackType

import duckdb
import orjson
import polars as pl

from pipeline import api, db
from pipeline.api import InventoryParams, envelope
from pipeline.files import FileCreator
from pipeline.models import help_page, openapi_document
from pipeline.settings import ExportSettings
from pipeline.steps import STORE_INVENTORY

CHUNK_ROWS = 50_000  # answer rows (store x channel x product) made into pages at a time
MANIFEST = "manifest.json"
MANIFEST_PARQUET = "manifest.parquet"  # the same rows, outside the public site: what builds read

# ---------------------------------------------------------------------------------------------
# The manifest: every file of a release with its SHA-256 and size, sorted by path. Held in
# columns (polars), written and read one line a file: a full-scale site has millions of files,
# which as Python objects would cost gigabytes.
#   {"files":[
#   {"path":"v1.39.0/catalog/categories/index.json","sha256":"…","bytes":1234},
#   …
#   ]}
# ---------------------------------------------------------------------------------------------

_SCHEMA = {"path": pl.String, "sha256": pl.Binary, "bytes": pl.Int64}
_HEAD, _TAIL = b'{"files":[\n', b"\n]}\n"
_CHUNK = 100_000


class Manifest:
    """path, sha256 (32 bytes) and bytes of every file of a site, sorted by path."""

    def __init__(self, frame: pl.DataFrame | None = None) -> None:
        frame = pl.DataFrame(schema=_SCHEMA) if frame is None else frame.select(*_SCHEMA)
        if not frame["path"].is_sorted():
            frame = frame.sort("path")  # the one copy: millions of rows at full scale
        self.frame = frame
        paths = self.frame["path"]
        twice = paths.filter(paths == paths.shift(1))  # sorted: a repeat is its neighbour
        if len(twice):
            raise ValueError(f"{twice[0]}: the same file twice in one site")

    def __len__(self) -> int:
        return self.frame.height

    @property
    def total_bytes(self) -> int:
        return int(self.frame["bytes"].sum())

    @classmethod
    def load(cls, release: Path | None) -> Manifest:
        """The manifest of a published release; empty when there is none. Read from its
        Parquet copy when there is one: the JSON of millions of files takes gigabytes to
        parse."""
        if release is not None and (release / MANIFEST_PARQUET).is_file():
            return cls(pl.read_parquet(release / MANIFEST_PARQUET))
        if release is None or not (release / MANIFEST).is_file():
            return cls()
        data = (release / MANIFEST).read_bytes()
        schema = {"path": pl.String, "sha256": pl.String, "bytes": pl.Int64}
        if data.startswith(_HEAD) and data.endswith(_TAIL):  # one file a line, as written
            lines = data[len(_HEAD) : -len(_TAIL)].replace(b",\n", b"\n")
            frame = pl.read_ndjson(io.BytesIO(lines), schema=schema) if lines else None
        else:  # any other layout of the same JSON
            entries = orjson.loads(data)["files"]
            frame = pl.from_dicts(entries, schema=schema) if entries else None
        if frame is None:
            return cls()
        return cls(frame.with_columns(pl.col("sha256").str.decode("hex")))

    def write(self, release: Path) -> None:
        """`manifest.json` in the release, and its Parquet copy for the next build."""
        self.frame.write_parquet(release / MANIFEST_PARQUET, statistics=False)
        with (release / MANIFEST).open("wb") as fh:
            fh.write(_HEAD)
            line = pl.struct("path", pl.col("sha256").bin.encode("hex"), "bytes")
            _write_json_lines(fh, self.frame, line.struct.json_encode())
            fh.write(_TAIL)

    def digests(self) -> dict[str, str]:
        """path -> hex SHA-256 (for small sites: tests, reports)."""
        hexes = self.frame["sha256"].bin.encode("hex").to_list()
        return dict(zip(self.frame["path"].to_list(), hexes, strict=True))

    def slice_under(self, folder: str) -> pl.DataFrame:
        """The files under `folder` ("a/b"): a slice of the sorted paths."""
        paths = self.frame["path"]
        # Every path under "a/b/" sorts between "a/b/" and "a/b0" ("0" follows "/").
        lo = int(paths.search_sorted(folder + "/", "left"))
        hi = int(paths.search_sorted(folder + "0", "left"))
        return self.frame.slice(lo, hi - lo)

    def under(self, folder: str) -> dict[str, bytes]:
        """path -> SHA-256 of the files under `folder`."""
        part = self.slice_under(folder)
        return dict(zip(part["path"].to_list(), part["sha256"].to_list(), strict=True))

    def unchanged(self, previous: Manifest) -> int:
        """How many files have the same path and bytes as in `previous`."""
        return self.frame.join(previous.frame, on=["path", "sha256"], how="semi").height

    def changes(self, previous: Manifest) -> tuple[pl.Series, pl.Series]:
        """(changed, removed) paths against `previous`, sorted: what a sync to a static host
        uploads and deletes."""
        changed = self.frame.join(
            previous.frame, on=["path", "sha256"], how="anti", maintain_order="left"
        )["path"]
        removed = previous.frame.join(self.frame, on="path", how="anti", maintain_order="left")
        return changed, removed["path"]


def write_changes(path: Path, changed: pl.Series, removed: pl.Series) -> None:
    """`{"changed":[…],"removed":[…]}`, one path a line."""
    with path.open("wb") as fh:
        for head, paths in ((b'{"changed":[', changed), (b'],\n"removed":[', removed)):
            fh.write(head)
            if len(paths):
                fh.write(b"\n")
                frame = paths.cast(pl.String).to_frame("path")
                # A JSON string: the value of {"path":…}, as polars encodes it.
                line = pl.struct("path").struct.json_encode().str.strip_prefix('{"path":')
                _write_json_lines(fh, frame, line.str.strip_suffix("}"))
                fh.write(b"\n")
        fh.write(b"]}\n")


def _write_json_lines(fh: io.BufferedWriter, frame: pl.DataFrame, line: pl.Expr) -> None:
    """`line` (a JSON text) of every row of `frame`, one a line, separated by commas; made and
    joined in polars, `_CHUNK` rows at a time."""
    for start in range(0, frame.height, _CHUNK):
        text = frame.slice(start, _CHUNK).select(line.str.join(",\n")).item()
        fh.write(((",\n" if start else "") + text).encode())


# ---------------------------------------------------------------------------------------------
# The writer
# ---------------------------------------------------------------------------------------------


STORES_DIR = f"{api.VERSION}/stores"  # a store's pages: STORES_DIR/<key>/inventory/products/


@dataclass
class SiteWriter:
    """Writes the files of one release's site and records their hashes. A file whose bytes equal
    the previous release's is a hard link to it: no bytes written, nothing to upload.

    With a `pool` (OUTPUT/pages), each store's folder in the site is a symlink to a folder of
    the pool named for the store and its digest, `<key>-<digest>`: a store unchanged since the
    previous release costs one symlink, not a link per file. New pool folders are written under
    `staging` and join the pool when the writer closes; a pool folder is never changed once
    there. Without a pool, stores' folders are plain folders of the site.

    The files are created by child processes (`pipeline.files`, one a core beside this one's)
    while this one builds the next pages. Use as a context manager, or call `close()`: it
    waits for the last file and raises the first error."""

    root: Path
    previous_site: Path | None = None  # the published release's site
    previous: Manifest = field(default_factory=Manifest)
    pool: Path | None = None
    staging: Path | None = None
    linked: int = field(default=0, init=False)  # files carried over as hard links

    def __post_init__(self) -> None:
        self._records: tuple[list[str], list[bytes], list[int]] = ([], [], [])
        self._chunks: list[pl.DataFrame] = []
        self._folder: str | None = None
        self._folder_digests: dict[str, bytes] = {}
        self._store_dirs: dict[str, str] = {}  # store key -> folder its files are written to
        self._staged: list[str] = []  # new pool folders
        self._creator = FileCreator()

    def __enter__(self) -> SiteWriter:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if kind is None:
            self.close()
        else:
            self._creator.abort()

    def write(self, name: str, body: bytes) -> None:
        """Write `body` at `name` (relative, "/"-separated), or link it when unchanged."""
        digest = hashlib.sha256(body).digest()
        self._record(name, digest, len(body))
        source = None
        if self.previous_site is not None and self._previous_digest(name) == digest:
            source = f"{self.previous_site}/{name}"
        self._creator.submit((self._target(name), body, source))

    def open_store(self, key: str, folder: str) -> str:
        """Where the files of store `key` are created: the pool folder `folder` (with a pool),
        or the store's folder of the site."""
        if self.pool is None or self.staging is None:
            return f"{self.root}/{STORES_DIR}/{key}"
        self._store_dirs[key] = f"{self.staging}/{folder}"
        self._staged.append(folder)
        link = self.root / STORES_DIR / key
        link.parent.mkdir(parents=True, exist_ok=True)
        link.symlink_to(os.path.relpath(self.pool / folder, link.parent))
        return self._store_dirs[key]

    def write_pages(self, pages: pl.DataFrame) -> None:
        """Many files at once: columns `path` (in the site), `body` (binary) and `target` (where
        the file is created). A file whose bytes equal the previous release's is linked. The
        bodies stay in one Arrow buffer, hashed and handed to the children as slices of it."""
        column = pages["body"].to_arrow(compat_level=pl.CompatLevel.oldest())  # large_binary
        _, offset_buffer, data_buffer = column.buffers()
        offsets = memoryview(offset_buffer).cast("q")[
            column.offset : column.offset + len(column) + 1
        ]
        data = memoryview(data_buffer)
        digests = pl.Series(
            [hashlib.sha256(data[a:b]).digest() for a, b in itertools.pairwise(offsets)],
            dtype=pl.Binary,
        )
        frame = pl.DataFrame({"path": pages["path"], "sha256": digests})
        frame = frame.with_columns(bytes=pages["body"].bin.size().cast(pl.Int64))
        self._flush_records()
        self._chunks.append(frame)
        sources: list[str | None] = [None] * frame.height
        if self.previous_site is not None and len(self.previous):
            folders = frame["path"].str.replace(r"/[^/]*$", "").unique().to_list()
            before = pl.concat([self.previous.slice_under(f) for f in folders]).unique("path")
            same = frame.join(
                before.select("path", "sha256", same=pl.lit(True)),
                on=["path", "sha256"],
                how="left",
                maintain_order="left",
            )["same"]
            if same.any():
                prefix = f"{self.previous_site}/"
                sources = (
                    pl.select(pl.when(same).then(prefix + frame["path"]).alias("source"))
                    .to_series()
                    .to_list()
                )
        self._creator.submit_many(pages["target"].to_list(), offsets, data, sources)

    def can_carry(self, key: str) -> bool:
        """Whether the previous release has the folder of store `key` to carry over."""
        return self.previous_site is not None and (self.previous_site / STORES_DIR / key).is_dir()

    def carry(self, key: str) -> int:
        """Take store `key`'s files from the previous release, whose pages are known to be
        unchanged, without building them: its pool folder's symlink, or a link per file."""
        folder = f"{STORES_DIR}/{key}"
        part = self.previous.slice_under(folder)
        self._flush_records()
        self._chunks.append(part)
        assert self.previous_site is not None
        old = self.previous_site / folder
        if self.pool is not None and old.is_symlink():
            link = self.root / folder
            link.parent.mkdir(parents=True, exist_ok=True)
            link.symlink_to(os.readlink(old))  # relative, and releases are siblings
            return part.height
        for name in part["path"].to_list():
            self._creator.submit((self._target(name), None, f"{self.previous_site}/{name}"))
        return part.height

    def adopt(self, site: str, name: str) -> None:
        """Take a finished file of another site (a shard's) into this one, without its bytes.
        (Not recorded: the caller has its hash already.)"""
        self._creator.submit((self._target(name), None, f"{site}/{name}"))

    def close(self) -> None:
        """Wait for the last file; move the new pool folders into the pool."""
        self._creator.close()
        self.linked = self._creator.linked
        for folder in self._staged:
            assert self.pool is not None and self.staging is not None
            staged = self.staging / folder
            if not staged.exists():  # a store with no page at all
                staged.mkdir(parents=True)
            try:
                staged.rename(self.pool / folder)
            except OSError:  # already in the pool: the same digest, the same files
                if not (self.pool / folder).is_dir():
                    raise
                shutil.rmtree(staged)
        self._staged = []

    def _target(self, name: str) -> str:
        """Where the file of site path `name` is created."""
        if self._store_dirs and name.startswith(STORES_DIR):
            key, _, rest = name[len(STORES_DIR) + 1 :].partition("/")
            if key in self._store_dirs:
                return f"{self._store_dirs[key]}/{rest}"
        return f"{self.root}/{name}"

    def manifest(self) -> Manifest:
        """Every file written so far (after `close()`: every file of the site)."""
        self._flush_records()
        manifest = Manifest(pl.concat(self._chunks, rechunk=False) if self._chunks else None)
        self._chunks = [manifest.frame]  # the chunks' memory goes
        return manifest

    def _record(self, name: str, digest: bytes, size: int) -> None:
        names, digests, sizes = self._records
        names.append(name)
        digests.append(digest)
        sizes.append(size)
        if len(names) >= _CHUNK:
            self._flush_records()

    def _flush_records(self) -> None:
        names, digests, sizes = self._records
        if names:
            columns = {"path": names, "sha256": digests, "bytes": sizes}
            self._chunks.append(pl.DataFrame(columns, schema=_SCHEMA))
            self._records = ([], [], [])

    def _previous_digest(self, name: str) -> bytes | None:
        folder = name.rpartition("/")[0]
        if folder != self._folder:  # pages come folder by folder: one slice per store
            self._folder, self._folder_digests = folder, self.previous.under(folder)
        return self._folder_digests.get(name)


# ---------------------------------------------------------------------------------------------
# The inventory pages
# ---------------------------------------------------------------------------------------------


Shard = tuple[int, int]  # (index, count): this build exports the stores of shard index


def shard_of(store_key: str, count: int) -> int:
    """The shard of a store: stable across runs, machines and Python versions."""
    return zlib.crc32(store_key.encode()) % count


def store_batches(
    con: duckdb.DuckDBPyConnection, batch_listings: int, shard: Shard | None = None
) -> list[list[str]]:
    """The stores to export (of one shard), in key order, cut into batches of about
    `batch_listings` listings: what one run of the inventory query holds in memory."""
    rows = con.execute(
        "SELECT store_key, listing_count FROM marts.store WHERE listing_count > 0 "
        "ORDER BY store_key"
    ).fetchall()
    batches: list[list[str]] = []
    size = batch_listings
    for key, listings in rows:
        if shard is not None and shard_of(key, shard[1]) != shard[0]:
            continue
        if size + listings > batch_listings:
            batches.append([])
            size = 0
        batches[-1].append(key)
        size += listings
    return batches


def _input_fingerprints(con: duckdb.DuckDBPyConnection, stores: list[str]) -> dict[str, bytes]:
    """Each store's inputs to its answers, fingerprinted without answering: every row of its
    listings joined with its product's and SKU's fixed fragments (what the inventory SQL reads),
    hashed whole, so a column added later is covered, and folded by xor and by sum, with the
    row count. A change escapes the fingerprint with odds of about 2**-64. DuckDB's hash is
    deterministic; a DuckDB with another hash only makes every store look changed."""
    rows = con.execute(
        """
        SELECT store_key, count(*), bit_xor(h), sum(h::HUGEINT)
        FROM (
            SELECT listing.store_key, hash(listing, product, sku) AS h
            FROM marts.listing AS listing
            JOIN export.product AS product USING (product_id)
            JOIN export.sku AS sku USING (sku_id)
            WHERE list_contains($stores, listing.store_key))
        GROUP BY store_key
        """,
        {"stores": stores},
    ).fetchall()
    return {key: f"{n}:{xor}:{total}".encode() for key, n, xor, total in rows}


def _answer_chunks(
    con: duckdb.DuckDBPyConnection, stores: list[str], channels: list[int] | None
) -> Iterator[pl.DataFrame]:
    """The default request of every channel of these stores, answered in one run of the store
    inventory SQL, ordered by store, channel and position, in slices of whole stores of about
    `CHUNK_ROWS` rows."""
    bind = api.query_params(InventoryParams(), store_key=None)
    bind.update(store_keys=stores, channel_id=None, first_position=None, last_position=None)
    # No ORDER BY here: SELECT and WHERE keep the inventory SQL's order (DuckDB's documented
    # order preservation), and a query that reads no position runs no window.
    answers: pl.DataFrame = con.sql(
        f"""
        SELECT store_key, channel_id, category_id, group_id, product_json
        FROM ({STORE_INVENTORY.sql}
        )
        WHERE $channels IS NULL OR list_contains($channels, channel_id)
        """,
        params={**bind, "channels": channels},
    ).pl()
    sizes = answers.group_by("store_key", maintain_order=True).len()["len"].to_list()
    start = end = 0
    for size in sizes:
        end += size
        if end - start >= CHUNK_ROWS:
            yield answers.slice(start, end - start)
            start = end
    if end > start:
        yield answers.slice(start, end - start)


_PRODUCTS_DIR = "inventory/products"  # a store's inventory pages, under its folder


def inventory_pages(answers: pl.DataFrame, settings: ExportSettings) -> pl.DataFrame:
    """Every materialised page of these answers (ordered by store, channel and position):
    columns store_key, name (the file name) and body. The unfiltered answer is cut into pages
    of each limit; so is each categoryId / groupId variant: the products of one category or
    group, in the same order (a filter removes whole products and changes no other entry)."""
    channels = answers["channel_id"].unique().to_list()
    channel = pl.col("channel_id")
    keys = ["store_key", "channel_id", "value"]
    parts = []
    for variant in [None, *dict.fromkeys(settings.variants)]:
        if variant is None:
            value: pl.Expr = pl.lit(None, pl.Int64)
            queries = {
                c: api.canonical_query(InventoryParams(channelId=c), paging=False) for c in channels
            }
            query = channel.replace_strict(queries, return_dtype=pl.String)
        else:
            value = pl.col("category_id" if variant == "categoryId" else "group_id").cast(pl.Int64)
            before, after = zip(*(api.filtered_query(c, variant) for c in channels), strict=True)
            query = pl.concat_str(
                channel.replace_strict(channels, before, return_dtype=pl.String),
                pl.col("value").cast(pl.String),
                channel.replace_strict(channels, after, return_dtype=pl.String),
            )
        keyed = answers.select("store_key", "channel_id", value.alias("value"), "product_json")
        keyed = keyed.with_columns(
            index=pl.int_range(pl.len()).over(keys), total=pl.len().over(keys)
        )
        for limit in dict.fromkeys(settings.limits):
            pages = keyed.group_by(
                *keys, (pl.col("index") // limit).alias("page"), maintain_order=True
            ).agg(pl.col("product_json").str.join(","), pl.col("total").first())
            body = api.envelope_expr(pl.col("total"), pl.col("product_json"))
            parts.append(
                pages.select(
                    "store_key",
                    api.page_names(query, pl.col("page"), limit).alias("name"),
                    body.cast(pl.Binary).alias("body"),
                )
            )
    return pl.concat(parts)


@cache
def _code_digest() -> bytes:
    """The exporter's code and SQL: a change may rename or reshape pages."""
    root = Path(__file__).resolve().parent
    digest = hashlib.sha256()
    for file in sorted([*root.glob("*.py"), *(root.parent / "sql").rglob("*.sql")]):
        digest.update(file.name.encode() + b"\0" + file.read_bytes() + b"\0")
    return digest.digest()


def store_digest(settings: ExportSettings, fingerprint: bytes) -> bytes:
    """What a store's pages depend on: its inputs' fingerprint, the export settings and the
    code. Equal digests give equal pages."""
    settings_json = settings.model_dump_json().encode()
    return hashlib.sha256(_code_digest() + settings_json + b"\0" + fingerprint).digest()


@dataclass(frozen=True)
class StoreRecord:
    """A store's digest and what its pages hold, kept in the release for the next build."""

    sha256: bytes
    channels: int
    products: int
    pages: int


def write_inventory_pages(
    con: duckdb.DuckDBPyConnection,
    writer: SiteWriter,
    settings: ExportSettings,
    batch_listings: int,
    shard: Shard | None = None,
    advance: Callable[[int], None] | None = None,
    previous_stores: dict[str, StoreRecord] | None = None,
) -> tuple[dict[str, int], dict[str, StoreRecord]]:
    """Every materialised inventory page (of one shard's stores); counts for the report and a
    record of each store. A store whose digest equals the previous release's is carried over:
    its files are linked and it is never even answered."""
    counts = {"store_channels": 0, "pages": 0, "products": 0, "stores_unchanged": 0}
    records: dict[str, StoreRecord] = {}
    previous_stores = previous_stores or {}
    batches = store_batches(con, batch_listings, shard)
    # Every store's inputs in one pass over the listings: a pass a batch would scan the SKUs and
    # products again each time.
    fingerprints = _input_fingerprints(con, [key for stores in batches for key in stores])
    digests = {key: store_digest(settings, f) for key, f in fingerprints.items()}
    for stores in batches:
        rebuild = []
        for key in stores:
            if (digest := digests.get(key)) is None:  # no listing the inventory SQL reads
                continue
            known = previous_stores.get(key)
            if known is None or known.sha256 != digest or not writer.can_carry(key):
                rebuild.append(key)
                continue
            writer.carry(key)
            records[key] = known
            counts["stores_unchanged"] += 1
            if advance:
                advance(known.channels)
        if not rebuild:
            continue
        for answers in _answer_chunks(con, rebuild, settings.channels):
            for key, record in _write_chunk(writer, settings, answers, digests).items():
                records[key] = record
                if advance:
                    advance(record.channels)
    for record in records.values():
        counts["store_channels"] += record.channels
        counts["products"] += record.products
        counts["pages"] += record.pages
    return counts, records


def _write_chunk(
    writer: SiteWriter, settings: ExportSettings, answers: pl.DataFrame, digests: dict[str, bytes]
) -> dict[str, StoreRecord]:
    """Write the pages of a chunk of answers, each store into a folder of its own; returns a
    record of each store."""
    pages = inventory_pages(answers, settings)
    stores = answers.group_by("store_key", maintain_order=True).agg(
        channels=pl.col("channel_id").n_unique(), products=pl.len()
    )
    written = dict(pages.group_by("store_key").len().iter_rows())
    dirs, records = {}, {}
    for key, channels, products in stores.iter_rows():
        dirs[key] = writer.open_store(key, f"{key}-{digests[key].hex()[:16]}")
        records[key] = StoreRecord(digests[key], channels, products, written[key])
    name = pl.lit(f"/{_PRODUCTS_DIR}/") + pl.col("name")
    store = pl.col("store_key")  # lower-case in the warehouse, as in `inventory_page_path`
    writer.write_pages(
        pages.select(
            path=pl.lit(f"{STORES_DIR}/") + store + name,
            body="body",
            target=store.replace_strict(dirs, return_dtype=pl.String) + name,
        )
    )
    return records


def write_category_pages(
    con: duckdb.DuckDBPyConnection, writer: SiteWriter, settings: ExportSettings
) -> int:
    rows = [
        r[0].encode()
        for r in con.execute(
            "SELECT category_json FROM export.category ORDER BY category_id"
        ).fetchall()
    ]
    pages = 0
    for limit in dict.fromkeys(settings.category_limits):
        for offset in range(0, len(rows), limit):
            writer.write(
                str(api.categories_page_path(offset, limit)),
                envelope(len(rows), rows[offset : offset + limit]),
            )
            pages += 1
    return pages


def write_help(writer: SiteWriter) -> None:
    writer.write(str(PurePosixPath(api.VERSION, "help", "index.html")), help_page().encode())
    writer.write(
        str(PurePosixPath(api.VERSION, "help", "openapi.json")),
        orjson.dumps(openapi_document(), option=orjson.OPT_INDENT_2),
    )


def write_site(
    con: duckdb.DuckDBPyConnection,
    site_dir: Path,
    settings: ExportSettings,
    batch_listings: int,
    previous_release: Path | None = None,
    shard: Shard | None = None,
    advance: Callable[[int], None] | None = None,
    pool: tuple[Path, Path] | None = None,
    memory_limit: str | None = None,
) -> Site:
    """Write the site; files whose bytes equal the previous release's are hard-linked to it.
    A shard writes its stores' pages; shard 0 also writes the pages common to all stores.
    `pool`: (the pool of stores' folders, where new ones are staged), see `SiteWriter`.
    `memory_limit`: DuckDB's, when its cache is to be given back before the manifests are
    handled."""
    if memory_limit:  # the transform's cache, before the previous manifest is read
        db.release_memory(con, memory_limit)
    previous = Manifest.load(previous_release)
    previous_site = previous_release / "site" if previous_release and len(previous) else None
    known = load_store_records(previous_release) if previous_site else {}
    shared, staging = pool or (None, None)
    with SiteWriter(site_dir, previous_site, previous, shared, staging) as writer:
        counts, stores = write_inventory_pages(
            con, writer, settings, batch_listings, shard, advance, known
        )
        counts["category_pages"] = 0
        if shard is None or shard[0] == 0:
            counts["category_pages"] = write_category_pages(con, writer, settings)
            write_help(writer)
    if memory_limit:  # the export's cache, before the manifest is sorted and compared
        db.release_memory(con, memory_limit)
    manifest = writer.manifest()
    changed, removed = manifest.changes(previous)
    counts.update(file_counts(manifest, changed, removed))
    return Site(manifest, changed, removed, stores, counts)


def file_counts(manifest: Manifest, changed: pl.Series, removed: pl.Series) -> dict[str, int]:
    """The report's counts of a site's files, from its manifest and its changes."""
    return {
        "files": len(manifest),
        "files_unchanged": len(manifest) - len(changed),
        "files_removed": len(removed),
        "bytes": manifest.total_bytes,
    }


@dataclass
class Site:
    """What `write_site` wrote: the manifest, the paths changed and removed since the previous
    release, the stores' records and the counts for the report."""

    manifest: Manifest
    changed: pl.Series
    removed: pl.Series
    stores: dict[str, StoreRecord]
    counts: dict[str, int]


STORES = "stores.parquet"  # beside the manifest, outside the public site
_STORES_SCHEMA = {
    "store_key": pl.String,
    "sha256": pl.Binary,
    "channels": pl.Int64,
    "products": pl.Int64,
    "pages": pl.Int64,
}


def write_store_records(release: Path, stores: dict[str, StoreRecord]) -> None:
    rows = [(key, r.sha256, r.channels, r.products, r.pages) for key, r in sorted(stores.items())]
    pl.DataFrame(rows, schema=_STORES_SCHEMA, orient="row").write_parquet(release / STORES)


def load_store_records(release: Path | None) -> dict[str, StoreRecord]:
    """store key -> record in a published release (none there: every store is built)."""
    if release is None or not (release / STORES).is_file():
        return {}
    frame = pl.read_parquet(release / STORES)
    return {key: StoreRecord(*rest) for key, *rest in frame.select(*_STORES_SCHEMA).iter_rows()}


def count_store_channels(con: duckdb.DuckDBPyConnection, shard: Shard | None = None) -> int:
    """Store x channel answers of the default parameters (of one shard): the unit of the
    export's progress."""
    rows = con.execute(
        "SELECT store_key, count(DISTINCT channel_id) FROM marts.listing "
        "WHERE quantity > 0 AND NOT is_excluded_category GROUP BY store_key"
    ).fetchall()
    return sum(n for key, n in rows if shard is None or shard_of(key, shard[1]) == shard[0])


def count_pages(
    con: duckdb.DuckDBPyConnection,
    settings: ExportSettings,
    batch_listings: int,
    shard: Shard | None = None,
) -> int:
    """How many inventory pages `write_inventory_pages` would write, from the same answers."""
    pages = 0
    for stores in store_batches(con, batch_listings, shard):
        for answers in _answer_chunks(con, stores, settings.channels):
            pages += inventory_pages(answers, settings).height
    return pages
