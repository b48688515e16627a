"""A model entry's ``sessions``: the model runs on that subset of the experiment's sessions."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.harness.test_runner import experiment, scripted, write_session
from workbench.errors import ConfigError
from workbench.harness import DryRunEstimate, Experiment, expand_cells, run_experiment
from workbench.harness.run._run_folder import cell_fields

SUBSET = {"model": "openai/gpt-4o-mini", "name": "mini", "sessions": ["s2", "s4"]}


def _sessions(tmp_path: Path, n: int = 5) -> None:
    for i in range(1, n + 1):
        write_session(tmp_path, f"s{i}")


def test_a_model_with_sessions_gets_cells_for_those_sessions_only(tmp_path: Path) -> None:
    _sessions(tmp_path)
    exp = experiment(tmp_path, models=["extractive", SUBSET], windows=["8k", "32k"])
    cells = expand_cells(exp)
    by_model: dict[str, list[str]] = {}
    for cell in cells:
        by_model.setdefault(cell.model, []).append(cell.session_id)
    assert by_model == {"extractive": ["s1", "s1", "s2", "s2", "s3", "s3", "s4", "s4", "s5",
                                       "s5"],
                        "mini": ["s2", "s2", "s4", "s4"]}
    # model indices still point at the spec's entries
    assert {c.model_index for c in cells if c.model == "mini"} == {1}


def test_a_dry_run_counts_only_the_subset(tmp_path: Path) -> None:
    _sessions(tmp_path)
    calls: list[object] = []
    est = run_experiment(experiment(tmp_path, models=["extractive", SUBSET]), tmp_path / "run",
                         dry_run=True, model_factory=calls.append)
    assert isinstance(est, DryRunEstimate)
    assert (est.cells, est.to_run) == (5 + 2, 5 + 2)
    assert calls == []


def test_a_run_writes_rows_for_the_subset_only(tmp_path: Path) -> None:
    _sessions(tmp_path, 3)
    exp = experiment(tmp_path, models=["extractive", {**SUBSET, "sessions": ["s3"]}])
    results = run_experiment(exp, tmp_path / "run", model_factory=scripted(), progress=False)
    cells = results.cells
    assert sorted(zip(cells["model"], cells["session_id"], strict=True)) == [
        ("extractive", "s1"), ("extractive", "s2"), ("extractive", "s3"), ("mini", "s3")]


def test_unknown_session_names_are_a_config_error_naming_them(tmp_path: Path) -> None:
    _sessions(tmp_path, 3)
    exp = experiment(tmp_path, models=["extractive", {**SUBSET, "sessions": ["s2", "s9", "x"]}])
    with pytest.raises(ConfigError) as info:
        expand_cells(exp)
    assert str(info.value) == ("models[1] (mini): sessions 's9', 'x' are not among the "
                               "experiment's 3 sessions (session ids: s1, s2, s3)")
    one = experiment(tmp_path, models=[{**SUBSET, "sessions": ["s7"]}])
    with pytest.raises(ConfigError, match=r"^models\[0\] \(mini\): sessions 's7' is not one of "
                                          r"the experiment's 3 sessions \(session ids: s1, s2, "
                                          r"s3\)$"):
        run_experiment(one, tmp_path / "run", dry_run=True)


def test_the_known_ids_are_cut_after_eight(tmp_path: Path) -> None:
    _sessions(tmp_path, 10)
    exp = experiment(tmp_path, models=[{**SUBSET, "sessions": ["nope"]}])
    with pytest.raises(ConfigError) as info:
        expand_cells(exp)
    assert str(info.value).endswith("10 sessions (session ids: s1, s10, s2, s3, s4, s5, s6, "
                                    "s7, ...)")


def test_an_empty_subset_is_refused_and_the_option_round_trips(tmp_path: Path) -> None:
    path = tmp_path / "e.toml"
    path.write_text('sessions = ["a.json"]\nmodels = [{ model = "extractive", sessions = [] }]\n',
                    encoding="utf-8")
    with pytest.raises(ConfigError) as info:
        Experiment.from_toml(path)
    assert str(info.value) == (f"{path}: models[0].sessions: List should have at least 1 item "
                               "after validation, not 0")
    exp = experiment(tmp_path, models=["extractive", SUBSET])
    again = Experiment.from_toml(write_toml(tmp_path, exp.to_toml()))
    assert again.models[1].sessions == ["s2", "s4"] and again.models[0].sessions is None


def write_toml(folder: Path, text: str) -> Path:
    path = folder / "again.toml"
    path.write_text(text, encoding="utf-8")
    return path


def test_changing_a_subset_changes_the_run_folders_cell_fields(tmp_path: Path) -> None:
    _sessions(tmp_path, 3)
    plain = cell_fields(experiment(tmp_path, models=["extractive"]))
    assert plain == cell_fields(experiment(tmp_path, models=["extractive"]))
    a = cell_fields(experiment(tmp_path, models=["extractive", SUBSET]))
    b = cell_fields(experiment(tmp_path, models=["extractive", {**SUBSET, "sessions": ["s2"]}]))
    assert a["models"][0] == plain["models"][0] and a["models"] != b["models"]


def test_the_default_experiment_replays_its_local_models_on_the_recorded_sessions() -> None:
    exp = Experiment.default()
    recorded = ["gen-005k-s1", "gen-012k-s2", "gen-025k-s3", "gen-050k-s4", "gen-090k-s5",
                "gen-150k-s6"]
    assert exp.models[0].sessions is None  # the extractive baseline runs on every session
    assert all(m.sessions == recorded for m in exp.models[1:])
