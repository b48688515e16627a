"""``workbench export VARIANT``: install a template variant as Goose's compaction prompts.

Writes the variant's ``compaction.md`` and ``compaction_summary.md`` to Goose's prompt override
folder (or ``--dest``), backing up any file it replaces; ``--dry-run`` only says what it would do.
"""

from __future__ import annotations

from pathlib import Path

import click


@click.command("export")
@click.argument("variant")
@click.option("--dest", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="Folder to write to [default: Goose's <config dir>/prompts].")
@click.option("--dry-run", is_flag=True, help="Validate and show what would change; write nothing.")
def command(variant: str, dest: Path | None, dry_run: bool) -> None:
    """Export template VARIANT (a prompts/ folder name, 'default' or a path) to Goose."""
    from workbench.export import export_template

    result = export_template(variant, dest=dest, dry_run=dry_run)
    header = f"Exporting {result.variant!r} to {result.dest}"
    click.echo(header + (" (dry run: nothing written)" if dry_run else ""))
    for path in result.written:
        backup = next((b for b in result.backups if b.name.startswith(path.name + ".bak-")), None)
        line = f"  {'would write' if dry_run else 'wrote':<11} {path}"
        if backup is not None:
            line += f"  (old file {'would go' if dry_run else 'saved'} to {backup.name})"
        click.echo(line)
    for path in result.unchanged:
        click.echo(f"  {'unchanged':<11} {path}")
    for warning in result.warnings:
        click.echo(f"Warning: {warning}", err=True)
    if not result.written:
        click.echo("Nothing to do: Goose already uses these templates.")
    elif not dry_run:
        click.echo("Goose uses these templates from its next compaction.")
        if result.backups:
            click.echo("Undo with workbench.export.restore_backup(<backup path>).")
