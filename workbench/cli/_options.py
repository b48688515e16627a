"""What ``run``, ``tune`` and ``regress`` share: finding SPEC and the command-line overrides.

`override_options` adds ``--model``, ``--template``, ``--window``, ``--sessions`` (each
repeatable, each replacing the spec's list), ``--limit N`` and ``--set key=value``;
`load_spec` finds the spec (`find_spec`), reads it and applies them (`Overrides`).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

import click

from workbench.errors import ConfigError

Command = TypeVar("Command", bound=Callable[..., object])

if TYPE_CHECKING:
    from workbench.harness import Results
    from workbench.harness.experiment import Experiment
    from workbench.harness.experiment._overrides import Overrides


def override_options(command: Command) -> Command:
    """Add the override options to a click command (they arrive as keyword arguments)."""
    options = [
        click.option("--model", "models", multiple=True, metavar="MODEL",
                     help="Run this model (repeatable; replaces the spec's models): an entry's "
                          "name or model string keeps that entry, anything else is a new "
                          "model string."),
        click.option("--template", "templates", multiple=True, metavar="VARIANT",
                     help="Run this template variant (repeatable; replaces the spec's "
                          "templates)."),
        click.option("--window", "windows", multiple=True, metavar="WINDOW",
                     help="Simulate this window: 8k, 32000, none (repeatable; replaces the "
                          "spec's windows)."),
        click.option("--sessions", "sessions", multiple=True, metavar="PATH_OR_GLOB",
                     help="Read sessions from here: a file, a glob, a shipped dataset name or "
                          "dataset:all (repeatable; replaces the spec's sessions)."),
        click.option("--limit", type=click.IntRange(min=1), default=None, metavar="N",
                     help="Keep the first N sessions in the spec's order (before each model's "
                          "own sessions subset)."),
        click.option("--set", "sets", multiple=True, metavar="KEY=VALUE",
                     help="Set any other spec field, validated like the TOML: concurrency=2, "
                          "verdict.rule=max-recall, models[0].concurrency=1 (repeatable)."),
    ]
    for option in reversed(options):
        command = option(command)
    return command


def json_option(command: Command) -> Command:
    """Add ``--json PATH`` (the run's answer as data: `workbench.harness.report._json`)."""
    return click.option("--json", "json_path", type=click.Path(dir_okay=False, path_type=Path),
                        default=None, metavar="PATH",
                        help="Also write the answer as JSON here: the table, the verdict "
                             "(every comparison), the recommendation, the errors and the "
                             "run's provenance (schema: RunDocument).")(command)


def write_json_file(path: Path | None, results: Results, command: str,
                    extra: dict[str, object] | None = None) -> None:
    """Write ``--json PATH`` when it was given, and say where."""
    if path is None:
        return
    # the light start: pydantic's schema loads only when JSON is asked for
    from workbench.harness.report._json import write_json

    click.echo(f"json: {write_json(path, results, command, extra)}")


def _words(kwargs: dict[str, object], key: str) -> tuple[str, ...]:
    value = kwargs.pop(key)
    assert isinstance(value, tuple), key  # click gives a multiple=True option as a tuple
    return tuple(str(word) for word in value)


def pop_overrides(kwargs: dict[str, object]) -> Overrides:
    """Take the override options out of a command's keyword arguments."""
    # the light start: loads pydantic and jinja2
    from workbench.harness.experiment._overrides import Overrides

    limit = kwargs.pop("limit")
    assert limit is None or isinstance(limit, int)  # click's IntRange, or not given
    return Overrides(models=_words(kwargs, "models"), templates=_words(kwargs, "templates"),
                     windows=_words(kwargs, "windows"), sessions=_words(kwargs, "sessions"),
                     limit=limit, sets=_words(kwargs, "sets"))


def load_spec(spec: Path | None, default: str, overrides: Overrides) -> tuple[Experiment, str]:
    """Find and read the spec, apply the overrides; returns it and its run folder's name
    (the spec's name, plus the overrides' hash when there are any)."""
    # the light start: loads pydantic and jinja2
    from workbench.harness.experiment import Experiment

    # the light start: loads pydantic and jinja2
    from workbench.harness.experiment._locate import find_spec

    experiment = Experiment.from_toml(find_spec(spec, default))
    if not overrides:
        return experiment, experiment.name
    return overrides.apply(experiment), overrides.run_name(experiment)


def not_run_line(experiment: Experiment) -> str | None:
    """One line naming the variants a model entry's ``templates`` leaves out, or None.

    Raises:
        ConfigError: no model runs any of the templates (an unrecorded variant asked of
            replayed models only): there would be nothing to run.
    """
    # the light start: loads pydantic and jinja2
    from workbench.harness.experiment._cells import not_run_templates, template_names

    left = not_run_templates(experiment)
    if not left:
        return None
    templates = template_names(experiment)
    if len(left) == len(experiment.models) and all(len(t) == len(templates)
                                                   for t in left.values()):
        raise ConfigError(
            f"nothing to run: {', '.join(templates)} is not recorded for "
            f"{', '.join(left)}, and each model runs only the variants its entry's `templates` "
            "lists (a replayed model: those it was recorded with); run the variant on the "
            "extractive baseline or a live model (--model extractive), or record it with "
            "`workbench record SPEC`")
    replayed = {m.label for m in experiment.models if m.model.startswith("replay:")}
    by_variants: dict[tuple[str, ...], list[str]] = {}
    for label, names in left.items():
        by_variants.setdefault(tuple(names), []).append(label)
    parts = []
    for names_left, labels in by_variants.items():
        recorded = all(label in replayed for label in labels)
        what = "not recorded" if recorded else "not in their templates"
        parts.append(f"{', '.join(names_left)} {what} for {', '.join(labels)}")
    return ("not run: " + "; ".join(parts) + " (a model entry's `templates` lists the variants "
            "it runs; a replayed model runs only those it was recorded with, and `workbench "
            "record` adds more)")
