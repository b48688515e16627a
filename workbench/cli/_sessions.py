"""``workbench sessions``: look at recorded sessions before running anything on them."""

from __future__ import annotations

import importlib
import json

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
@click.option("--questions", "with_questions", is_flag=True,
              help="Also print the functional probes' questions about each session, each with "
                   "its expected answer and evidence (message index and quoted span), as a run "
                   "with the default [qa] table asks them.")
def inspect_command(paths: tuple[str, ...], as_json: bool, fmt: str | None,
                    subagents: bool, with_questions: bool) -> None:
    """Show messages, tool calls, tokens and recorded compactions of each session in PATHS."""
    from workbench.sessions import load_sessions  # the light start: loads pydantic and jinja2

    # the light start: loads pydantic and jinja2
    from workbench.sessions._inspect import format_inspection, inspect_session

    infos, blocks = [], []
    for path in paths:
        loaded = (load_sessions(path, format=fmt, include_subagents=True) if subagents
                  else load_sessions(path, format=fmt))
        for session in loaded:
            info = inspect_session(session)
            block = format_inspection(info)
            if with_questions:
                # the light start: loads pydantic and jinja2
                from workbench.probes import build_questions

                # the light start: loads pydantic and jinja2
                from workbench.probes._listing import format_question_set

                question_set = build_questions(session)
                info["questions"] = question_set.to_dict()
                block += "\n" + format_question_set(question_set)
            infos.append(info)
            blocks.append(block)
    if as_json:
        click.echo(json.dumps(infos, indent=2, ensure_ascii=False))
        return
    click.echo("\n\n".join(blocks))


_GENERATE = "workbench.cli._sessions_generate"
try:  # the session generator lives in its own module; add it when present
    _generate = importlib.import_module(_GENERATE)
except ModuleNotFoundError as exc:
    if exc.name != _GENERATE:
        raise
else:
    command.add_command(_generate.command)
