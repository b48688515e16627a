"""On the real recorded sessions, the verdict's "questions answered" rests on as many sessions
as its probe recall: every recording that completes gets exactly graded questions."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import ROOT
from workbench.harness import Experiment, Results, run_experiment

SPEC = ROOT / "experiments" / "shared-sessions.toml"


def test_questions_answered_rest_on_as_many_sessions_as_recall(tmp_path: Path) -> None:
    if not (ROOT.parent / "shared" / "sessions").is_dir():
        pytest.skip("needs the shared sessions at ../shared/sessions beside the repo")
    spec = Experiment.from_toml(SPEC)
    experiment = spec.model_copy(update={"templates": ["default", "lean-facts"],
                                         "windows": [32_000]})
    run_experiment(experiment, tmp_path / "run", progress=False)
    (stratum,) = Results.load(tmp_path / "run").verdict().strata
    sessions = {m.metric: m.n_sessions for m in stratum.metrics}
    assert sessions["qa_accuracy"] >= sessions["probe_recall"] == stratum.n_common
    assert stratum.n_common >= 15
