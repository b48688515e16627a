"""Scores computed once per distinct summary of a session, and only for as long as it lives."""

from __future__ import annotations

import gc
import json
import sqlite3
from pathlib import Path

import pytest

import workbench.metrics as metrics
from workbench._memo import SessionMemo
from workbench.harness import Experiment, run_experiment
from workbench.testing import ScriptedModel

REPLY = ('```json\n{"user_intent": ["finish the task"], "current_work": "benchmarking"}\n```')


class _Session:
    """Stands for a `Session`: the memo only needs an object that can be weakly referenced."""


def test_a_key_is_computed_once_per_session() -> None:
    memo, calls = SessionMemo("t"), []
    one, two = _Session(), _Session()

    def compute(tag: str) -> object:
        calls.append(tag)
        return {"tag": tag}

    first = memo.get(one, ("text", None), lambda: compute("a"))
    assert memo.get(one, ("text", None), lambda: compute("b")) is first
    assert memo.get(two, ("text", None), lambda: compute("c")) == {"tag": "c"}
    assert calls == ["a", "c"] and (memo.hits, memo.misses) == (1, 2)


def test_entries_go_with_their_session_and_the_oldest_go_first() -> None:
    memo = SessionMemo("t", per_session=2)
    session = _Session()
    for key in ("a", "b", "c"):
        memo.get(session, key, lambda key=key: key)
    memo.get(session, "a", lambda: "again")  # "a" was the oldest: computed again
    assert memo.misses == 4 and memo.hits == 0
    del session
    gc.collect()
    assert memo._tables == {}


def test_repeats_with_the_same_summary_are_scored_once_and_keep_their_own_files(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    computed: list[str] = []
    original = metrics.compute_metrics

    def counted(session, text, *args, **kwargs):  # type: ignore[no-untyped-def]
        computed.append(session.id)
        return original(session, text, *args, **kwargs)

    monkeypatch.setattr(metrics, "compute_metrics", counted)
    spec = Experiment.from_dict({"name": "memo", "sessions": ["gen-005k-s1"],
                                 "models": ["extractive"], "repeats": 3, "concurrency": 2})
    results = run_experiment(spec, tmp_path / "run", progress=False,
                             model_factory=lambda cell: ScriptedModel([REPLY]))

    db = sqlite3.connect(tmp_path / "run" / "results.sqlite")
    rows = db.execute("SELECT cell_id, metrics_json FROM cells ORDER BY repeat").fetchall()
    db.close()
    assert computed == ["gen-005k-s1"]
    assert len(rows) == 3 and len({m for _, m in rows}) == 1
    assert json.loads(rows[0][1])["files_recall"] is not None
    forgotten = {results.cell_text(cell_id, "forgotten.json") for cell_id, _ in rows}
    assert len(forgotten) == 1 and json.loads(forgotten.pop()) is not None  # one each, alike
