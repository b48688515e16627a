"""A cell's path: its calls, then its scoring while the next cell calls, then its rows and its
one file, written by the store's writer. The rows do not depend on the scheduling."""

from __future__ import annotations

import json
import re
import sqlite3
import threading
from pathlib import Path
from typing import Any

import pytest

from workbench.compaction import Usage
from workbench.harness import Cell, Experiment, run_experiment
from workbench.harness.results import _writer
from workbench.harness.run import _cell_run
from workbench.testing import ScriptedModel

REPLY = ('<analysis>ok</analysis>\n```json\n{"user_intent": ["finish the task"], '
         '"current_work": "benchmarking"}\n```')


def _spec(concurrency: int, repeats: int = 2) -> Experiment:
    return Experiment.from_dict({"name": "slots", "sessions": ["gen-005k-s1", "gen-012k-s2"],
                                 "models": ["extractive"], "repeats": repeats,
                                 "concurrency": concurrency})


def test_the_next_cell_starts_before_the_last_one_is_scored(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from workbench.harness.run.executors import _local

    events: list[str] = []
    original_score, original_run = _cell_run.score, _local.run_cell

    def score(*args: Any) -> Any:
        events.append("score")
        return original_score(*args)

    async def run_cell(cell: Any, *args: Any, **kwargs: Any) -> Any:
        events.append(f"start {cell.repeat}")
        return await original_run(cell, *args, **kwargs)

    monkeypatch.setattr(_cell_run, "score", score)
    monkeypatch.setattr(_local, "run_cell", run_cell)
    monkeypatch.setattr(_local, "LOOKAHEAD", 1)  # one cell admitted per slot
    spec = Experiment.from_dict({"name": "order", "sessions": ["gen-005k-s1"],
                                 "models": ["extractive"], "repeats": 2, "concurrency": 1})
    results = run_experiment(spec, tmp_path / "run", progress=False,
                             model_factory=lambda cell: ScriptedModel([REPLY]))
    assert list(results.cells["status"]) == ["ok", "ok"]
    # the second cell was admitted when the first one's calls were done, not after its scoring
    assert events == ["start 0", "start 1", "score", "score"]


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


def test_a_cell_writes_one_file_and_keeps_its_other_texts_in_the_store(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    writers: list[tuple[str, str]] = []
    original = _writer.write_file

    def spy(path: Path, text: str) -> None:
        writers.append((path.name, threading.current_thread().name))
        original(path, text)

    monkeypatch.setattr(_writer, "write_file", spy)
    results = run_experiment(_spec(concurrency=2, repeats=1), tmp_path / "run", progress=False,
                             model_factory=lambda cell: ScriptedModel([REPLY]))
    ids = sorted(results.cells["cell_id"])
    paths = list(results.cells["summary_path"])
    # the cells' summaries are alike: one file, named by a digest of its text, in every row
    assert len(ids) == 2 and len(writers) == 1 and set(paths) == {f"summaries/{writers[0][0]}"}
    # written by the store's writer: the one thread a cell's work is handed to
    assert {thread for _, thread in writers} == {"workbench-store-writer"}
    for cell_id, path in zip(results.cells["cell_id"], paths, strict=True):
        assert re.fullmatch(r"summaries/[0-9a-f]{20}\.md", path)
        assert (tmp_path / "run" / path).is_file()
        assert results.cell_text(cell_id, "raw.txt") == REPLY
        assert json.loads(results.cell_text(cell_id, "forgotten.json") or "null") is not None
    assert [p.name for p in (tmp_path / "run" / "summaries").iterdir()] == [writers[0][0]]


def test_each_distinct_summary_is_one_file_named_by_its_text_whatever_the_order(
        tmp_path: Path) -> None:
    def reply(cell: Cell) -> ScriptedModel:  # repeat 1 answers otherwise than 0 and 2
        text = REPLY.replace("benchmarking", "profiling") if cell.repeat == 1 else REPLY
        return ScriptedModel([text], latency=0.01 * (3 - cell.repeat))  # the last done first

    results = run_experiment(_spec(concurrency=1, repeats=3), tmp_path / "run", progress=False,
                             model_factory=reply)
    at_once = run_experiment(_spec(concurrency=6, repeats=3), tmp_path / "at-once",
                             progress=False, model_factory=reply)
    rows = results.cells
    assert list(rows["summary_path"]) == list(at_once.cells["summary_path"])
    files = sorted(p.name for p in (tmp_path / "run" / "summaries").iterdir())
    by_repeat = {r: set(rows[rows["repeat"] == r]["summary_path"]) for r in (0, 1, 2)}
    assert len(rows) == 6 and len(files) == 2  # two summaries, each written once
    assert len(by_repeat[0]) == len(by_repeat[1]) == 1 and by_repeat[0] == by_repeat[2]
    assert by_repeat[0] != by_repeat[1]
    for repeat, word in ((0, "benchmarking"), (1, "profiling")):
        path = next(iter(by_repeat[repeat]))
        assert path.removeprefix("summaries/") in files
        assert word in (tmp_path / "run" / path).read_text(encoding="utf-8")


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
        # the summary and the raw reply were made before the metrics: kept, and named (the
        # cells' summaries are alike: one file)
        assert path == rows["summary_path"].iloc[0] and (tmp_path / "run" / path).is_file()
        assert results.cell_text(cell_id, "raw.txt") == REPLY
        assert results.cell_text(cell_id, "forgotten.json") is None


def test_a_file_that_cannot_be_written_makes_the_cell_an_error_without_its_path(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def full(path: Path, text: str) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(_writer, "write_file", full)
    results = run_experiment(_spec(concurrency=1, repeats=1), tmp_path / "run", progress=False,
                             model_factory=lambda cell: ScriptedModel([REPLY]))
    rows = results.cells
    assert set(rows["status"]) == {"error"} and set(rows["error_type"]) == {"OSError"}
    assert rows["summary_path"].isna().all()  # named only once written
