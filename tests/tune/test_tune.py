"""The tuner: shared calls make a render-only grid cost one variant; halving respects the budget."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from workbench.compaction import Usage, _sandbox
from workbench.harness import Experiment, run_experiment
from workbench.models import ExtractiveModel
from workbench.testing import ScriptedModel
from workbench.tune import tune, write_winner

REPLY = ('<analysis>ok</analysis>\n```json\n{"user_intent": ["one", "two", "three", "four"], '
         '"technical_concepts": ["shell"], "current_work": "editing"}\n```')


SIX = ["gen-005k-s1", "gen-012k-s2", "gen-025k-s3", "gen-050k-s4", "gen-090k-s5", "gen-150k-s6"]
"""The six version-2 shipped sessions (5k-150k): the population these tests count on."""


def spec(**tune_table: Any) -> Experiment:
    data: dict[str, Any] = {"name": "t", "sessions": SIX, "models": ["extractive"],
                            "concurrency": 2}
    budget = tune_table.pop("budget", None)
    if budget:
        data["budget"] = budget
    data["tune"] = tune_table
    return Experiment.from_dict(data)


def test_a_20_variant_render_only_tune_makes_as_many_model_calls_as_one_variant(
        tmp_path: Path) -> None:
    one = ScriptedModel([REPLY])
    run_experiment(Experiment.from_dict({"name": "one", "sessions": SIX,
                                         "models": ["extractive"], "templates": ["top3-intent"]}),
                   tmp_path / "one", model_factory=lambda cell: one, progress=False)
    counting = ScriptedModel([REPLY])

    result = tune(spec(variant="top3-intent"), tmp_path / "tune",
                  model_factory=lambda cell: counting)

    assert len(result.scores) == 20
    assert one.call_count == 6  # one call per session
    assert counting.call_count == one.call_count
    assert (result.calls_made, result.calls_shared) == (6, 19 * 6)
    db = sqlite3.connect(tmp_path / "tune" / "results.sqlite")
    assert db.execute("SELECT SUM(calls_made), SUM(calls_shared) FROM cells").fetchone() == (6, 114)
    billed = {r[0] for r in db.execute("SELECT attempt_id FROM attempts WHERE shared = 0")}
    refs = {r[0] for r in db.execute("SELECT shared_from FROM attempts WHERE shared = 1")}
    assert len(billed) == 6 and refs == billed
    # intent_limit only re-renders: the limit shows in the summary, the prompt never changed
    low = result.scores.set_index("template")
    assert low.loc["top3-intent{intent_limit=1}", "retained_tokens"] < \
        low.loc["top3-intent{intent_limit=4}", "retained_tokens"]


def test_the_winner_folder_states_its_parameters_and_evidence(tmp_path: Path) -> None:
    result = tune(spec(variant="top3-intent", params={"intent_limit": [1, 3]},
                       objective="min-retained"), tmp_path / "run",
                  model_factory=lambda cell: ScriptedModel([REPLY]))

    # the tune writes its winner into its own run folder only
    folder = result.winner_folder
    assert folder == tmp_path / "run" / "tune" / "winner" / "top3-intent-tuned"
    assert sorted(p.name for p in (tmp_path / "run").iterdir()) == [
        "export", "results.sqlite", "spec.toml", "summaries", "tune"] or not (
        tmp_path / "run" / "export").exists()
    assert result.winner == "top3-intent{intent_limit=1}"
    readme = (folder / "README.md").read_text()
    assert "| `intent_limit` | `1` | `3` |" in readme
    assert ("- rule: min-retained: the fewest retained tokens among the points whose mean probe "
            "recall is within 2.0 pts of the best") in readme
    assert "against the baseline `top3-intent` (session-level paired comparison)" in readme
    summary = (folder / "compaction_summary.md").read_text()
    assert summary.startswith("{% set intent_limit = 1 %}\n{% set show_concepts = true %}\n")
    evidence = json.loads((folder / "evidence.json").read_text())
    assert evidence["params"] == {"intent_limit": 1, "show_concepts": True}
    assert evidence["interval"]["n_pairs"] == 6
    assert (tmp_path / "run" / "tune" / "front.png").stat().st_size > 0
    write_winner(result, tmp_path / "prompts", "lean-top3")
    with pytest.raises(Exception, match="exists; pass another name or --overwrite"):
        write_winner(result, tmp_path / "prompts", "lean-top3")


def test_successive_halving_over_prompt_groups_keeps_the_best_and_grows_the_sessions(
        tmp_path: Path) -> None:
    calls: list[str] = []
    model = ExtractiveModel()

    class Counting:
        async def complete(self, system: str, messages: list) -> Any:  # type: ignore[type-arg]
            calls.append(system)
            return await model.complete(system, messages)

    result = tune(spec(variant="lean-facts", params={"list_cap": "all", "drop_fields": "all"},
                       objective="min-retained", min_sessions=1, eta=2), tmp_path / "run",
                  model_factory=lambda cell: Counting())

    assert [(r["sessions"], r["groups"], r["kept"]) for r in result.rungs] == [
        (1, 16, 8), (2, 8, 4), (4, 4, 2), (6, 2, 2)]
    # What each rung dropped is named: one point per prompt group here, never a survivor.
    assert [len(r["dropped"]) for r in result.rungs] == [8, 4, 2, 0]
    dropped = [label for r in result.rungs for label in r["dropped"]]
    assert len(set(dropped)) == 14 and not set(dropped) & set(result.scores["template"]) - {
        result.baseline}
    said = [line for line in result.lines() if line.startswith("rung ")]
    assert said[0].startswith("rung 1 (1 sessions, 16 prompt groups): successive halving "
                              "dropped 8 points: ")
    assert len(said) == 3 and all(label in " ".join(said) for label in dropped)
    # Later rungs pay only their new sessions; the baseline (lean-facts at its defaults) is in
    # a surviving prompt group here, so it costs nothing beside the survivors.
    survivors = 16 * 1 + 8 * 1 + 4 * 2 + 2 * 2
    assert result.baseline == "lean-facts" and result.baseline not in dropped
    assert len(calls) == survivors
    assert result.comparison.n_pairs == 6
    # min-retained: the fewest tokens among the points within 2 recall points of the best
    assert result.winner == "lean-facts{drop_fields=[technical_concepts,user_messages,problem_solving]}"
    assert set(result.comparisons) == {"probe_recall", "retained_tokens", "failed"}


def test_successive_halving_stops_at_the_budget(tmp_path: Path) -> None:
    scripted = ScriptedModel([REPLY], usage=Usage(model="scripted", input_tokens=10,
                                                  output_tokens=5, cost=1.0))
    experiment = spec(variant="lean-facts", params={"list_cap": "all", "drop_fields": "all"},
                      budget={"max_cost": 20.0})
    experiment = experiment.model_copy(update={"concurrency": 1})

    result = tune(experiment, tmp_path / "run", model_factory=lambda cell: scripted)

    db = sqlite3.connect(tmp_path / "run" / "results.sqlite")
    spent = db.execute("SELECT SUM(cost) FROM cells").fetchone()[0]
    assert scripted.call_count == 20 and spent == 20.0
    assert result.status == "budget_reached" and result.rungs[-1]["status"] == "budget_reached"
    assert [(r["sessions"], r["groups"]) for r in result.rungs] == [(1, 16), (2, 8)]
    assert result.winner in set(result.scores["template"]) and len(result.scores) == 16


def test_a_render_only_tune_renders_a_replys_summaries_for_every_point_in_one_request(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    sizes: list[int] = []
    real = _sandbox.render_each

    async def counted(source: str, context: Any, each: list[Any], *rest: Any) -> int:
        sizes.append(len(each))
        return await real(source, context, each, *rest)

    monkeypatch.setattr(_sandbox, "render_each", counted)
    result = tune(spec(variant="top3-intent"), tmp_path / "tune",
                  model_factory=lambda cell: ScriptedModel([REPLY]))
    alone = ScriptedModel([REPLY])
    point = "top3-intent{intent_limit=1}"
    run_experiment(Experiment.from_dict({"name": "one", "sessions": SIX[:1],
                                         "models": ["extractive"], "templates": [point]}),
                   tmp_path / "one", model_factory=lambda cell: alone, progress=False)

    assert sizes == [20]  # one reply (every session's), its 20 points' summaries at once
    assert len(result.scores) == 20
    db = sqlite3.connect(tmp_path / "tune" / "results.sqlite")
    tuned = db.execute("SELECT summary_path FROM cells WHERE template = ? AND session_id = ?",
                       (point, SIX[0])).fetchone()[0]
    one = sqlite3.connect(tmp_path / "one" / "results.sqlite").execute(
        "SELECT summary_path FROM cells").fetchone()[0]
    assert (tmp_path / "tune" / tuned).read_text() == (tmp_path / "one" / one).read_text()
