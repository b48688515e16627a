"""`Results`' frames: the cells frame made in one step equals the frame-then-expand one, and a
loaded run makes each frame from the rows it read, the first time it is used."""

from __future__ import annotations

import asyncio
import json
import math
import sqlite3
from pathlib import Path

import pandas as pd
import pytest
from pandas.testing import assert_frame_equal

from workbench.errors import ConfigError
from workbench.harness import Experiment, Results, run_experiment
from workbench.harness.results._rows import cells_frame, expand_metrics, frame_of
from workbench.harness.results._store import ResultsStore
from workbench.messages import Message
from workbench.sessions import Session

COLUMNS = ["cell_id", "status", "metrics_json", "probe_recall"]


def _both(rows: list[tuple[object, ...]]) -> tuple[pd.DataFrame, pd.DataFrame]:
    table = (rows, COLUMNS)
    return cells_frame(table), expand_metrics(frame_of(table))


@pytest.mark.parametrize("metrics", [
    # every cell scored alike (repeats): one text
    [{"a": 0.5, "b": 3}, {"a": 0.5, "b": 3}, {"a": 0.5, "b": 3}],
    # an error cell has no metrics: NaN in every metric column, ints become floats
    [{"a": 0.5, "b": 3}, None, {"a": 0.25, "b": 1}],
    # a metric one cell lacks, one that is null, and one null everywhere it appears
    [{"a": None, "c": 1}, {"a": 0.5, "d": None}, {"e": None}],
    # a true/false metric beside a missing one, and text
    [{"flag": True, "t": "x"}, {"flag": False}, {}],
    # metrics in a different order per cell: columns in order of first appearance
    [{"z": 1, "a": 2}, {"a": 3, "m": 4, "z": 5}],
    # a metric named like a cell column is not added again
    [{"status": "shadowed", "a": 1}, {"a": 2}],
    # no cell has metrics
    [None, None],
])
def test_the_cells_frame_made_in_one_step_equals_frame_then_expand(
        metrics: list[dict[str, object] | None]) -> None:
    rows: list[tuple[object, ...]] = [(f"c{i}", "ok", None if m is None else json.dumps(m), 0.5)
            for i, m in enumerate(metrics)]
    one_step, two_steps = _both(rows)
    assert_frame_equal(one_step, two_steps)
    assert list(one_step.columns) == list(two_steps.columns)


@pytest.mark.parametrize("values", [
    [None, None, None], [1, None, 3], [1.5, None, 2.0], ["a", None, "c"], [1, 2.5, 3],
    [b"x", None, b"y"], [1, 2, 3], ["a", "b", "c"], [1, "a", None], [math.nan, 1.0, None],
    [2**62, None, 1], [True, False, math.nan], [True, None, False], [0.5, True, "t"],
])
def test_a_table_makes_the_frame_from_records_makes(values: list[object]) -> None:
    rows = [(f"c{i}", v) for i, v in enumerate(values)]
    expected = pd.DataFrame.from_records(rows, columns=["cell_id", "v"], coerce_float=True)
    assert_frame_equal(frame_of((rows, ["cell_id", "v"])), expected)
    empty = frame_of(([], ["cell_id", "v"]))  # no rows: object columns, as from_records
    assert_frame_equal(empty, pd.DataFrame.from_records([], columns=["cell_id", "v"],
                                                        coerce_float=True))


def test_a_metric_a_cell_lacks_is_nan_not_none() -> None:
    one_step, _ = _both([("c0", "ok", json.dumps({"t": "x"}), 0.5), ("c1", "error", None, None)])
    assert one_step["t"].tolist()[0] == "x" and math.isnan(one_step["t"].tolist()[1])


def test_metrics_that_are_not_an_object_fall_back_to_expand_metrics() -> None:
    one_step, two_steps = _both([("c0", "ok", json.dumps([1, 2]), 0.5)])
    assert_frame_equal(one_step, two_steps)


def _run(tmp_path: Path, cells: int = 3) -> Path:
    messages = [Message.user("refactor the parser"), Message.assistant("reading parser.py")]
    session = tmp_path / "s.json"
    Session("s", "goose-json", str(session), messages).write_goose_json(session)
    out = tmp_path / "run"
    run_experiment(Experiment.from_dict({"name": "frames", "sessions": [str(session)],
                                         "models": ["extractive"], "repeats": cells}),
                   out, progress=False)
    return out


def test_a_loaded_run_makes_each_frame_when_first_used_and_keeps_it(tmp_path: Path) -> None:
    out = _run(tmp_path)
    results = Results.load(out)
    assert set(vars(results)) >= {"run_dir", "_spec_bytes", "_rows"}
    assert not {"cells", "attempts", "runs", "spec"} & set(vars(results))  # nothing made yet
    cells = results.cells
    assert "cells" in vars(results) and "attempts" not in vars(results)
    assert results.cells is cells  # made once
    assert set(results._rows) == {"attempts", "runs"}  # the cells' rows went with their frame
    assert results.status == "finished" and "runs" not in vars(results)  # read from the rows
    assert results.runs["status"].tolist() == ["finished"] and not results._rows.get("runs")
    assert results.status == "finished"  # and from the frame, once made


def test_printing_a_run_s_results_makes_no_frame(tmp_path: Path) -> None:
    """asyncio.run on the main thread formats the finished task, so its `Results` too, when it
    puts Ctrl-C's handler back (Python 3.11): that must not make the three frames."""
    out = _run(tmp_path)
    results = Results.load(out)
    assert repr(results) == f"Results({str(out)!r}, cells=3, attempts=3, status='finished')"

    async def load() -> Results:
        return Results.load(out)

    returned = asyncio.run(load())
    assert not {"cells", "attempts", "runs", "spec"} & set(vars(returned))
    returned.attempts  # noqa: B018 - made, then counted from the frame
    assert repr(returned) == repr(results)


def test_the_spec_is_the_file_as_it_was_at_load_and_a_bad_one_is_named_when_used(
        tmp_path: Path) -> None:
    out = _run(tmp_path)
    results, spec_file = Results.load(out), out / "spec.toml"
    spec_file.write_text("name = 1\n", encoding="utf-8")  # changed after the load
    assert results.spec is not None and results.spec.name == "frames"
    broken = Results.load(out)
    with pytest.raises(ConfigError, match=r"spec\.toml: name: Input should be a valid string"):
        broken.spec  # noqa: B018
    spec_file.unlink()
    assert Results.load(out).spec is None


def test_loaded_frames_equal_what_pandas_reads_from_the_store(tmp_path: Path) -> None:
    out = _run(tmp_path)
    results = Results.load(out)
    db = sqlite3.connect(out / "results.sqlite")
    try:
        expected = {t: pd.read_sql_query(f"SELECT * FROM {t} ORDER BY {o}", db) for t, o in (
            ("cells", "session_id, strategy, model, template, window, repeat, rowid"),
            ("attempts", "rowid"), ("runs", "rowid"))}
    finally:
        db.close()
    assert_frame_equal(results.cells, expand_metrics(expected["cells"]))
    assert_frame_equal(results.attempts, expected["attempts"])
    assert_frame_equal(results.runs, expected["runs"])
    assert len(results.cells) == 3 and "probe_recall" in results.cells


def test_the_rows_are_read_at_load_not_when_a_frame_is_made(tmp_path: Path) -> None:
    out = _run(tmp_path)
    results = Results.load(out)
    with ResultsStore(out / "results.sqlite") as store:
        store.delete_cells(store.cell_statuses())
    assert len(results.cells) == 3  # the run as it was loaded
    assert len(Results.load(out).cells) == 0


def test_frames_given_to_the_constructor_are_kept_as_given() -> None:
    cells = pd.DataFrame({"cell_id": ["a"]})
    results = Results(Path("."), None, cells, pd.DataFrame(), pd.DataFrame())
    assert results.cells is cells and results.attempts.empty and results.status is None
    results.cells = cells.iloc[0:0]
    assert results.cells.empty
