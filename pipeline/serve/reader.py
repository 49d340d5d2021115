"""Reading the API from a bucket (`pipeline.publish.bucket`'s layout) through its pointer: an
API URL (path and query string) maps to the site file `pipeline serve` and the generated nginx
read for it, and that file to its key through one committed release's store -> version map.
A reader that resolves every URL through the release it read never mixes two releases."""

from __future__ import annotations

import asyncio
import hashlib
import os
import re
import urllib.error
import urllib.request
from collections.abc import Coroutine
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar
from urllib.parse import quote, unquote, urlsplit

import obstore as obs

from pipeline.api import catalog, operations, urls
from pipeline.api.params import CATEGORY_PARAMETERS, parse_inventory_params
from pipeline.api.responses import ApiError
from pipeline.errors import BuildError, first_line
from pipeline.export.nginx import render
from pipeline.export.nginx.bucket import BucketOrigin, release_map
from pipeline.paths import NGINX_CONF
from pipeline.publish.bucket import (
    FAILURES,
    Damaged,
    Release,
    damaged,
    get,
    group_of,
    load_release,
    open_bucket,
)
from pipeline.publish.manifests import PART, get_list, get_part
from pipeline.publish.pointer import PointerEntry, read_pointer
from pipeline.serve import catalog as catalog_operations
from pipeline.serve.operations import parse
from pipeline.serve.routes import BAD_ESCAPE, normalize_path, origin_form
from pipeline.settings import ServeSettings

if TYPE_CHECKING:
    from obstore.store import ObjectStore

T = TypeVar("T")
RELEASE_MAP = "release.map"
BUCKET_CACHE = "cache"  # nginx's cache of the live answers in front of the bucket, by default


def site_path(target: str) -> str | None:
    """The site file that answers `GET target` (as the request line sends it), as `pipeline
    serve` maps it (`routes.answer`); None when no file could (a live answer, an error)."""
    try:
        target = origin_form(target)
        if len(target) > urls.MAX_TARGET:
            return None
        path, _, query = target.partition("#")[0].partition("?")
        if BAD_ESCAPE.search(path):
            return None
        path = normalize_path(unquote(path))
        if len(path) > 1:
            path = path.rstrip("/")
        match = urls.INVENTORY_PATH.fullmatch(path)
        if match:
            params = parse_inventory_params(query)
            if not urls.STORE_KEY.fullmatch(match.group(1)):
                return None
            return str(urls.inventory_page_path(match.group(1), params))
        operation = operations.match(path)
        if operation is not None:
            op, store_key, segment = operation
            _, params = parse(op, segment, query)
            if not op.materialised or not urls.STORE_KEY.fullmatch(store_key):
                return None
            return str(operations.page_path(op, store_key, params))
        if path == urls.CATEGORIES_PATH:
            return str(
                urls.categories_page_path(parse_inventory_params(query, CATEGORY_PARAMETERS))
            )
        found = catalog.match(path)
        if found is not None:
            page = catalog_operations.materialised_page(
                found[0], *catalog_operations.parse(*found, query)
            )
            return None if page is None else str(page)
        bulk = urls.BULK_PATH.fullmatch(path)
        if bulk:
            return bulk.group(1)
        if path == urls.HELP_PATH:
            return str(urls.HELP_FILE)
        if path == urls.OPENAPI_PATH:
            return str(urls.OPENAPI_FILE)
    except ApiError:
        return None
    return None


def resolve(release: Release, target: str) -> str | None:
    """The key (under the bucket's prefix) of the object that answers `target` in `release`;
    None when no object does."""
    path = site_path(target)
    return release.key(path) if path is not None else None


class BucketReader:
    """Reads the API's pages from the bucket at `url`, each request through the release the
    pointer named when `snapshot` was called; through `store` (the one `open_bucket(url)`
    opens) where the caller holds one already."""

    def __init__(self, url: str, store: ObjectStore | None = None) -> None:
        self.url, self.store = url, store if store is not None else open_bucket(url)
        self._parts: dict[str, dict[str, bytes]] = {}  # release -> part key -> SHA-256
        self._rows: dict[str, dict[str, bytes]] = {}  # part key -> path -> SHA-256

    async def _recorded(self, release: Release, key: str) -> dict[str, bytes]:
        """path -> SHA-256 of every file of the version the object at `key` belongs to, in
        `release`: its manifest part, checked against the SHA-256 the release's list of parts
        gives it (the list checked against its document's), each read once."""
        if release.release not in self._parts:
            listed = await get_list(self.store, release)
            if listed is None:
                raise damaged(
                    self.url, release.manifest, "missing, or not the manifest its release names"
                )
            self._parts = {release.release: listed}
        part = f"{group_of(key)}{PART}"
        if part not in self._rows:
            digest = self._parts[release.release].get(part)
            rows = await get_part(self.store, part, digest) if digest is not None else None
            if rows is None:
                raise damaged(self.url, part, "missing, or not the part its release names")
            self._rows[part] = dict(zip(rows.frame["path"], rows.frame["sha256"], strict=True))
        return self._rows[part]

    def snapshot(self) -> Release | None:
        """The committed release; None before the first publish."""
        return self._run(self._snapshot())

    async def _snapshot(self) -> Release | None:
        pointer, _ = await read_pointer(self.store, self.url)
        if pointer is None:
            return None
        return await load_release(self.store, self.url, pointer.document, pointer.sha256)

    def release_at(self, entry: PointerEntry) -> Release:
        """The release of a pointer's history entry."""
        return self._run(load_release(self.store, self.url, entry.document, entry.sha256))

    def read(self, release: Release, targets: list[str]) -> list[bytes | None]:
        """The bodies answering `targets` in `release` (None where no object does). A body
        that is not the bytes the release's manifest records for its file (an object
        overwritten in the bucket) raises `Damaged`; so does a file of the manifest whose
        object is missing."""

        async def one(target: str) -> bytes | None:
            path = site_path(target)
            key = release.key(path) if path is not None else None
            if path is None or key is None:
                return None
            recorded = await self._recorded(release, key)
            got = await get(self.store, key)
            if got is None and path not in recorded:
                return None
            if got is None or hashlib.sha256(got.data).digest() != recorded.get(path):
                raise Damaged(
                    f"{self.url}/{key}: missing, or not the bytes release {release.release} "
                    f"records for {path}; publish again to upload its version afresh"
                )
            return got.data

        async def every() -> list[bytes | None]:
            return list(await asyncio.gather(*(one(t) for t in targets)))

        return self._run(every())

    def _run(self, work: Coroutine[Any, Any, T]) -> T:
        try:
            return asyncio.run(work)
        except FAILURES as exc:
            raise BuildError(f"{self.url}: {first_line(exc)}") from None


def endpoint_of(url: str) -> tuple[str, str]:
    """The bucket's HTTP endpoint (AWS_ENDPOINT_URL, path-style; else S3's regional one) and
    the path of the prefix under it (/bucket/prefix)."""
    parts = urlsplit(url)
    region = os.environ.get("AWS_REGION") or os.environ.get("AWS_DEFAULT_REGION") or "us-east-1"
    endpoint = os.environ.get("AWS_ENDPOINT_URL") or f"https://s3.{region}.amazonaws.com"
    return endpoint.rstrip("/"), f"/{parts.netloc}{parts.path.rstrip('/')}"


def write_nginx(
    url: str, folder: Path, listen: str, upstream: str, limits: ServeSettings | None = None
) -> Release | None:
    """nginx in front of the bucket at `url` (with the `serve` settings `limits`; its live
    answers kept in `folder/cache` unless `serve.nginx_cache` says otherwise):
    `folder/nginx.conf` (include it in `http { }`) and the committed release's map,
    `folder/release.map`, replaced by a rename when the pointer moved (then `nginx -s reload`).
    The release; None before the first publish (no file written)."""
    release = BucketReader(url).snapshot()
    if release is None:
        return None
    endpoint, path = endpoint_of(url)
    origin = BucketOrigin(endpoint, path, (folder / RELEASE_MAP).absolute())
    check_readable(url, origin, release)
    folder.mkdir(parents=True, exist_ok=True)
    cache = (limits.nginx_cache if limits else None) or folder.absolute() / BUCKET_CACHE
    conf = render(folder.absolute(), listen, upstream, limits, bucket=origin, cache=cache)
    _replace(folder / NGINX_CONF, conf)
    _replace(folder / RELEASE_MAP, release_map(release.stores, release.common, release.build_id))
    return release


def check_readable(url: str, origin: BucketOrigin, release: Release) -> None:
    """An object of the common pages (the help page) and one store's page, read as nginx reads
    them: a GET without credentials at the key's URL. BuildError naming the object and the
    bucket's answer where one that the bucket holds cannot be read so (no policy lets anyone
    GET it); an object the bucket lacks is not nginx's to read, and is passed over."""
    paths = [str(urls.HELP_FILE)]
    if release.stores:
        first = min(release.stores)
        paths.append(str(urls.inventory_page_path(first, parse_inventory_params(""))))
    store, direct = open_bucket(url), urllib.request.build_opener(urllib.request.ProxyHandler({}))
    for path in paths:
        key = release.key(path)
        if key is None:
            continue
        where = f"{origin.endpoint}{origin.key_prefix}/{quote(key)}"
        try:
            with direct.open(where, timeout=30):
                continue
        except urllib.error.HTTPError as exc:
            code = re.search(r"<Code>([^<]*)</Code>", exc.read(4096).decode("utf-8", "replace"))
            said = f"{exc.code} {code[1] if code else exc.reason}"
        except (urllib.error.URLError, OSError) as exc:
            raise BuildError(f"{where}: nginx cannot reach the bucket: {first_line(exc)}") from None
        try:
            obs.head(store, key)
        except FileNotFoundError:
            continue
        except FAILURES as exc:
            raise BuildError(f"{url}: {first_line(exc)}") from None
        raise BuildError(
            f"{where}: nginx cannot read it: a GET without credentials answers {said}; give the "
            f"bucket a policy that lets anyone GET {path_of(origin, 'stores')} and "
            f'{path_of(origin, "common")} (docs/serving.md, "nginx in front of a bucket")'
        )


def path_of(origin: BucketOrigin, folder: str) -> str:
    """The objects of one of the bucket's folders, as a bucket policy names them."""
    return f"{origin.path.lstrip('/')}/{folder}/*"


def _replace(path: Path, text: str) -> None:
    """Write `path` whole, by a rename, and only when its text changes."""
    if path.is_file() and path.read_text(encoding="utf-8") == text:
        return
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)
