"""The object-store commands (`pipeline publish`, `pipeline nginx-bucket`), added to
`pipeline.cli`'s group."""

from __future__ import annotations

from pathlib import Path

import click

from pipeline.cli.boundary import ending_at_once, published_output, say
from pipeline.errors import BuildError
from pipeline.paths import published_release
from pipeline.publish.collect import GRACE, KEEP, collect
from pipeline.publish.objectstore import JOBS, LEASE_SECONDS, publish_release
from pipeline.serve.reader import RELEASE_MAP, write_nginx
from pipeline.settings import Settings


@click.command("publish")
@published_output
@click.option("--to", "url", required=True, help="Object store: s3://bucket/prefix.")
@click.option("--take-over", is_flag=True, help="Take the lease of a publish known to be dead.")
@click.option(
    "--allow-older",
    is_flag=True,
    help="Replace the bucket's release though it is of a newer build (a rollback).",
)
@click.option(
    "--jobs",
    type=click.IntRange(min=1),
    default=JOBS,
    show_default=True,
    help="Requests in flight at once: uploads, and the collection's listings and deletions.",
)
@click.option(
    "--lease-seconds",
    type=click.IntRange(min=1),
    default=LEASE_SECONDS,
    show_default=True,
    help="How long this publish's lease holds off others (advisory).",
)
@click.option(
    "--keep",
    type=click.IntRange(min=1),
    default=KEEP,
    show_default=True,
    help="Releases whose versions collection keeps (the current one included).",
)
@click.option(
    "--grace",
    type=click.FloatRange(min=0),
    default=GRACE,
    show_default=True,
    help="Seconds a release stays after it stopped being current, and a leftover's age.",
)
@click.option(
    "--collect-only",
    is_flag=True,
    help="Only collect (listing the whole bucket) what no kept release names, leftovers of "
    "dead publishes included; publish none.",
)
@ending_at_once
def publish_command(
    output_dir: Path,
    url: str,
    take_over: bool,
    allow_older: bool,
    jobs: int,
    lease_seconds: int,
    keep: int,
    grace: float,
    collect_only: bool,
) -> None:
    """Publish the release OUTPUT/current points to to an object store: its stores' new
    versions, the release document, then the release pointer (the commit, conditionally), then
    the collection of what no kept release names. Endpoint, region and credentials come from
    AWS_* variables (see the README)."""
    if collect_only:
        deleted = collect(url, keep=keep, grace=grace, jobs=jobs)
        say(f"collected {url}: {deleted} objects deleted")
        return
    release = published_release(output_dir)
    if release is None:
        raise BuildError(f"{output_dir}: no published build (run `pipeline build`)")
    r = publish_release(
        release,
        url,
        jobs=jobs,
        take_over=take_over,
        allow_older=allow_older,
        lease_seconds=lease_seconds,
        keep=keep,
        grace=grace,
    )
    say(  # committed: exit 0 whatever standard output does with the line
        f"published build {r.build_id} to {url} (release {r.release}): {r.uploaded} objects "
        f"uploaded ({r.uploaded_bytes:,} bytes) in {r.stores_new} new store versions, "
        f"{r.unchanged} unchanged, {r.deleted} collected, in {r.seconds:.1f} s"
        + (f" ({r.repaired} damaged versions in the bucket uploaded again)" if r.repaired else "")
    )


@click.command("nginx-bucket")
@click.option("--to", "url", required=True, help="The bucket published to: s3://bucket/prefix.")
@click.option(
    "--dir",
    "folder",
    type=click.Path(path_type=Path),
    required=True,
    help="Where nginx.conf (to include in http { }) and release.map are written.",
)
@click.option("--listen", default=Settings.model_fields["nginx_listen"].default, show_default=True)
@click.option(
    "--upstream",
    default=Settings.model_fields["nginx_upstream"].default,
    show_default=True,
    help="`pipeline serve`, for what the bucket has no object for.",
)
@ending_at_once
def nginx_bucket_command(folder: Path, url: str, listen: str, upstream: str) -> None:
    """Write the nginx configuration that serves the API from the bucket, and the committed
    release's store -> version map (replaced only when the pointer moved): run it when a
    publish commits, then `nginx -s reload`."""
    release = write_nginx(url, folder, listen, upstream)
    if release is None:
        raise BuildError(f"{url}: nothing published yet")
    click.echo(f"{folder / RELEASE_MAP}: release {release.release} ({len(release.stores)} stores)")
