"""The object-store commands (`pipeline publish`, `pipeline nginx-bucket`), added to
`pipeline.cli`'s group."""

from __future__ import annotations

import click

from pipeline.cli.boundary import object_store_failures, say
from pipeline.cli.options import config_option, needed, setting, with_settings
from pipeline.errors import BuildError
from pipeline.paths import published_release
from pipeline.publish.collect import collect
from pipeline.publish.objectstore import publish_release
from pipeline.serve.reader import RELEASE_MAP, write_nginx
from pipeline.settings import Settings


@click.command("publish")
@setting("output")
@config_option
@setting("publish.to")
@click.option("--take-over", is_flag=True, help="Take the lease of a publish known to be dead.")
@click.option(
    "--allow-older",
    is_flag=True,
    help="Replace the bucket's release though it is of a newer build (a rollback).",
)
@setting("publish.jobs")
@setting("publish.lease_seconds")
@setting("publish.keep")
@setting("publish.grace")
@click.option(
    "--collect-only",
    is_flag=True,
    help="Only collect (listing the whole bucket) what no kept release names, leftovers of "
    "dead publishes included; publish none.",
)
@object_store_failures
@with_settings
def publish_command(
    settings: Settings, take_over: bool, allow_older: bool, collect_only: bool
) -> None:
    """Publish the release OUTPUT/current points to into a bucket, then collect what no kept
    release names. Credentials come from the AWS_* variables (docs/serving.md, "Publishing to
    a bucket")."""
    output_dir, how = settings.output, settings.publish
    url = needed(how.to, "publish.to", "--to")
    if collect_only:
        deleted = collect(url, keep=how.keep, grace=how.grace, jobs=how.jobs)
        say(f"collected {url}: {deleted} objects deleted")
        return
    release = published_release(output_dir)
    if release is None:
        raise BuildError(f"{output_dir}: no published build (run `pipeline build`)")
    r = publish_release(
        release,
        url,
        jobs=how.jobs,
        take_over=take_over,
        allow_older=allow_older,
        lease_seconds=how.lease_seconds,
        keep=how.keep,
        grace=how.grace,
    )
    say(  # committed: exit 0 whatever standard output does with the line
        f"published build {r.build_id} to {url} (release {r.release}): {r.uploaded} objects "
        f"uploaded ({r.uploaded_bytes:,} bytes) in {r.stores_new} new store versions, "
        f"{r.unchanged} unchanged, {r.deleted} collected, in {r.seconds:.1f} s"
        + (f" ({r.repaired} damaged versions in the bucket uploaded again)" if r.repaired else "")
    )


@click.command("nginx-bucket")
@config_option
@setting("publish.to")
@setting("serve.nginx_bucket_dir", "--dir")
@setting("serve.nginx_listen", "--listen")
@setting("serve.nginx_upstream", "--upstream")
@object_store_failures
@with_settings
def nginx_bucket_command(settings: Settings) -> None:
    """Write the nginx configuration that serves the API from the bucket, and the committed
    release's store -> version map (replaced only when the pointer moved): run it when a
    publish commits, then `nginx -s reload`."""
    url = needed(settings.publish.to, "publish.to", "--to")
    folder = needed(settings.serve.nginx_bucket_dir, "serve.nginx_bucket_dir", "--dir")
    listen, upstream = settings.serve.nginx_listen, settings.serve.nginx_upstream
    release = write_nginx(url, folder, listen, upstream, settings.serve)
    if release is None:
        raise BuildError(f"{url}: nothing published yet")
    click.echo(f"{folder / RELEASE_MAP}: release {release.release} ({len(release.stores)} stores)")
