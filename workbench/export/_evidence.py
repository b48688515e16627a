"""Export a run's winner with its evidence: ``workbench export --from-run RUN_DIR [--rule ...]``.

The winner is recomputed from the run's stored cells by the one winner rule the tune and the
verdict use (`workbench.tune.Objective`; default: the tune's rule, else the run spec's
``[verdict] rule``, else ``min-retained-safe``), over the points and sessions of the tune's
final rung when the run is a tune (from ``tune/tune.json``), so the export is exactly the
winner the tune printed. It is compared with the run's baseline variant by the session-level
paired comparison, and staged as a variant folder under ``<run>/export/<name>/`` whose two
templates start with a Jinja comment stating the evidence (run, rule, parameters, template
hash, interval, date) and carry the point's parameter values baked in. The staged folder is
then exported like any variant (validation, backups, history), or with ``--as-variant`` copied
to ``prompts/<name>/``.
"""

from __future__ import annotations

import datetime as dt
import json
import re
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import SupportsFloat, TypedDict, cast

from workbench._json_types import JSONObject, JSONValue
from workbench._storage import write_atomic
from workbench.compaction._templates import COMPACTION_SUMMARY_TEMPLATE, COMPACTION_TEMPLATE
from workbench.errors import ConfigError
from workbench.export._export import ExportResult, export_template, template_hash

__all__ = ["Evidence", "evidence_comment", "export_from_run", "pick_from_run", "stage_winner",
           "template_hash", "write_variant"]

EXPORT_DIR = "export"
TUNE_JSON = "tune/tune.json"
_SLUG = re.compile(r"[^A-Za-z0-9_.-]+")


class _FinalRung(TypedDict, total=False):
    templates: list[str]
    sessions: list[str]


class _TuneRecord(TypedDict, total=False):
    """The keys of ``tune/tune.json`` (written by `workbench.tune`) an export reads."""

    recall_tolerance: float
    rule_name: str
    final: _FinalRung
    baseline: str
    winner_name: str


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
        rule_name: The rule's name (``min-retained-safe``...).
        template_hash: sha256 of the two exported templates (parameters baked in, before the
            evidence comment), set when the winner is staged.
        winner_name: The tune's ``winner_name`` (the default ``--as-variant`` name), if any.
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
    params: JSONObject = field(default_factory=dict)
    rule_name: str = ""
    template_hash: str = ""
    winner_name: str | None = None

    def lines(self) -> list[str]:
        """The evidence, one fact per line."""
        def num(v: float | None) -> str:
            return "n/a" if v is None else f"{v:,.4g}"

        out = [f"variant: {self.variant}"]
        if self.params:
            out.append("parameters: " + json.dumps(self.params, ensure_ascii=False))
        if self.template_hash:
            out.append(f"template hash: sha256:{self.template_hash}")
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


def _number(value: SupportsFloat | str) -> float | None:
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return None if number != number else number


def pick_from_run(run_dir: str | Path, rule: str | None = None, *, metric: str | None = None,
                  baseline: str | None = None) -> Evidence:
    """Pick the winner of a run by `rule` from its stored cells and gather its evidence.

    Args:
        run_dir: A run folder (``workbench run`` or ``workbench tune``).
        rule: A winner rule (`workbench.tune.Objective`); default the tune's rule when the run
            was a tune, else the spec's ``[verdict] rule``, else ``min-retained-safe``.
        metric: The recall column the evidence reports (default ``probe_recall``).
        baseline: The variant to compare with; default the tune's baseline, else ``default``
            when the run has it, else the run's first template.

    Raises:
        ConfigError: no results store, an unknown rule, or a rule that recommends nothing.
    """
    # pandas and matplotlib (the results, the tune's rule) only for --from-run, not for a plain
    # export or a restore
    from workbench.harness import Results, paired_comparison
    from workbench.tune import Objective, variant_scores  # (as above)

    results = Results.load(run_dir)
    cells = results.cells
    if cells.empty:
        raise ConfigError(f"{run_dir}: the run has no cells to pick a winner from")
    tuned = _tune_json(Path(run_dir))
    spec = results.spec
    tolerance = tuned.get("recall_tolerance", spec.verdict.recall_tolerance if spec else 0.02)
    objective = Objective.parse(rule or tuned.get("rule_name")
                                or (spec.verdict.rule if spec is not None else None), tolerance)
    metric = metric or "probe_recall"
    final: _FinalRung = tuned.get("final") or {}
    seed = spec.seed if spec is not None else 0
    pick = objective.pick(cells, templates=final.get("templates"),
                          sessions=final.get("sessions"), seed=seed)
    if pick.winner is None:
        raise ConfigError(f"{run_dir}: the rule {objective.rule} recommends no template "
                          f"({pick.reasons or 'no template produced a summary'})")
    winner = pick.winner
    templates = list(dict.fromkeys(cells["template"]))
    baseline = baseline or tuned.get("baseline") or (
        "default" if "default" in templates else templates[0])
    scored = cells[cells["session_id"].isin(final["sessions"])] if final.get("sessions") \
        else cells
    scores = variant_scores(scored, metric)
    if winner == baseline:
        interval = "the winner is the baseline: nothing beat it under the rule"
    else:
        interval = "; ".join(str(paired_comparison(scored, baseline, winner, on="template",
                                                   metric=m, seed=seed))
                             for m in (metric, "retained_tokens"))
    row = scores[scores["template"] == winner].iloc[0]
    params: JSONObject = {}
    if "template_params" in cells:
        raw = cells.loc[cells["template"] == winner, "template_params"].dropna()
        params = json.loads(raw.iloc[0]) if len(raw) else {}
    return Evidence(run=str(Path(run_dir).resolve()), variant=winner, rule=objective.describe(),
                    metric=metric, value=_number(row["recall"]),
                    retained_tokens=_number(row["retained_tokens"]),
                    parse_success_pct=_number(row["parse_success_pct"]), baseline=baseline,
                    interval=interval,
                    date=dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M UTC"), params=params,
                    rule_name=objective.rule, winner_name=tuned.get("winner_name"))


def _tune_json(run_dir: Path) -> _TuneRecord:
    """What the tune recorded in ``tune/tune.json`` (rule, baseline, final rung), or {}."""
    path = run_dir / TUNE_JSON
    if not path.is_file():
        return {}
    data: dict[str, JSONValue] = json.loads(path.read_text(encoding="utf-8"))
    spec = run_dir / "tune" / "spec.toml"
    if spec.is_file():
        from workbench.harness import Experiment  # the experiment layer: as in _resolve_variant

        table = Experiment.from_toml(spec).tune
        if table is not None and table.winner_name:
            data["winner_name"] = table.winner_name
    # written by the tune in this shape (tune/_search.py); a null key falls back to its default
    return cast(_TuneRecord, {k: v for k, v in data.items() if v is not None})


def stage_winner(evidence: Evidence, run_dir: str | Path) -> Path:
    """Write the winner's templates (evidence comment on top) to ``<run>/export/<name>/``."""
    from workbench.harness import Results  # pandas only for --from-run (see pick_from_run)

    # the experiment layer, as in `_export._resolve_variant`
    from workbench.harness.experiment._variants import VARIANT_FILE, load_variant

    results = Results.load(run_dir)
    variant = load_variant(evidence.variant, results.spec)
    name = _SLUG.sub("-", evidence.variant).strip("-") or "winner"
    folder = Path(run_dir) / EXPORT_DIR / name
    folder.mkdir(parents=True, exist_ok=True)
    baked = variant.templates.baked()  # the parameter values written in, for Goose
    evidence.template_hash = template_hash(baked.compaction, baked.summary)
    comment = evidence_comment(evidence)
    write_atomic(folder / COMPACTION_TEMPLATE, comment + baked.compaction)
    write_atomic(folder / COMPACTION_SUMMARY_TEMPLATE, comment + baked.summary)
    options = "".join(f"{k} = {json.dumps(v)}\n" for k, v in variant.options.items())
    write_atomic(folder / VARIANT_FILE, options)
    return folder


def write_variant(evidence: Evidence, staged: Path, prompts_dir: str | Path, name: str, *,
                  overwrite: bool = False) -> Path:
    """Copy a staged winner to ``<prompts_dir>/<name>/`` as a variant folder, with a README
    stating its evidence.

    Raises:
        ConfigError: `name` is not a plain folder name, or the folder exists and `overwrite`
            is false.
    """
    # the tune's output module loads pandas and matplotlib; only --as-variant needs it
    from workbench.tune._output import fresh_variant_folder

    target = fresh_variant_folder(prompts_dir, name, overwrite=overwrite,
                                  another="another --as-variant NAME")
    shutil.copytree(staged, target)
    body = "\n".join(f"- {line}" for line in evidence.lines())
    write_atomic(target / "README.md",
                 f"# {name}\n\nExported by `workbench export --from-run` from {evidence.run}.\n\n"
                 f"{body}\n")
    return target


def export_from_run(run_dir: str | Path, rule: str | None = None, *, metric: str | None = None,
                    baseline: str | None = None, dest: Path | None = None,
                    dry_run: bool = False) -> tuple[ExportResult, Evidence]:
    """Pick a run's winner, stage it with its evidence and export it to Goose.

    Returns:
        ``(ExportResult, Evidence)``; a real export is added to the destination's history.
    """
    evidence = pick_from_run(run_dir, rule, metric=metric, baseline=baseline)
    folder = stage_winner(evidence, run_dir)
    result = export_template(folder, dest=dest, dry_run=dry_run,
                             history_hash=evidence.template_hash)
    return result, evidence
