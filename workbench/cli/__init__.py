"""The ``workbench`` command: assembles the subcommands, one module each.

Each ``workbench/cli/_<name>.py`` exposes a click command or group called ``command``;
`WorkbenchError` is turned into a clean ``click.ClickException`` here, in one place. Subcommand
modules import only click at the top and their machinery inside the command, so ``--help``
(of the group and of every subcommand) starts light: no pandas, matplotlib, litellm or Ray
(tests/test_light_start.py).
"""

from __future__ import annotations

import importlib

import click

from workbench.cli._exit_codes import EXIT_INTERRUPTED, exit_codes_help
from workbench.cli._stops import ARGV_KEY, ON_INTERRUPT_KEY
from workbench.errors import WorkbenchError

# module name -> shown in this order in --help
SUBCOMMANDS = ["_init", "_run", "_report", "_view", "_compare", "_sessions", "_models", "_cache",
               "_export", "_regress", "_record", "_tune"]


class _Group(click.Group):
    def resolve_command(self, ctx: click.Context, args: list[str]):  # type: ignore[no-untyped-def]
        # A misspelt command names the closest one (click itself only does so for options).
        name = args[0] if args else ""
        ctx.meta[ARGV_KEY] = list(args)  # as typed: what a stopped command says to run again
        if name and not name.startswith("-") and self.get_command(ctx, name) is None:
            # the light start: difflib (~1.3 ms of a ~75 ms start) only for a misspelt command
            from workbench._suggest import did_you_mean

            ctx.fail(f"No such command {name!r}{did_you_mean(name, self.list_commands(ctx))}.")
        return super().resolve_command(ctx, args)

    def invoke(self, ctx: click.Context):  # type: ignore[no-untyped-def]
        try:
            return super().invoke(ctx)
        except WorkbenchError as exc:
            # the light start: an error alone needs the redaction patterns (~18 ms)
            from workbench._redact import redact

            raise click.ClickException(redact(str(exc))) from exc
        except KeyboardInterrupt:
            # Instead of click's bare "Aborted!": what the command saved and how to go on.
            line = ctx.meta.get(ON_INTERRUPT_KEY)
            click.echo(line() if line is not None else "interrupted", err=True)
            ctx.exit(EXIT_INTERRUPTED)


@click.group(cls=_Group, epilog=exit_codes_help())
@click.version_option(package_name="compaction-workbench")
def cli() -> None:
    """Evaluate and tune LLM conversation compaction over recorded sessions."""


for _name in SUBCOMMANDS:
    try:
        _mod = importlib.import_module(f"workbench.cli.{_name}")
    except ModuleNotFoundError as exc:
        if exc.name != f"workbench.cli.{_name}":
            raise
        continue
    cli.add_command(_mod.command)


def main() -> None:
    """Console-script entry point."""
    cli(prog_name="workbench")


if __name__ == "__main__":  # pragma: no cover
    main()
