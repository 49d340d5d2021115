"""The command line, `pipeline` or `python -m pipeline` (docs/reference.md). The bucket's
commands are in `bucket.py`, and the error boundary every command has is in `boundary.py`
(docs/operating.md, "Failures and exit codes")."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path

import click
import orjson

from pipeline import db
from pipeline.api.urls import HELP_PATH
from pipeline.build import build
from pipeline.build import dry_run as validate
from pipeline.cli import boundary
from pipeline.cli.boundary import failures, object_store_failures
from pipeline.cli.bucket import nginx_bucket_command, publish_command
from pipeline.cli.options import config_option, setting, with_settings
from pipeline.distributed import build_on_ray
from pipeline.errors import BuildError
from pipeline.paths import SITE, WAREHOUSE
from pipeline.progress import Reporter
from pipeline.publish.release import BuildResult
from pipeline.serve.routes import answer
from pipeline.serve.server import serve
from pipeline.settings import Settings
from pipeline.tools.generate import generate
from pipeline.transform.audit import ACCEPT_FLAG

accept_volume_change = setting("build.accept_volume_change", ACCEPT_FLAG)


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
def main() -> None:
    """Store inventory pipeline: raw exports -> DuckDB warehouse -> static API pages."""


@main.command("build")
@setting("input", more="a URL read with the AWS_* environment's endpoint and credentials")
@setting("output")
@config_option
@click.option("--dry-run", is_flag=True, help="Validate the input and say what would be built.")
@accept_volume_change
@failures
@with_settings
def build_command(settings: Settings, dry_run: bool) -> None:
    """Build the warehouse and the site from INPUT into OUTPUT, then publish them atomically."""
    if dry_run:
        summary = validate(settings)
        click.echo(orjson.dumps(summary, option=orjson.OPT_INDENT_2).decode())
        return
    _published(build, settings)


@main.command("ray-build")
@setting("input", more="a URL read with the AWS_* environment's endpoint and credentials")
@setting("output")
@config_option
@setting("publish.to", "--to")
@setting("ray.shards")
@setting("ray.address")
@accept_volume_change
@object_store_failures
@with_settings
def ray_build_command(settings: Settings) -> None:
    """Build on a Ray cluster, each shard of stores by a task, and publish the release straight
    to the bucket `publish.to` (the shards share nothing but it), then to OUTPUT."""
    _published(build_on_ray, settings, to=settings.publish.to)


def _published(
    run: Callable[[Settings, Reporter], BuildResult], settings: Settings, to: str | None = None
) -> None:
    """Run a build with its progress on stderr, and say what it published (to the output, and
    to the bucket `to`) in one line."""
    reporter = Reporter()
    try:
        result = run(settings, reporter)
    finally:
        reporter.close()
    site = result.report.site
    rejected = sum(t.rejected for t in result.report.tables.values())
    click.echo(
        f"published build {result.build_id}: {result.report.stores} stores, "
        f"{site.pages} pages, {site.files} files, {site.bytes:,} bytes, "
        f"{rejected} rejected rows -> {settings.output}" + (f" and {to}" if to else "")
    )


@main.command("query")
@setting("output")
@config_option
@click.argument("target")
@failures
@with_settings
def query_command(settings: Settings, target: str) -> None:
    """Print the API's answer to TARGET ('/v1.39.0/...?...') from the published build: a
    page or bulk file from its file, anything else from the warehouse, as `pipeline serve`.

    The body goes to standard output, and `HTTP <status>` to standard error. The exit code is
    0 for a 2xx answer, 1 otherwise. The answer is a GET's: this command cannot send a body,
    so a search (POST .../search, with a JSON body) is answered by `pipeline serve` only; here
    its path is 404, as a GET of it is."""
    output_dir = settings.output
    _check_published(output_dir)
    # One release for both: its site's files (the bulk files, the pages) and its warehouse.
    release = (output_dir / WAREHOUSE).resolve().parent
    con = db.connect(release / WAREHOUSE, read_only=True)
    try:
        response = answer(con, target, release / SITE)
    finally:
        con.close()
    click.echo(f"HTTP {response.status}", err=True)
    sys.stdout.buffer.write(response.body)
    sys.stdout.flush()
    sys.exit(0 if response.status < 300 else 1)


@main.command("serve")
@setting("output")
@config_option
@setting("serve.host")
@setting("serve.port")
@setting("serve.threads")
@failures
@with_settings
def serve_command(settings: Settings) -> None:
    """Serve the published build over HTTP as the generated nginx configuration would, and
    answer parameter combinations that were not materialised live from the warehouse. The
    limits (connections, sizes, idle timeout) are the settings' `serve` section."""
    output, limits = settings.output, settings.serve
    _check_published(output)

    def listening(bound: int) -> None:  # the port taken, also when --port 0 let the system pick
        click.echo(f"serving {output} on http://{limits.host}:{bound}{HELP_PATH}", err=True)

    serve(output, limits.host, limits.port, limits, on_listen=listening)


@main.command("generate")
@click.option(
    "--output",
    "output_dir",
    type=click.Path(path_type=Path),
    required=True,
    help="Input directory to write.",
)
@click.option("--stores", type=click.IntRange(min=1), required=True)
@click.option("--listings", type=click.IntRange(min=1), required=True)
@click.option("--seed", type=int, default=1, show_default=True)
@failures
def generate_command(output_dir: Path, stores: int, listings: int, seed: int) -> None:
    """Write a realistic synthetic input directory of any size (deterministic for a seed)."""
    counts = generate(output_dir, stores, listings, seed)
    click.echo(", ".join(f"{v:,} {k}" for k, v in counts.items()) + f" -> {output_dir}")


def _check_published(output: Path) -> None:
    if not (output / WAREHOUSE).is_file():
        raise BuildError(f"{output / WAREHOUSE}: no published build (run `pipeline build`)")


main.add_command(publish_command)
main.add_command(nginx_bucket_command)


def run() -> None:
    """The program `pipeline` (and `python -m pipeline`): `main`, ending as `boundary.run` says."""
    boundary.run(main)
