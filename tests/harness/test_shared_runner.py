"""The runner shares calls: variants differing only in the summary template, and windows the
prompt fits, cost one call per session; the table shows calls made and shared."""

from __future__ import annotations

from pathlib import Path

from workbench.compaction import Usage
from workbench.harness import Experiment, run_experiment
from workbench.testing import ScriptedModel

REPLY = ('<analysis>ok</analysis>\n```json\n{"user_intent": ["a", "b", "c", "d"], '
         '"technical_concepts": ["shell"]}\n```')
USAGE = Usage(model="scripted", input_tokens=1000, output_tokens=100, cost=0.5)


def experiment(**over: object) -> Experiment:
    data = {"name": "s", "sessions": ["gen-005k-s1", "gen-012k-s2"], "models": ["extractive"],
            "templates": ["default", "top3-intent"], "windows": ["32k", "none"]}
    data.update(over)
    return Experiment.from_dict(data)


def test_summary_only_variants_and_roomy_windows_share_one_call_per_session(
        tmp_path: Path) -> None:
    model = ScriptedModel([REPLY], usage=USAGE)

    results = run_experiment(experiment(), tmp_path / "run", model_factory=lambda c: model,
                             progress=False)

    assert model.call_count == 2  # 2 sessions x (2 templates x 2 windows) cells
    cells = results.cells
    assert len(cells) == 8 and set(cells["status"]) == {"ok"}
    # Paid once per call; every cell's summary cost that call, whoever sent it.
    assert cells["spent_cost"].sum() == 1.0 and set(cells["cost"]) == {0.5}
    assert set(cells["billed_input_tokens"]) == {1000}
    assert cells["spent_input_tokens"].sum() == 2000
    table = results.table()
    assert int(table["calls_made_total"].sum()) == 2
    assert int(table["calls_shared_total"].sum()) == 6
    assert set(table["billed_tokens"]) == {1100.0} and set(table["calls"]) == {1.0}
    assert table["spent_tokens"].sum() == 2200 and table["cost_total"].sum() == 1.0
    # the summary template was applied after the shared reply: top3 renders 3 of 4 intents
    top3 = cells[cells["template"] == "top3-intent"]["summary_path"].iloc[0]
    default = cells[cells["template"] == "default"]["summary_path"].iloc[0]
    assert (tmp_path / "run" / top3).read_text().count("\n- ") < \
        (tmp_path / "run" / default).read_text().count("\n- ")


def test_repeats_never_share_and_sharing_can_be_switched_off(tmp_path: Path) -> None:
    repeated = ScriptedModel([REPLY], usage=USAGE)
    run_experiment(experiment(repeats=2, windows=["none"], templates=["default"]),
                   tmp_path / "a", model_factory=lambda c: repeated, progress=False)
    unshared = ScriptedModel([REPLY], usage=USAGE)
    run_experiment(experiment(), tmp_path / "b", model_factory=lambda c: unshared,
                   progress=False, share_calls=False)

    assert repeated.call_count == 4
    assert unshared.call_count == 8


def test_a_cell_alone_in_its_repeat_sends_and_bills_its_own_call(tmp_path: Path) -> None:
    # Each repeat has one cell: no call can be shared, and the run leaves out the share step
    # (`SharedCalls.step_for`); the cells bill as they did with it, each attempt its own id.
    model = ScriptedModel([REPLY], usage=USAGE)
    results = run_experiment(experiment(sessions=["gen-005k-s1"], repeats=3, windows=["none"],
                                        templates=["default"]),
                             tmp_path / "run", model_factory=lambda c: model, progress=False)

    cells, attempts = results.cells, results.attempts
    assert model.call_count == 3
    assert list(cells["calls_made"]) == [1, 1, 1] and list(cells["calls_shared"]) == [0, 0, 0]
    assert cells["spent_cost"].sum() == 1.5 and set(cells["billed_input_tokens"]) == {1000}
    assert len(attempts) == 3 and attempts["attempt_id"].nunique() == 3
    assert set(attempts["shared"]) == {0} and attempts["shared_from"].isna().all()
    assert all(len(a) == 26 for a in attempts["attempt_id"])


def test_the_dry_run_counts_shared_cells_without_tokens_or_cost(tmp_path: Path) -> None:
    alone = run_experiment(experiment(templates=["default"], windows=["none"]), tmp_path / "a",
                           dry_run=True)
    both = run_experiment(experiment(templates=["default", "top3-intent"], windows=["none"]),
                          tmp_path / "b", dry_run=True)

    assert (both.to_run, both.shared_cells) == (4, 2)
    assert both.estimated_tokens == alone.estimated_tokens
    assert "dry run: 4 cells, 4 to run (2 sharing a call), ~" in str(both)



HONEST = ["template", "model", "window", "billed_tokens", "billed_reported", "billed_estimated",
          "cost", "calls"]
"""A template's cost columns: what its summaries cost per cell, whoever sent the call."""


def test_two_identical_runs_give_identical_per_template_billed_and_cost_whoever_paid(
        tmp_path: Path) -> None:
    # Concurrency 1 makes the payer the first template in expansion order: default in one run,
    # top3-intent in the other. The extractive baseline estimates its tokens; the scripted
    # model reports them and has a price.
    for name, factory in (("extractive", None),
                          ("scripted", lambda c: ScriptedModel([REPLY], usage=USAGE))):
        runs = [run_experiment(experiment(templates=order, concurrency=1), tmp_path / f"{name}{i}",
                               model_factory=factory, progress=False)
                for i, order in enumerate((["default", "top3-intent"],
                                           ["top3-intent", "default"]))]
        tables = [r.table().sort_values(HONEST[:3]).reset_index(drop=True) for r in runs]
        assert tables[0][HONEST].equals(tables[1][HONEST]), name
        payers = [set(r.cells.loc[r.cells["calls_made"] > 0, "template"]) for r in runs]
        assert payers == [{"default"}, {"top3-intent"}], name  # the payer really changed
        billed = tables[0].groupby("template")["billed_tokens"].sum()
        assert billed["default"] == billed["top3-intent"] > 0, name  # one prompt, one cost
        # What the run paid: the same in total, all of it on the paying template's rows.
        spent = [t.groupby("template")["spent_tokens"].sum() for t in tables]
        assert spent[0]["default"] == spent[1]["top3-intent"] > 0, name
        assert spent[0]["top3-intent"] == spent[1]["default"] == 0, name
    scripted = runs[0].table()
    assert set(scripted["cost"]) == {0.5} and scripted["cost_total"].sum() == 1.0
