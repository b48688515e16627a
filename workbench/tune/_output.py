"""What a tune leaves behind, all in its run folder: the front (CSV and plot), ``tune.json``,
and the winner's folder.

Under ``<run>/tune/``: ``front.csv`` (every scored point, ``front`` marking the Pareto front),
``front.png``, ``tune.json`` (winner, rule, comparisons with the baseline, the final rung's
points and sessions, rungs, calls). `write_winner` writes the winner as an ordinary variant
folder (``<run>/tune/winner/<name>/``): its two templates with the parameter values baked in
(so Goose, which knows nothing of parameters, renders it the same), the searched variant's
options, and a README stating the parameters and the evidence. Nothing is written outside the
run folder: ``workbench export --from-run RUN`` installs the winner (to Goose, or with
``--as-variant`` as ``prompts/<name>/``).
"""

from __future__ import annotations

import io
import json
import shutil
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Protocol, TypedDict

import pandas as pd
from matplotlib.figure import Figure

from workbench._storage import write_atomic
from workbench.compaction._templates import COMPACTION_SUMMARY_TEMPLATE, COMPACTION_TEMPLATE
from workbench.errors import ConfigError
from workbench.harness.experiment._params import Param
from workbench.harness.experiment._spec import Experiment
from workbench.harness.experiment._variants import VARIANT_FILE, load_variant
from workbench.tune._objective import Objective
from workbench.tune._proposer import ProposalRecord

FRONT_CSV = "front.csv"
FRONT_PNG = "front.png"
TUNE_JSON = "tune.json"


class Interval(TypedDict):
    """The paired comparison of the winner with the baseline on probe recall."""

    mean_diff: float | None
    ci_low: float | None
    ci_high: float | None
    n_pairs: int
    winner: str | None
    text: str


class FinalRung(TypedDict):
    """The points and sessions the winner was picked over."""

    templates: list[str]
    sessions: list[str]


class TuneEvidence(TypedDict):
    """The facts a tune states about its winner (``tune.json``, ``evidence.json``, README)."""

    run: str
    variant: str
    winner: str
    params: Mapping[str, object]
    rule: str
    rule_name: str
    recall_tolerance: float
    metric: str
    recall: float | None
    retained_tokens: float | None
    parse_success_pct: float | None
    baseline: str
    interval: Interval | None
    comparisons: dict[str, str]
    nothing_beats_baseline: bool
    final: FinalRung
    status: str
    calls_made: int
    calls_shared: int
    date: str


class TunedResult(Protocol):
    """What the outputs read of a `TuneResult` (which imports this module, so it is named by
    its shape here)."""

    winner_folder: Path | None

    @property
    def run_dir(self) -> Path: ...
    @property
    def scores(self) -> pd.DataFrame: ...
    @property
    def winner(self) -> str: ...
    @property
    def baseline(self) -> str: ...
    @property
    def variant(self) -> str: ...
    @property
    def objective(self) -> Objective: ...
    @property
    def experiment(self) -> Experiment | None: ...
    @property
    def rungs(self) -> Sequence[Mapping[str, object]]: ...
    @property
    def proposals(self) -> Sequence[ProposalRecord]: ...
    def evidence(self) -> TuneEvidence: ...


def plot_front(scores: pd.DataFrame, winner: str | None = None, baseline: str | None = None,
               metric: str = "probe_recall") -> Figure:
    """Retained tokens against recall, one dot per point; the Pareto front joined by a line.

    Args:
        scores: Rows with ``template``, ``retained_tokens``, ``recall`` and ``front``.
        winner: Label to mark with a star.
        baseline: Label to mark with a square.
        metric: The recall column's name, for the axis label.
    """
    fig = Figure(figsize=(6.5, 4.2))
    ax = fig.add_subplot()
    ax.scatter(scores["retained_tokens"], scores["recall"], s=14, color="0.6",
               label=f"points ({len(scores)})")
    front = scores[scores["front"]].sort_values("retained_tokens")
    ax.plot(front["retained_tokens"], front["recall"], "-o", color="tab:blue", markersize=4,
            label="Pareto front")
    for label, marker, color, name in ((baseline, "s", "tab:orange", "baseline"),
                                       (winner, "*", "tab:red", "winner")):
        row = scores[scores["template"] == label]
        if label is not None and not row.empty:
            ax.scatter(row["retained_tokens"], row["recall"], marker=marker, s=140, color=color,
                       zorder=3, label=f"{name}: {label}")
    ax.set_xlabel("mean retained tokens (lower is better)")
    ax.set_ylabel(f"mean {metric} (higher is better)")
    ax.legend(fontsize=7, loc="lower right")
    ax.grid(alpha=0.3)
    fig.tight_layout()
    return fig


def save_outputs(result: TunedResult) -> Path:
    """Write ``front.csv``, ``front.png`` and ``tune.json`` under ``<run>/tune/``; returns it."""
    folder = Path(result.run_dir) / "tune"
    folder.mkdir(parents=True, exist_ok=True)
    write_atomic(folder / FRONT_CSV, result.scores.to_csv(index=False))
    fig = plot_front(result.scores, result.winner, result.baseline, result.objective.metric)
    png = io.BytesIO()
    fig.savefig(png, format="png", dpi=110)
    write_atomic(folder / FRONT_PNG, png.getvalue())
    data = result.evidence() | {"rungs": result.rungs, "proposals": result.proposals}
    write_atomic(folder / TUNE_JSON, json.dumps(data, indent=2, ensure_ascii=False, default=str))
    return folder


def _readme(name: str, evidence: TuneEvidence, declared: dict[str, Param]) -> str:
    lines = [f"# {name}", "",
             f"Written by `workbench tune` from variant `{evidence['variant']}`: the point "
             f"`{evidence['winner']}`, chosen by the rule below. Its parameter values are baked "
             "into the templates as `{% set %}` lines, so the folder renders the same anywhere "
             "(Goose included).", "", "## Parameters", "", "| parameter | value | default | what it changes |",
             "|---|---|---|---|"]
    for key, value in evidence["params"].items():
        param = declared.get(key)
        default = json.dumps(param.default) if param is not None else ""
        about = param.description if param is not None else ""
        lines.append(f"| `{key}` | `{json.dumps(value)}` | `{default}` | {about} |")
    lines += ["", "## Evidence", "",
              f"- run: `{evidence['run']}` ({evidence['status']}; model calls made "
              f"{evidence['calls_made']}, shared {evidence['calls_shared']})",
              f"- rule: {evidence['rule']}",
              f"- {evidence['metric']}: {_fmt(evidence['recall'])}; retained tokens: "
              f"{_fmt(evidence['retained_tokens'])}; parse success: "
              f"{_fmt(evidence['parse_success_pct'])} %"]
    interval = evidence.get("interval")
    if interval is None:
        lines.append(f"- against the baseline `{evidence['baseline']}`: the winner is the "
                     "baseline itself")
    else:
        lines.append(f"- against the baseline `{evidence['baseline']}` (session-level paired "
                     f"comparison): {interval['text']}")
    lines += [f"- date: {evidence['date']}", ""]
    return "\n".join(lines)


def _fmt(value: float | None) -> str:
    return "n/a" if value is None else f"{value:,.4g}"


def fresh_variant_folder(prompts_dir: str | Path, name: str, *, overwrite: bool = False,
                         another: str = "another name") -> Path:
    """``<prompts_dir>/<name>``, checked to be a plain new folder name (an existing folder is
    removed first when `overwrite`); not created.

    Raises:
        ConfigError: `name` is not a plain folder name, or the folder exists and `overwrite`
            is false (the message suggests `another`).
    """
    if not name or "/" in name or "\\" in name or name.startswith(".") or "{" in name:
        raise ConfigError(f"variant name {name!r}: use a plain folder name such as lean-tuned")
    target = Path(prompts_dir) / name
    if target.exists():
        if not overwrite:
            raise ConfigError(f"{target} exists; pass {another} or --overwrite")
        shutil.rmtree(target)
    return target


def write_winner(result: TunedResult, prompts_dir: str | Path, name: str | None = None, *,
                 overwrite: bool = False) -> Path:
    """Write the tune's winner as ``<prompts_dir>/<name>/`` (see the module docstring).

    Args:
        result: A `TuneResult`.
        prompts_dir: The folder of variant folders (the project's ``prompts/``).
        name: The new folder's name; default the spec's ``winner_name`` or ``<variant>-tuned``.
        overwrite: Replace an existing folder of that name.

    Returns:
        The folder written.

    Raises:
        ConfigError: the folder exists and `overwrite` is false, or the name is not a plain
            name.
    """
    name = name or f"{result.variant}-tuned"
    target = fresh_variant_folder(prompts_dir, name, overwrite=overwrite)
    variant = load_variant(result.winner, getattr(result, "experiment", None))
    baked = variant.templates.baked()  # the folder has no [params]: the values go in the text
    target.mkdir(parents=True)
    write_atomic(target / COMPACTION_TEMPLATE, baked.compaction)
    write_atomic(target / COMPACTION_SUMMARY_TEMPLATE, baked.summary)
    evidence = result.evidence()
    options = [f"{k} = {json.dumps(v)}" for k, v in variant.options.items()]
    description = f"Tuned from {result.variant}: {result.winner}"
    write_atomic(target / VARIANT_FILE, "\n".join([f"description = {json.dumps(description)}",
                                                    *options]) + "\n")
    write_atomic(target / "README.md", _readme(name, evidence, variant.declared))
    write_atomic(target / "evidence.json", json.dumps(evidence, indent=2, default=str))
    result.winner_folder = target
    return target
