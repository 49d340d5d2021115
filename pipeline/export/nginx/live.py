"""How the generated nginx configuration reaches the live upstream (`pipeline serve`): `@live`,
and `TO_LIVE`. (docs/serving.md, "nginx and the live server")"""

from __future__ import annotations

from pipeline.export.nginx.headers import live_cache, upstream_headers

LIVE = "@live"
TO_LIVE = f"        error_page 418 = {LIVE};\n        return 418;\n"
RECURSIVE = "    recursive_error_pages on;\n"

# The header by which nginx tells the live upstream the build whose release it answers for:
# in front of a bucket, the committed release's (`bucket.release_map`), and `pipeline serve`
# answers 503 for any other build's (`serve.server`): never another build's bytes for a URL of
# that release (an object deleted from the bucket, say). In front of a local site it is
# cleared (a client's is not passed on).
RELEASE_HEADER = "X-Pipeline-Release"


def live_locations(release: str, cache_key: str, max_age: int) -> str:
    """`@live` for a page with no file, its answers kept in nginx's cache under `cache_key`
    `max_age` seconds (`headers.live_cache`); `/.live`, uncached, for a request with a
    precondition nginx does not answer itself (If-Match, If-Unmodified-Since), which `pipeline
    serve` ignores. Each tells the upstream `release` (an nginx value: `$bk_build`, or `""` to
    clear it)."""
    return "".join(
        f"""    location {where} {{
{internal}        proxy_pass http://pipeline_live{uri};
        proxy_set_header Host $host;
        proxy_set_header {RELEASE_HEADER} {release};
        proxy_http_version 1.1;
        proxy_set_header Connection "";
{upstream_headers()}{cached}    }}
"""
        for where, internal, uri, cached in (
            (LIVE, "", "", live_cache(cache_key, max_age)),
            ("= /.live", "        internal;\n", "$request_uri", ""),
        )
    )
