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
    assert cells["cost"].sum() == 1.0  # billed once per call
    table = results.table()
    assert int(table["calls_made"].sum()) == 2 and int(table["calls_shared"].sum()) == 6
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


def test_the_dry_run_counts_shared_cells_without_tokens_or_cost(tmp_path: Path) -> None:
    alone = run_experiment(experiment(templates=["default"], windows=["none"]), tmp_path / "a",
                           dry_run=True)
    both = run_experiment(experiment(templates=["default", "top3-intent"], windows=["none"]),
                          tmp_path / "b", dry_run=True)

    assert (both.to_run, both.shared_cells) == (4, 2)
    assert both.estimated_tokens == alone.estimated_tokens
    assert "dry run: 4 cells, 4 to run (2 sharing a call), ~" in str(both)
