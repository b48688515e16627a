"""A cell frees its concurrency slot once its calls are done and is scored off the event loop:
the next cell calls while it is being scored, and the rows do not depend on the scheduling."""

from __future__ import annotations

import json
import sqlite3
import threading
import time
from pathlib import Path

import pytest

from workbench.compaction import Usage
from workbench.harness import Experiment, run_experiment
from workbench.harness.run import _cell_run
from workbench.testing import ScriptedModel

REPLY = ('<analysis>ok</analysis>\n```json\n{"user_intent": ["finish the task"], '
         '"current_work": "benchmarking"}\n```')
SCORING_SECONDS = 0.4


def _spec(concurrency: int, repeats: int = 2) -> Experiment:
    return Experiment.from_dict({"name": "slots", "sessions": ["gen-005k-s1", "gen-012k-s2"],
                                 "models": ["extractive"], "repeats": repeats,
                                 "concurrency": concurrency})


def test_the_next_cell_calls_while_the_last_one_is_scored(tmp_path: Path,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[float] = []
    scoring: list[tuple[float, float, str]] = []
    original = _cell_run._score

    def slow_score(*args: object) -> object:
        started = time.perf_counter()
        time.sleep(SCORING_SECONDS)
        value = original(*args)  # type: ignore[arg-type]
        scoring.append((started, time.perf_counter(), threading.current_thread().name))
        return value

    def respond(system: str, messages: list) -> str:
        calls.append(time.perf_counter())
        return REPLY

    monkeypatch.setattr(_cell_run, "_score", slow_score)
    results = run_experiment(_spec(concurrency=1, repeats=1), tmp_path / "run", progress=False,
                             model_factory=lambda cell: ScriptedModel(respond=respond))

    assert list(results.cells["status"]) == ["ok", "ok"]
    assert len(calls) == 2 and len(scoring) == 2
    first_scoring = min(scoring)
    # one slot, yet the second cell's call came before the first cell's scoring ended (its
    # scoring thread may start after that call on a loaded machine: the slot is freed first)
    assert calls[0] < calls[1] < first_scoring[1]
    assert first_scoring[1] - calls[0] >= SCORING_SECONDS
    assert all(name.startswith("workbench-scoring") for _, _, name in scoring)


def _rows(folder: Path) -> list[tuple]:
    db = sqlite3.connect(folder / "results.sqlite")
    rows = db.execute("SELECT cell_id, status, retained_tokens, summary_tokens, original_tokens, "
                      "metrics_json FROM cells ORDER BY cell_id").fetchall()
    db.close()
    return [(c, s, r, t, o, json.loads(m)) for c, s, r, t, o, m in rows]


def test_rows_are_the_same_at_any_concurrency(tmp_path: Path) -> None:
    def factory(cell: object) -> ScriptedModel:
        return ScriptedModel([REPLY], latency=0.01,
                             usage=Usage(model="scripted", input_tokens=10, output_tokens=10))

    run_experiment(_spec(concurrency=1), tmp_path / "one", progress=False, model_factory=factory)
    run_experiment(_spec(concurrency=8), tmp_path / "eight", progress=False, model_factory=factory)

    one, eight = _rows(tmp_path / "one"), _rows(tmp_path / "eight")
    assert len(one) == 4 and one == eight
    assert all(row[1] == "ok" and row[5]["files_recall"] is not None for row in one)
    for name in ("summaries",):
        files_one = sorted(p.name for p in (tmp_path / "one" / name).iterdir())
        assert files_one == sorted(p.name for p in (tmp_path / "eight" / name).iterdir())
        for file in files_one:
            assert (tmp_path / "one" / name / file).read_bytes() == \
                (tmp_path / "eight" / name / file).read_bytes()


def test_the_loop_writes_the_cells_files_after_the_pool_scored_it(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    writers: list[tuple[str, str]] = []
    original = _cell_run.write_file

    def spy(path: Path, text: str) -> None:
        writers.append((path.name, threading.current_thread().name))
        original(path, text)

    monkeypatch.setattr(_cell_run, "write_file", spy)
    results = run_experiment(_spec(concurrency=2, repeats=1), tmp_path / "run", progress=False,
                             model_factory=lambda cell: ScriptedModel([REPLY]))
    ids = sorted(results.cells["cell_id"])
    assert sorted(name for name, _ in writers) == sorted(
        f"{i}{ext}" for i in ids for ext in (".md", ".raw.txt", ".forgotten.json"))
    assert {thread for _, thread in writers} == {threading.main_thread().name}
    for cell_id, path in zip(results.cells["cell_id"], results.cells["summary_path"],
                             strict=True):
        assert path == f"summaries/{cell_id}.md" and (tmp_path / "run" / path).is_file()


def test_a_scoring_step_that_fails_part_way_keeps_the_files_it_made(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import workbench.metrics as metrics

    def broken(*args: object, **kwargs: object) -> None:
        raise RuntimeError("metric exploded")

    monkeypatch.setattr(metrics, "compute_metrics", broken)
    results = run_experiment(_spec(concurrency=1, repeats=1), tmp_path / "run", progress=False,
                             model_factory=lambda cell: ScriptedModel([REPLY]))
    rows = results.cells
    assert set(rows["status"]) == {"error"} and set(rows["error_message"]) == {"metric exploded"}
    for cell_id, path in zip(rows["cell_id"], rows["summary_path"], strict=True):
        # the summary and the raw reply were made before the metrics: written, and named
        assert path == f"summaries/{cell_id}.md" and (tmp_path / "run" / path).is_file()
        assert (tmp_path / "run" / "summaries" / f"{cell_id}.raw.txt").is_file()
        assert not (tmp_path / "run" / "summaries" / f"{cell_id}.forgotten.json").exists()


def test_a_file_that_cannot_be_written_makes_the_cell_an_error_without_its_path(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def full(path: Path, text: str) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(_cell_run, "write_file", full)
    results = run_experiment(_spec(concurrency=1, repeats=1), tmp_path / "run", progress=False,
                             model_factory=lambda cell: ScriptedModel([REPLY]))
    rows = results.cells
    assert set(rows["status"]) == {"error"} and set(rows["error_type"]) == {"OSError"}
    assert rows["summary_path"].isna().all()  # named only once written
