"""Export a run's winner with its evidence: ``workbench export --from-run RUN_DIR [--rule ...]``.

The winner is picked from the run's cells by a rule (`workbench.tune.Objective`: ``max-recall``,
``min-retained:recall>=0.8``, ``pareto``...), compared with the run's baseline variant by the
session-level paired comparison, and staged as a variant folder under ``<run>/export/<name>/``
whose two templates start with a Jinja comment stating the evidence (run, rule, metric,
interval, date) and carry the point's parameter values baked in. The staged folder is then
exported like any variant (validation, backups), so Goose's files say where they came from.
"""

from __future__ import annotations

import datetime as dt
import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from workbench.compaction._templates import COMPACTION_SUMMARY_TEMPLATE, COMPACTION_TEMPLATE
from workbench.errors import ConfigError

__all__ = ["Evidence", "evidence_comment", "export_from_run", "pick_from_run", "stage_winner"]

EXPORT_DIR = "export"
DEFAULT_RULE = "max-recall"
_SLUG = re.compile(r"[^A-Za-z0-9_.-]+")


@dataclass
class Evidence:
    """Why a variant was exported.

    Attributes:
        run: The run folder.
        variant: The winning label (a point ``name{k=v}`` for parametrised variants).
        params: Its full parameter values.
        rule: The rule in words.
        metric: The recall column.
        value: The winner's mean `metric`.
        retained_tokens: Its mean retained tokens.
        parse_success_pct: Its parse success.
        baseline: What it was compared with.
        interval: The paired comparison in words (or why there is none).
        date: When the export was decided (UTC).
    """

    run: str
    variant: str
    rule: str
    metric: str
    value: float | None
    retained_tokens: float | None
    parse_success_pct: float | None
    baseline: str
    interval: str
    date: str
    params: dict[str, Any] = field(default_factory=dict)

    def lines(self) -> list[str]:
        """The evidence, one fact per line."""
        def num(v: float | None) -> str:
            return "n/a" if v is None else f"{v:,.4g}"

        out = [f"variant: {self.variant}"]
        if self.params:
            out.append("parameters: " + json.dumps(self.params, ensure_ascii=False))
        out += [f"run: {self.run}", f"rule: {self.rule}",
                f"metric: {self.metric} = {num(self.value)} (retained tokens "
                f"{num(self.retained_tokens)}, parse success {num(self.parse_success_pct)} %)",
                f"vs baseline {self.baseline}: {self.interval}", f"date: {self.date}"]
        return out


def evidence_comment(evidence: Evidence) -> str:
    """A Jinja comment block stating `evidence` (renders to nothing, in Jinja and minijinja)."""
    body = "\n".join(f"  {line}" for line in evidence.lines())
    body = body.replace("#}", "# }").replace("{#", "{ #")  # nothing may close the comment early
    return "{#\n  Exported by `workbench export --from-run`.\n" + body + "\n#}\n"


def _number(value: Any) -> float | None:
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return None if number != number else number


def pick_from_run(run_dir: str | Path, rule: str | None = None, *, metric: str | None = None,
                  baseline: str | None = None) -> Evidence:
    """Pick the winner of a run by `rule` and gather its evidence.

    Args:
        run_dir: A run folder (``workbench run`` or ``workbench tune``).
        rule: An objective rule; default the tune's objective when the run was a tune, else
            ``max-recall``.
        metric: The recall column; default the tune's metric, else ``probe_recall``.
        baseline: The variant to compare with; default the tune's baseline, else ``default``
            when the run has it, else the run's first template.

    Raises:
        ConfigError: no results store, or no variant satisfies the rule.
    """
    from workbench.harness import Results, paired_comparison
    from workbench.tune import Objective, variant_scores

    results = Results.load(run_dir)
    cells = results.cells
    if cells.empty:
        raise ConfigError(f"{run_dir}: the run has no cells to pick a winner from")
    tune_spec = _tune_json(Path(run_dir))
    rule = rule or tune_spec.get("objective") or DEFAULT_RULE
    metric = metric or tune_spec.get("metric") or "probe_recall"
    objective = Objective.parse(rule, metric)
    scores = variant_scores(cells, metric)
    winner = objective.winner(scores)
    templates = list(dict.fromkeys(cells["template"]))
    baseline = baseline or tune_spec.get("baseline") or (
        "default" if "default" in templates else templates[0])
    if winner == baseline:
        interval = "the winner is the baseline"
    else:
        seed = results.spec.seed if results.spec is not None else 0
        interval = str(paired_comparison(cells, baseline, winner, on="template", metric=metric,
                                         seed=seed))
    row = scores[scores["template"] == winner].iloc[0]
    params: dict[str, Any] = {}
    if "template_params" in cells:
        raw = cells.loc[cells["template"] == winner, "template_params"].dropna()
        params = json.loads(raw.iloc[0]) if len(raw) else {}
    return Evidence(run=str(Path(run_dir).resolve()), variant=winner, rule=objective.describe(),
                    metric=metric, value=_number(row["recall"]),
                    retained_tokens=_number(row["retained_tokens"]),
                    parse_success_pct=_number(row["parse_success_pct"]), baseline=baseline,
                    interval=interval,
                    date=dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M UTC"), params=params)


def _tune_json(run_dir: Path) -> dict[str, Any]:
    """The tune's objective, metric and baseline when `run_dir` is a tune's run folder."""
    spec = run_dir / "tune" / "spec.toml"
    if not spec.is_file():
        return {}
    from workbench.harness import Experiment

    table = Experiment.from_toml(spec).tune
    if table is None:
        return {}
    out = {"objective": table.objective, "metric": table.metric}
    tune_json = run_dir / "tune" / "tune.json"
    if tune_json.is_file():
        out["baseline"] = json.loads(tune_json.read_text(encoding="utf-8")).get("baseline")
    return {k: v for k, v in out.items() if v}


def stage_winner(evidence: Evidence, run_dir: str | Path) -> Path:
    """Write the winner's templates (evidence comment on top) to ``<run>/export/<name>/``."""
    from workbench.harness import Results
    from workbench.harness.experiment._variants import VARIANT_FILE, load_variant

    results = Results.load(run_dir)
    variant = load_variant(evidence.variant, results.spec)
    name = _SLUG.sub("-", evidence.variant).strip("-") or "winner"
    folder = Path(run_dir) / EXPORT_DIR / name
    folder.mkdir(parents=True, exist_ok=True)
    comment = evidence_comment(evidence)
    baked = variant.templates.baked()  # the parameter values written in, for Goose
    (folder / COMPACTION_TEMPLATE).write_text(comment + baked.compaction,
                                              encoding="utf-8")
    (folder / COMPACTION_SUMMARY_TEMPLATE).write_text(comment + baked.summary,
                                                      encoding="utf-8")
    options = "".join(f"{k} = {json.dumps(v)}\n" for k, v in variant.options.items())
    (folder / VARIANT_FILE).write_text(options, encoding="utf-8")
    return folder


def export_from_run(run_dir: str | Path, rule: str | None = None, *, metric: str | None = None,
                    baseline: str | None = None, dest: Path | None = None,
                    dry_run: bool = False) -> tuple[Any, Evidence]:
    """Pick a run's winner, stage it with its evidence and export it to Goose.

    Returns:
        ``(ExportResult, Evidence)``; a real export is recorded for ``--restore``.
    """
    from workbench.export._export import export_template
    from workbench.export._restore import record_export

    evidence = pick_from_run(run_dir, rule, metric=metric, baseline=baseline)
    folder = stage_winner(evidence, run_dir)
    result = export_template(folder, dest=dest, dry_run=dry_run)
    record_export(result)
    return result, evidence
