"""``workbench cache``: inspect and trim the response cache (``list``, ``clear``, ``prune``)."""

from __future__ import annotations

from pathlib import Path

import click

_path_option = click.option(
    "--path", "path", type=click.Path(dir_okay=False, path_type=Path), default=None,
    help="Cache file (default: <user dir>/cache/responses.db).")


def _open(path: Path | None):  # type: ignore[no-untyped-def]
    from workbench.models import ResponseCache  # the light start: loads pydantic and jinja2

    return ResponseCache(path)


@click.group(name="cache")
def command() -> None:
    """Inspect and trim recorded model responses."""


@command.command(name="list")
@_path_option
def list_(path: Path | None) -> None:
    """Show the cache file, its entries, hits, size and per-model counts."""
    cache = _open(path)
    try:
        stats = cache.stats()
    finally:
        cache.close()
    click.echo(f"path:     {stats['path']}")
    click.echo(f"entries:  {stats['entries']}")
    click.echo(f"hits:     {stats['hits']}")
    click.echo(f"size:     {stats['bytes']} bytes")
    click.echo(f"oldest:   {stats['oldest'] or '-'}")
    click.echo(f"newest:   {stats['newest'] or '-'}")
    for model, count in stats["models"].items():
        click.echo(f"  {count:>6}  {model}")


@command.command()
@_path_option
@click.option("--yes", is_flag=True, help="Do not ask for confirmation.")
def clear(path: Path | None, yes: bool) -> None:
    """Delete every recorded response."""
    cache = _open(path)
    try:
        if not yes:
            click.confirm(f"Delete every recording in {cache.path}?", abort=True)
        click.echo(f"deleted {cache.clear()} recordings from {cache.path}")
    finally:
        cache.close()


@command.command()
@_path_option
@click.option("--older-than", "days", type=click.FloatRange(min=0), required=True,
              metavar="DAYS", help="Delete recordings created more than DAYS days ago.")
def prune(path: Path | None, days: float) -> None:
    """Delete recordings older than a number of days."""
    cache = _open(path)
    try:
        removed = cache.prune(days)
        click.echo(f"deleted {removed} recordings older than {days:g} days from {cache.path}")
    finally:
        cache.close()
