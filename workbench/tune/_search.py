"""`tune`: search a parametrised variant's points for the best template under a stated objective.

Parameters split by what they cost. A parameter only the summary template reads is *render-only*:
every value re-renders the JSON the model already returned, so the whole grid of render-only
values shares one model call per (session, prompt, model, window, repeat) through `SharedCalls`.
A parameter the compaction prompt reads changes the request, so each distinct prompt (a *prompt
group*) costs calls; those groups go through successive halving: every group runs on the first
``min_sessions`` sessions, the best 1/eta (by the objective, each group scored by its best
render-only point) go on to eta times as many sessions, until one group is left, which then runs
on every session. All rungs write into one run folder, so the experiment's budget (summed over the
folder's cells) stops the search as it would stop a run; the winner is then picked from the last
rung that finished.

The winner is picked by the one winner rule the verdict and ``workbench export --from-run``
use (`Objective`: ``min-retained-safe`` unless ``[tune] objective`` or ``[verdict] rule`` names
another) among the points scored on the final rung, and compared with the baseline (the
variant at its defaults unless the spec names one) on recall, retained tokens and failures by
the harness's session-level paired comparison (`paired_comparison`). When the rule picks the
baseline, nothing beat it, and the tune says so. A tune writes only into its run folder: the
scored points (``tune/front.csv``), ``tune/tune.json`` (the rule, the winner, the final rung's
points and sessions, so an export recomputes the same winner) and the winner as a variant
folder (``tune/winner/<name>/``); ``workbench export --from-run`` installs it.
"""

from __future__ import annotations

import datetime as dt
import json
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import SupportsFloat, TypedDict, Unpack

import pandas as pd

from workbench._memo import run_memo
from workbench._sync import run_sync
from workbench.compaction import CompactionModel
from workbench.compaction._reuse import expect_points
from workbench.errors import ConfigError
from workbench.harness.experiment._cells import load_experiment_sessions
from workbench.harness.experiment._params import expand_points, point_label, template_variables
from workbench.harness.experiment._spec import Experiment
from workbench.harness.experiment._subsets import limit_sessions
from workbench.harness.experiment._variants import load_variant
from workbench.harness.results._paired import PairedResult, paired_comparison
from workbench.harness.results._results import Results
from workbench.harness.run._runner import (
    ModelFactory,
    default_out,
    run_experiment_async,
    write_spec,
)
from workbench.models._shared import SharedCalls
from workbench.tune._groups import PromptGroup
from workbench.tune._objective import RECALL, Objective, pareto_mask, variant_scores
from workbench.tune._output import TuneEvidence, save_outputs, write_winner
from workbench.tune._proposer import ProposalRecord, add_proposals

TUNE_DIR = "tune"
WINNER_DIR = "winner"
"""``<run>/tune/winner/<name>/``: the winner as a variant folder (its parameters baked in)."""
COMPARED = ("probe_recall", "retained_tokens", "failed")
"""The metrics the winner is compared with the baseline on."""


class Rung(TypedDict):
    """One rung of successive halving, as `TuneResult.rungs` and ``tune.json`` list it."""

    sessions: int
    groups: int
    points: int
    status: str
    kept: int
    dropped: list[str]


class TuneOptions(TypedDict, total=False):
    """The keyword arguments `tune` passes on to `tune_async`."""

    model_factory: ModelFactory | None
    share_calls: bool
    progress: bool
    concurrency: int | None
    proposer: CompactionModel | None


@dataclass
class TuneResult:
    """What a tune found.

    Attributes:
        run_dir: The run folder holding every rung's cells.
        objective: The rule that picked the winner.
        scores: One row per point of the last finished rung (``template``, ``cells``,
            ``retained_tokens``, ``recall``, ``parse_success_pct``, ``calls_made``,
            ``calls_shared``, ``front``, ``params``).
        winner: The winning label (the baseline when nothing beat it).
        winner_params: Its full parameter values.
        baseline: The label it was compared with.
        comparison: The paired comparison (winner vs baseline) on probe recall, or None when
            the winner is the baseline.
        rungs: One dict per rung: ``sessions``, ``groups``, ``points``, ``kept``, ``status``
            and ``dropped`` (the points successive halving left behind after it).
        status: ``finished`` or ``budget_reached``.
        calls_made: Model calls the tune's cells sent (every rung, every point: the sum of the
            stored cells' ``calls_made``).
        calls_shared: Calls its cells answered from an identical earlier or in-flight call.
        variant: The searched variant.
        proposals: Prompts written by the proposer (with provenance), if any.
        winner_folder: Where the winner was written, if it was.
        experiment: The experiment the tune ran.
        calls_by: `calls_made` split: ``table`` (by the points of `scores`, the sum of its
            ``calls_made`` column), ``dropped`` (by points successive halving dropped) and
            ``other`` (cells of a rung the budget stopped before it was scored).
        comparisons: Metric -> the paired comparison of the winner with the baseline
            (`COMPARED`), empty when the winner is the baseline.
        final_sessions: The sessions of the final rung (the winner was picked over them).
        reasons: The verdict's recommendation for the winner, in words.
        tied: Points the rule could not tell from the winner.
    """

    run_dir: Path
    objective: Objective
    scores: pd.DataFrame
    winner: str
    winner_params: Mapping[str, object]
    baseline: str
    comparison: PairedResult | None
    rungs: list[Rung]
    status: str
    calls_made: int
    calls_shared: int
    variant: str = ""
    proposals: list[ProposalRecord] = field(default_factory=list)
    winner_folder: Path | None = None
    experiment: Experiment | None = None
    calls_by: dict[str, int] = field(default_factory=dict)
    comparisons: dict[str, PairedResult] = field(default_factory=dict)
    final_sessions: list[str] = field(default_factory=list)
    reasons: str = ""
    tied: list[str] = field(default_factory=list)

    @property
    def front(self) -> pd.DataFrame:
        """The Pareto front rows of `scores` (retained lower, recall and parse higher)."""
        return self.scores[self.scores["front"]].reset_index(drop=True)

    def evidence(self) -> TuneEvidence:
        """The facts a README or an export comment states: run, rule, metric, interval, date."""
        row = self.scores[self.scores["template"] == self.winner].iloc[0]
        comp = self.comparison
        return {
            "run": str(self.run_dir), "variant": self.variant, "winner": self.winner,
            "params": self.winner_params, "rule": self.objective.describe(),
            "rule_name": self.objective.rule,
            "recall_tolerance": self.objective.recall_tolerance,
            "metric": self.objective.metric, "recall": _float(row["recall"]),
            "retained_tokens": _float(row["retained_tokens"]),
            "parse_success_pct": _float(row["parse_success_pct"]),
            "baseline": self.baseline,
            "interval": None if comp is None else {
                "mean_diff": _float(comp.mean_diff), "ci_low": _float(comp.ci_low),
                "ci_high": _float(comp.ci_high), "n_pairs": int(comp.n_pairs),
                "winner": comp.winner, "text": str(comp)},
            "comparisons": {m: str(c) for m, c in self.comparisons.items()},
            "nothing_beats_baseline": self.winner_is_baseline,
            "final": {"templates": list(self.scores["template"]),
                      "sessions": list(self.final_sessions)},
            "status": self.status, "calls_made": self.calls_made,
            "calls_shared": self.calls_shared,
            "date": dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M UTC"),
        }

    @property
    def winner_is_baseline(self) -> bool:
        """The search found nothing better than the baseline (nothing new to write)."""
        return self.winner == self.baseline

    def lines(self) -> list[str]:
        """What ``workbench tune`` prints after the front table: the points successive
        halving dropped at each rung, the winner, its rule and interval, and the calls (the
        table's ``calls_made`` column plus the dropped points' calls make the total)."""
        out = []
        for number, rung in enumerate(self.rungs, 1):
            if rung.get("dropped"):
                names = [f"{label} (still run as the baseline)" if label == self.baseline
                         else label for label in rung["dropped"]]
                out.append(f"rung {number} ({rung['sessions']} sessions, {rung['groups']} "
                           f"prompt groups): successive halving dropped "
                           f"{len(names)} points: {', '.join(names)}")
        out.append(f"rule: {self.objective.describe()}")
        if self.winner_is_baseline:
            out.append(f"winner: {self.winner} (the baseline): nothing beats the baseline "
                       f"{self.baseline} under the rule {self.objective.rule}; keep it as it is")
        else:
            out.append(f"winner: {self.winner}")
            if self.tied:
                out.append(f"  tied with it under the rule: {', '.join(self.tied)}")
            out.append(f"winner against the baseline {self.baseline} (paired by session, "
                       f"{len(self.final_sessions)} sessions of the final rung):")
            out += [f"  {comparison}" for comparison in self.comparisons.values()]
        if self.reasons:
            out.append(f"  {self.reasons}")
        parts = [f"{self.calls_by.get('table', self.calls_made)} by the points above"]
        if self.calls_by.get("dropped"):
            parts.append(f"{self.calls_by['dropped']} by the points successive halving dropped")
        if self.calls_by.get("other"):
            parts.append(f"{self.calls_by['other']} in the rung the budget stopped")
        out.append(f"model calls made: {self.calls_made} ({', '.join(parts)}), shared: "
                   f"{self.calls_shared}; status {self.status}")
        return out


def _float(value: SupportsFloat | str) -> float | None:
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return None if math.isnan(number) else number


def _split_points(experiment: Experiment
                  ) -> tuple[str, list[PromptGroup], dict[str, Mapping[str, object]], str]:
    tune = experiment.tune
    assert tune is not None
    base = load_variant(tune.variant, experiment)
    if not base.declared:
        raise ConfigError(f"tune: variant {tune.variant!r} declares no [params] in its "
                          "variant.toml")
    assert base.raw_templates is not None  # declared params come from a folder's sources
    prompt_vars = template_variables(base.raw_templates.compaction)
    points = expand_points(base.declared, tune.params, sample=tune.sample, seed=experiment.seed,
                           where="tune.params")
    groups: dict[str, PromptGroup] = {}
    params: dict[str, Mapping[str, object]] = {base.name: dict(base.params)}
    for point in points:
        label = point_label(tune.variant, point, base.declared)
        params[label] = point
        key = json.dumps({k: v for k, v in point.items() if k in prompt_vars}, sort_keys=True)
        groups.setdefault(key, PromptGroup(key, [])).labels.append(label)
    return base.name, list(groups.values()), params, base.raw_templates.summary


def _ranked_groups(groups: list[PromptGroup], ranked: list[str]) -> list[PromptGroup]:
    position = {label: i for i, label in enumerate(ranked)}

    def best(group: PromptGroup) -> float:
        return min((position.get(label, math.inf) for label in group.labels), default=math.inf)

    return sorted(groups, key=best)


async def tune_async(spec: Experiment | str | Path, out: str | Path | None = None, *,
                     model_factory: ModelFactory | None = None, share_calls: bool = True,
                     progress: bool = False, concurrency: int | None = None,
                     proposer: CompactionModel | None = None) -> TuneResult:
    """Run the search the spec's ``[tune]`` table describes (see the module docstring).

    Args:
        spec: An `Experiment` with a ``tune`` table, or its TOML path.
        out: The run folder; default ``runs/<name>``. Re-running resumes finished cells.
        model_factory: Builds each cell's model instead of ``load_model`` (tests).
        share_calls: Share identical calls (False: every cell calls; for comparisons).
        progress: Show progress bars.
        concurrency: Overrides the experiment's concurrency.
        proposer: A `CompactionModel` that proposes prompts (default: the ``[tune] proposer``
            model string, when set).

    Returns:
        The `TuneResult`; nothing is written outside the run folder (see `write_winner`).

    Raises:
        ConfigError: no ``[tune]`` table, a variant without parameters, a bad objective, or
            no variant satisfying the objective's constraints.
    """
    experiment = spec if isinstance(spec, Experiment) else Experiment.from_toml(spec)
    tune = experiment.tune
    if tune is None:
        raise ConfigError("tune: the spec has no [tune] table; add one naming the variant "
                          "to search, e.g. [tune] variant = \"top3-intent\"")
    objective = Objective.parse(tune.objective or experiment.verdict.rule,
                                experiment.verdict.recall_tolerance)
    folder = Path(out) if out is not None else default_out(experiment)
    (folder / TUNE_DIR).mkdir(parents=True, exist_ok=True)
    write_spec(experiment, folder / TUNE_DIR)
    base_label, groups, params, summary = _split_points(experiment)
    baseline = tune.baseline or base_label
    sessions = [s.id for s in limit_sessions(experiment, load_experiment_sessions(experiment))]
    shared = SharedCalls(enabled=share_calls)
    proposals: list[ProposalRecord] = []
    rung_experiment = experiment.model_copy(update={"tune": None})

    async def run_rung(labels: list[str], n_sessions: int) -> tuple[Results, str]:
        sub = rung_experiment.model_copy(update={"templates": list(dict.fromkeys(
            [baseline, *labels]))})
        with run_memo():  # the rung's, which its run shares: a reply's summaries at once
            running = set(sub.templates)  # a prompt group's points get one reply per session
            expect_points(summary, [[params[label] for label in dict.fromkeys([baseline, *g.labels])
                                     if label in running and label in params] for g in groups])
            results = await run_experiment_async(
                sub, folder, model_factory=model_factory, progress=progress,
                concurrency=concurrency, share_calls=shared,
                only_sessions=sessions[:n_sessions], check_folder=False)
        return results, results.status or "finished"

    if tune.proposer is not None or proposer is not None:
        first, status = await run_rung([baseline], min(tune.min_sessions, len(sessions)))
        proposals = await add_proposals(experiment, folder / TUNE_DIR, first, baseline,
                                        proposer, groups, params)

    n = len(sessions) if len(groups) <= 1 else min(tune.min_sessions, len(sessions))
    alive = groups
    rungs: list[Rung] = []
    last_scores: pd.DataFrame | None = None
    scored_n = n
    status = "finished"
    while True:
        labels = [label for g in alive for label in g.labels]
        results, status = await run_rung(labels, n)
        scores = variant_scores(results.cells, RECALL, [*labels, baseline], sessions[:n])
        rung: Rung = {"sessions": n, "groups": len(alive), "points": len(labels),
                                "status": status, "kept": 0, "dropped": []}
        rungs.append(rung)
        if status == "budget_reached":
            if last_scores is None:  # not one rung finished: rank the points that completed it
                full = scores["cells"].eq(scores["cells"].max()) if not scores.empty else []
                last_scores, scored_n = scores[full], n
            break
        last_scores, scored_n = scores, n
        if n >= len(sessions):  # every surviving group has seen every session
            rung["kept"] = len(alive)
            break
        ranking = objective.pick(results.cells, templates=[*labels, baseline],
                                 sessions=sessions[:n], seed=experiment.seed).ranking
        ranked = _ranked_groups(alive, ranking)
        alive = ranked[:max(1, math.ceil(len(alive) / tune.eta))]
        rung["kept"] = len(alive)
        rung["dropped"] = [label for g in ranked[len(alive):] for label in g.labels]
        n = len(sessions) if len(alive) == 1 else min(n * tune.eta, len(sessions))

    final = last_scores.copy()
    if final.empty:
        raise ConfigError("tune: no point finished a rung (budget reached at once?); raise "
                          "[budget] in the spec")
    final["front"] = pareto_mask(final)
    final["params"] = [json.dumps(params.get(t, {}), sort_keys=True) for t in final["template"]]
    stored = results.cells  # the last rung's load of the store: every rung's cells
    final_sessions = sessions[:scored_n]
    pick = objective.pick(stored, templates=list(final["template"]), sessions=final_sessions,
                          seed=experiment.seed)
    if pick.winner is None:
        raise ConfigError(f"tune: the rule {objective.rule} can recommend no point of the final "
                          f"rung ({pick.reasons or 'no point produced a summary'})")
    winner = pick.winner
    comparisons: dict[str, PairedResult] = {}
    if winner != baseline:
        # the two compared templates' cells only: a pair never reads another point's
        cells = stored[stored["session_id"].isin(final_sessions)
                       & stored["template"].isin([baseline, winner])]
        for metric in COMPARED:
            comparisons[metric] = paired_comparison(cells, baseline, winner, on="template",
                                                    metric=metric, seed=experiment.seed)
    dropped = {label for rung in rungs for label in rung["dropped"]} - set(final["template"])
    made = _total(stored, "calls_made")
    by_table = int(final["calls_made"].sum())
    by_dropped = _total(stored[stored["template"].isin(dropped)], "calls_made")
    calls = {"table": by_table, "dropped": by_dropped, "other": made - by_table - by_dropped}
    result = TuneResult(folder, objective, final.reset_index(drop=True), winner,
                        params.get(winner, {}), baseline, comparisons.get(RECALL), rungs, status,
                        made, _total(stored, "calls_shared"), tune.variant, proposals,
                        experiment=experiment, calls_by=calls, comparisons=comparisons,
                        final_sessions=list(final_sessions), reasons=pick.reasons,
                        tied=list(pick.tied))
    _save(result)
    return result


def _total(cells: pd.DataFrame, column: str) -> int:
    return int(pd.to_numeric(cells[column], errors="coerce").fillna(0).sum()) \
        if column in cells else 0


def _save(result: TuneResult) -> None:
    save_outputs(result)
    tune = result.experiment.tune if result.experiment is not None else None
    name = (tune.winner_name if tune is not None else None) or f"{result.variant}-tuned"
    write_winner(result, Path(result.run_dir) / TUNE_DIR / WINNER_DIR, name, overwrite=True)


def tune(spec: Experiment | str | Path, out: str | Path | None = None,
         **kwargs: Unpack[TuneOptions]) -> TuneResult:
    """Synchronous `tune_async`; works inside a running event loop (Jupyter)."""
    return run_sync(tune_async(spec, out, **kwargs))
