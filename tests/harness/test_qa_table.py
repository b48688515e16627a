"""The ``[qa]`` table's question counts: a manifest's cap, and a recording's per-token rate."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.probes._sessions import manifest_session
from workbench.errors import ConfigError
from workbench.harness import Experiment, run_experiment
from workbench.harness.experiment._qa_table import QATable

ROOT = Path(__file__).resolve().parents[2]


def test_the_recording_counts_default_to_the_issue_and_are_written_only_when_changed() -> None:
    table = QATable()
    assert (table.per_session, table.tokens_per_question, table.min_questions,
            table.max_questions) == (10, 2000, 15, 40)
    assert table.to_toml_value() == {"answerer": "lookup"}
    changed = QATable(tokens_per_question=1000, max_questions=20)
    assert changed.to_toml_value() == {"answerer": "lookup", "tokens_per_question": 1000,
                                       "max_questions": 20}
    # what the run, its --dry-run estimate and the bench build questions with
    assert changed.build_options() == {
        "kinds": ["recall", "artifact", "continuation", "decision"], "per_session": 10,
        "tokens_per_question": 1000, "min_questions": 15, "max_questions": 20}


def test_a_count_below_one_names_its_key(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="qa.min_questions"):
        Experiment.from_dict({"name": "x", "sessions": ["a.json"], "base_dir": str(tmp_path),
                              "qa": {"min_questions": 0}})


def test_a_runs_recording_gets_the_tables_counts(tmp_path: Path) -> None:
    recording = manifest_session("rec-1", planted_facts=None, errors=None, files_changed=None,
                                 pending_tasks=None, decisions=None)
    recording.write_goose_json(tmp_path / "rec-1.json")
    exp = Experiment.from_dict({"name": "qa", "sessions": ["rec-*.json"],
                                "models": ["extractive"], "base_dir": str(tmp_path),
                                "qa": {"answerer": "lookup", "max_questions": 4}})
    run_experiment(exp, tmp_path / "run", progress=False)
    saved = json.loads((tmp_path / "run" / "qa" / "questions" / "rec-1.json").read_text())
    assert len(saved["questions"]) == 4
    assert all(q["source"].startswith("transcript:") and q["evidence"]
               for q in saved["questions"])


def test_the_shipped_real_sessions_spec_says_which_folder_is_missing(tmp_path: Path) -> None:
    from workbench.harness.experiment._cells import load_experiment_sessions

    spec = tmp_path / "experiments" / "shared-sessions.toml"
    spec.parent.mkdir()
    spec.write_text((ROOT / "experiments" / "shared-sessions.toml").read_text())
    with pytest.raises(ConfigError, match=r"sessions: glob '\.\./\.\./shared/sessions/"
                                          r"claude-code/.*' matched no files"):
        load_experiment_sessions(Experiment.from_toml(spec))
