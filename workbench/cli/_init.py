"""``workbench init [DIR]``: write a starter project (`workbench._project`)."""

from __future__ import annotations

from pathlib import Path

import click


@click.command("init")
@click.argument("folder", required=False, default=".",
                type=click.Path(dir_okay=True, path_type=Path))
@click.option("--force", is_flag=True, help="Replace files that exist with other content.")
def command(folder: Path, force: bool) -> None:
    """Write a starter project into FOLDER (default: here): an experiment, the shipped template
    variants to edit, a tune spec, the regression gate and its baseline, sessions/ with a
    README, and a CI workflow. `workbench run` inside it works at once, offline.
    """
    # the light start: init alone needs the project files (~18 ms)
    from workbench._project import init_project

    result = init_project(folder, force=force)
    root = result.root
    click.echo(f"workbench init: {len(result.written)} file(s) written in {root}"
               + (f", {len(result.unchanged)} already there" if result.unchanged else ""))
    for top in sorted({p.relative_to(root).parts[0] for p in result.written}):
        click.echo(f"  {top}")
    where = "" if str(root) == "." else f"cd {root} && "
    click.echo(f"Next: {where}workbench run   (then see README.md for tune, export and regress)")
