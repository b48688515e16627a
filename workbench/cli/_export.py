"""``workbench export VARIANT``: install a template variant as Goose's compaction prompts.

Writes the variant's ``compaction.md`` and ``compaction_summary.md`` to Goose's prompt override
folder (or ``--dest``), backing up any file it replaces; ``--dry-run`` only says what it would do.
``--from-run RUN_DIR [--rule ...]`` exports a run's winner with its evidence as a Jinja comment;
``--restore`` undoes the last export.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click


@click.command("export")
@click.argument("variant", required=False)
@click.option("--dest", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="Folder to write to [default: Goose's <config dir>/prompts].")
@click.option("--dry-run", is_flag=True, help="Validate and show what would change; write nothing.")
@click.option("--from-run", "from_run", type=click.Path(file_okay=False, path_type=Path),
              default=None, help="Export the winner of this run folder, with its evidence.")
@click.option("--rule", default=None, help="With --from-run: the rule that picks the winner "
              "(max-recall, min-retained:recall>=0.8, pareto...) [default: the tune's, else "
              "max-recall].")
@click.option("--metric", default=None, help="With --from-run: the recall column "
              "[default: probe_recall].")
@click.option("--restore", is_flag=True, help="Undo the last export into --dest from its backups.")
def command(variant: str | None, dest: Path | None, dry_run: bool, from_run: Path | None,
            rule: str | None, metric: str | None, restore: bool) -> None:
    """Export template VARIANT (a prompts/ folder name, 'default' or a path) to Goose.

    With --from-run RUN_DIR, export the run's winner instead; --restore undoes the last export.
    """
    from workbench.export import export_template, record_export

    if sum(bool(x) for x in (variant, from_run, restore)) != 1:
        raise click.UsageError("give exactly one of VARIANT, --from-run RUN_DIR or --restore")
    if restore:
        _restore(dest)
        return
    if from_run is not None:
        result = _from_run(from_run, rule, metric, dest, dry_run)
    else:
        result = export_template(str(variant), dest=dest, dry_run=dry_run)
        record_export(result)
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
        click.echo("Undo with: workbench export --restore"
                   + (f" --dest {result.dest}" if dest is not None else ""))


def _from_run(run_dir: Path, rule: str | None, metric: str | None, dest: Path | None,
              dry_run: bool) -> Any:
    import difflib

    from workbench.export import export_from_run

    result, evidence = export_from_run(run_dir, rule, metric=metric, dest=dest, dry_run=dry_run)
    click.echo(f"Winner of {run_dir}:")
    for line in evidence.lines():
        click.echo(f"  {line}")
    if dry_run:
        staged = Path(run_dir) / "export"
        for path in result.written:
            new = next(staged.glob(f"*/{path.name}"), None)
            old = path.read_text(encoding="utf-8").splitlines() if path.is_file() else []
            if new is None:
                continue
            diff = difflib.unified_diff(old, new.read_text(encoding="utf-8").splitlines(),
                                        str(path), f"{path} (exported)", lineterm="", n=1)
            for line in list(diff)[:60]:
                click.echo(f"  {line}")
    return result


def _restore(dest: Path | None) -> None:
    from workbench.export import restore_last_export

    for line in restore_last_export(dest):
        click.echo(line)
