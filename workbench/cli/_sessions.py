"""``workbench sessions``: look at recorded sessions before running anything on them."""

from __future__ import annotations

import importlib
import json
from typing import Any

import click


@click.group(name="sessions")
def command() -> None:
    """Inspect (and generate) recorded sessions."""


@command.command(name="inspect")
@click.argument("paths", nargs=-1, required=True, type=click.Path(dir_okay=False))
@click.option("--json", "as_json", is_flag=True, help="Print a JSON list instead of tables.")
@click.option("--format", "fmt", default=None, metavar="F",
              help="Importer name (default: detect from the file).")
@click.option("--subagents", is_flag=True, help="Claude Code: also show sub-agent transcripts.")
def inspect_command(paths: tuple[str, ...], as_json: bool, fmt: str | None,
                    subagents: bool) -> None:
    """Show messages, tool calls, tokens and recorded compactions of each session in PATHS."""
    from workbench.sessions import load_sessions
    from workbench.sessions._inspect import format_inspection, inspect_session

    infos = []
    for path in paths:
        select: dict[str, Any] = {"include_subagents": True} if subagents else {}
        for session in load_sessions(path, format=fmt, **select):
            infos.append(inspect_session(session))
    if as_json:
        click.echo(json.dumps(infos, indent=2, ensure_ascii=False))
        return
    click.echo("\n\n".join(format_inspection(info) for info in infos))


_GENERATE = "workbench.cli._sessions_generate"
try:  # the session generator lives in its own module; add it when present
    _generate = importlib.import_module(_GENERATE)
except ModuleNotFoundError as exc:
    if exc.name != _GENERATE:
        raise
else:
    command.add_command(_generate.command)
