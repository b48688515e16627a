"""``workbench models``: check a model string (``parse``) and make one call (``try``)."""

from __future__ import annotations

import json
from pathlib import Path

import click


@click.group(name="models")
def command() -> None:
    """Parse model strings and try a model."""


@command.command()
@click.argument("spec")
def parse(spec: str) -> None:
    """Show how SPEC ([cached:|replay:]model[@window]) is read."""
    from workbench.models import parse_model_spec  # the light start: loads pydantic and jinja2

    parsed = parse_model_spec(spec)
    click.echo(f"model:      {parsed.model}")
    click.echo(f"kind:       {parsed.kind}")
    click.echo(f"window:     {parsed.window if parsed.window is not None else '-'}")
    click.echo(f"cache:      {parsed.cache_mode or 'off'}")
    click.echo(f"label:      {parsed.label}")
    click.echo(f"canonical:  {parsed}")
    click.echo(f"window tokenizer: {parsed.window_tokenizer.label}")


@command.command(name="try")
@click.argument("spec")
@click.option("--text", required=True, help="The user message to send.")
@click.option("--system", default="", help="The system prompt.")
@click.option("--cache", type=click.Choice(["rw", "replay", "off"]), default=None,
              help="Override the string's cache mode.")
@click.option("--cache-path", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Cache file (default: <user dir>/cache/responses.db).")
def try_(spec: str, text: str, system: str, cache: str | None, cache_path: Path | None) -> None:
    """Send one message to SPEC; print the reply and its usage."""
    import asyncio  # the light start: asyncio alone takes ~45 ms, only `models try` needs it

    from workbench.messages import Message  # the light start: loads pydantic
    from workbench.models import load_model  # the light start: loads pydantic and jinja2

    model = load_model(spec, cache=cache, cache_path=cache_path)
    reply, usage = asyncio.run(model.complete(system, [Message.user(text)]))
    click.echo(reply.concat_text())
    click.echo("--- usage")
    click.echo(json.dumps(usage.to_dict(), indent=2, sort_keys=True, default=str))
