"""``workbench export VARIANT``: install a template variant as Goose's compaction prompts.

Writes the variant's ``compaction.md`` and ``compaction_summary.md`` to Goose's prompt override
folder (or ``--dest``), backing up any file it replaces and adding the export to the
destination's history; ``--dry-run`` only says what it would do. ``--from-run RUN_DIR [--rule
...]`` recomputes the run's winner by the winner rule (a tune's: exactly the winner it
printed) and exports it with its evidence, printing its parameters and template hash;
``--as-variant [NAME]`` writes it as ``prompts/NAME/`` instead. ``--history`` lists the
exports, ``--restore`` undoes the last one, ``--restore --all`` every one.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import click

if TYPE_CHECKING:
    from workbench.export import ExportResult

AS_DEFAULT = "\0default"
"""What ``--as-variant`` without a NAME stands for: the tune's ``winner_name``."""


@click.command("export")
@click.argument("variant", required=False)
@click.option("--dest", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="Folder to write to [default: Goose's <config dir>/prompts].")
@click.option("--dry-run", is_flag=True, help="Validate and show what would change; write nothing.")
@click.option("--from-run", "from_run", type=click.Path(file_okay=False, path_type=Path),
              default=None, help="Export the winner of this run folder, with its evidence.")
@click.option("--rule", default=None, help="With --from-run: the winner rule, by the verdict's "
              "names: min-retained-safe, max-recall, min-retained, pareto [default: the tune's, "
              "else the run's [verdict] rule, else min-retained-safe].")
@click.option("--as-variant", "as_variant", is_flag=False, flag_value=AS_DEFAULT, default=None,
              metavar="[NAME]", help="With --from-run: write the winner as prompts/NAME/ "
              "(a variant folder) instead of Goose's folder [NAME default: the tune's "
              "winner_name, else <variant>-tuned].")
@click.option("--prompts-dir", type=click.Path(file_okay=False, path_type=Path),
              default=Path("prompts"), show_default=True,
              help="With --as-variant: the folder of variant folders.")
@click.option("--overwrite", is_flag=True, help="With --as-variant: replace an existing folder.")
@click.option("--restore", is_flag=True, help="Undo the last export into --dest (one step).")
@click.option("--all", "restore_all", is_flag=True,
              help="With --restore: undo every export, back to the folder as it was before "
                   "the first.")
@click.option("--history", is_flag=True, help="List the exports recorded in --dest.")
def command(variant: str | None, dest: Path | None, dry_run: bool, from_run: Path | None,
            rule: str | None, as_variant: str | None, prompts_dir: Path, overwrite: bool,
            restore: bool, restore_all: bool, history: bool) -> None:
    """Export template VARIANT (a prompts/ folder name, 'default' or a path) to Goose.

    With --from-run RUN_DIR, export the run's winner instead; --history lists the exports,
    --restore undoes the last one and --restore --all all of them.
    """
    # the light start: loads pydantic and jinja2
    from workbench.export import export_template, history_lines

    if restore_all and not restore:
        raise click.UsageError("--all goes with --restore")
    if sum(bool(x) for x in (variant, from_run, restore, history)) != 1:
        raise click.UsageError("give exactly one of VARIANT, --from-run RUN_DIR, --restore or "
                               "--history")
    if as_variant is not None and from_run is None:
        raise click.UsageError("--as-variant goes with --from-run RUN_DIR")
    if history:
        for line in history_lines(dest):
            click.echo(line)
        return
    if restore:
        _restore(dest, restore_all)
        return
    if from_run is not None:
        result = _from_run(from_run, rule, dest, dry_run, as_variant, prompts_dir, overwrite)
        if result is None:
            return
    else:
        result = export_template(str(variant), dest=dest, dry_run=dry_run)
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
        where = f" --dest {result.dest}" if dest is not None else ""
        click.echo(f"Undo with: workbench export --restore{where} (--history lists the "
                   "exports; --restore --all undoes every one)")


def _from_run(run_dir: Path, rule: str | None, dest: Path | None, dry_run: bool,
              as_variant: str | None, prompts_dir: Path, overwrite: bool) -> ExportResult | None:
    import difflib  # the light start: ~1 ms at every start, for --dry-run's diff only

    # the light start: loads pydantic and jinja2
    from workbench.export import export_template, pick_from_run, stage_winner, write_variant

    evidence = pick_from_run(run_dir, rule)
    staged = stage_winner(evidence, run_dir)
    click.echo(f"Winner of {run_dir} (recomputed from its stored cells by the rule):")
    for line in evidence.lines():
        click.echo(f"  {line}")
    if as_variant is not None:
        name = as_variant if as_variant != AS_DEFAULT else (
            evidence.winner_name or f"{evidence.variant.split('{', 1)[0]}-tuned")
        if dry_run:
            click.echo(f"would write the variant folder {prompts_dir / name} (dry run)")
            return None
        folder = write_variant(evidence, staged, prompts_dir, name, overwrite=overwrite)
        click.echo(f"wrote the variant folder {folder} (use it as templates = [\"{name}\"])")
        return None
    result = export_template(staged, dest=dest, dry_run=dry_run,
                             history_hash=evidence.template_hash)
    if dry_run:
        for path in result.written:
            new = staged / path.name
            old = path.read_text(encoding="utf-8").splitlines() if path.is_file() else []
            if not new.is_file():
                continue
            diff = difflib.unified_diff(old, new.read_text(encoding="utf-8").splitlines(),
                                        str(path), f"{path} (exported)", lineterm="", n=1)
            for line in list(diff)[:60]:
                click.echo(f"  {line}")
    return result


def _restore(dest: Path | None, every: bool) -> None:
    # the light start: loads pydantic and jinja2
    from workbench.export import restore_all_exports, restore_last_export

    for line in (restore_all_exports(dest) if every else restore_last_export(dest)):
        click.echo(line)
