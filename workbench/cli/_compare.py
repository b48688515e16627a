"""``workbench compare RUN_A RUN_B``: what changed between two runs (`compare_runs`).

Prints, per (template, model, window), B - A of the comparison-table columns; the cells (joined
on the cell key: session, strategy, model, template, window, repeat) whose status or parse outcome
changed; a paired cluster-bootstrap comparison of B against A on one metric; and the verdict of
B against A per model x window. ``--fail-on METRIC:TOLERANCE`` turns it into a check for
scripts: exit 1 when B is worse than A on METRIC by more than TOLERANCE.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import click

from workbench.cli._options import json_option, write_json_file
from workbench.errors import ConfigError

if TYPE_CHECKING:
    import pandas as pd

EXIT_REGRESSED = 1
"""Exit code when a ``--fail-on`` check fails."""

METRIC_ALIASES = {"failure_rate": "failed", "parse_success_pct": "parse_success",
                  "useful_structured_pct": "useful_structured"}
"""Table column names accepted by ``--fail-on`` for their per-cell metric."""

_FAIL_ON = re.compile(r"^(?P<metric>[A-Za-z_][\w]*):(?P<tol>[0-9]*\.?[0-9]+)(?P<pct>%?)$")


@dataclass(frozen=True)
class FailOn:
    """One ``--fail-on METRIC:TOLERANCE`` check.

    Attributes:
        metric: A per-cell metric (table names such as ``parse_success_pct`` map to theirs).
        tolerance: How much worse B may be: absolute, or a fraction of A's mean when `relative`.
        relative: The tolerance was given as a percentage (``retained_tokens:5%``).
    """

    metric: str
    tolerance: float
    relative: bool = False

    @classmethod
    def parse(cls, text: str) -> FailOn:
        """Read ``METRIC:TOLERANCE`` (``probe_recall:0.02``, ``retained_tokens:5%``).

        Raises:
            ConfigError: the text does not have that shape.
        """
        m = _FAIL_ON.match(text.strip())
        if m is None:
            raise ConfigError(f"--fail-on {text!r}: expected METRIC:TOLERANCE, e.g. "
                              "probe_recall:0.02 or retained_tokens:5%")
        metric = METRIC_ALIASES.get(m["metric"], m["metric"])
        tol = float(m["tol"])
        return cls(metric, tol / 100 if m["pct"] else tol, bool(m["pct"]))

    def check(self, both: pd.DataFrame, seed: int) -> tuple[bool, str]:
        """Compare run B with run A on the metric; True when B is within the tolerance.

        Args:
            both: Cells of both runs with a ``run`` column (``A``/``B``).
            seed: Bootstrap seed.

        Returns:
            ``(passed, one line saying both means, the difference and the limit)``.
        """
        # the light start: loads pandas, pydantic and jinja2
        from workbench.harness.results._paired import LOWER_IS_BETTER, paired_comparison

        result = paired_comparison(both, "A", "B", on="run", metric=self.metric, seed=seed)
        if result.n_pairs == 0:
            return False, (f"{self.metric}: no cell has a value in both runs, cannot check "
                           "(FAIL)")
        mean_a = float(result.pairs["a"].mean())
        mean_b = float(result.pairs["b"].mean())
        limit = self.tolerance * abs(mean_a) if self.relative else self.tolerance
        lower = self.metric in LOWER_IS_BETTER
        worse_by = result.mean_diff if lower else -result.mean_diff
        passed = worse_by <= limit + 1e-12
        shown = f"{self.tolerance:.0%}" if self.relative else f"{self.tolerance:g}"
        direction = "lower is better" if lower else "higher is better"
        return passed, (f"{self.metric} ({direction}): A {mean_a:.4g}, B {mean_b:.4g} over "
                        f"{result.n_pairs} paired cells; B worse by {max(worse_by, 0):.4g}, "
                        f"allowed {limit:.4g} ({shown}): {'ok' if passed else 'FAIL'}")


@click.command("compare")
@click.argument("run_a", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.argument("run_b", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option("--metric", default="probe_recall", show_default=True,
              help="Metric for the paired comparison of B against A.")
@click.option("--seed", default=0, show_default=True, help="Bootstrap seed.")
@click.option("--fail-on", "fail_on", multiple=True, metavar="METRIC:TOLERANCE",
              help="Exit 1 when B is worse than A on METRIC by more than TOLERANCE (absolute, "
                   "or N% of A's mean); repeatable. E.g. probe_recall:0.02, "
                   "retained_tokens:5%, failure_rate:0.")
@json_option
def command(run_a: Path, run_b: Path, metric: str, seed: int, fail_on: tuple[str, ...],
            json_path: Path | None) -> None:
    """Show what changed from RUN_A to RUN_B (deltas are B - A)."""
    # the light start: the harness loads when the command runs
    from workbench.harness.report._compare_runs import compare_runs

    try:
        checks = [FailOn.parse(text) for text in fail_on]
    except ConfigError as exc:
        raise click.BadParameter(str(exc), param_hint="--fail-on") from exc
    found = compare_runs(run_a, run_b, metric, seed)
    for block in found.lines:
        click.echo(block)
    if json_path is not None:  # run B's document, with what changed from A
        from workbench.harness.results._results import Results  # (as above)

        write_json_file(json_path, Results.load(run_b), "compare",
                        {"run_a": str(run_a), "comparison": found.to_text()})
    if found.both is None:
        if checks:
            click.echo("fail-on: a run has no cells, cannot check (FAIL)")
            raise SystemExit(EXIT_REGRESSED)
        return
    failed = 0
    for check in checks:
        passed, line = check.check(found.both, seed)
        failed += not passed
        click.echo(f"fail-on {line}")
    if failed:
        click.echo(f"{failed} of {len(checks)} --fail-on check(s) failed")
        raise SystemExit(EXIT_REGRESSED)
