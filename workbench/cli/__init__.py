"""The ``workbench`` command: assembles the subcommands, one module each.

Each ``workbench/cli/_<name>.py`` exposes a click command or group called ``command``;
`WorkbenchError` is turned into a clean ``click.ClickException`` here, in one place.
"""

from __future__ import annotations

import importlib

import click

from workbench._redact import redact
from workbench.errors import WorkbenchError

# module name -> shown in this order in --help
SUBCOMMANDS = ["_run", "_report", "_view", "_compare", "_sessions", "_models", "_cache", "_export",
               "_regress", "_record", "_tune"]


class _Group(click.Group):
    def invoke(self, ctx: click.Context):  # type: ignore[no-untyped-def]
        try:
            return super().invoke(ctx)
        except WorkbenchError as exc:
            raise click.ClickException(redact(str(exc))) from exc


@click.group(cls=_Group)
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
