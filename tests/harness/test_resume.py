"""Resume: a SIGKILLed run loses only in-flight cells; re-runs skip finished cells."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

from workbench.compaction import Usage
from workbench.errors import ModelCallError
from workbench.harness import Cell, Experiment, run_experiment
from workbench.messages import Message
from workbench.sessions import Session
from workbench.testing import ScriptedModel

REPLY = '```json\n{"user_intent": ["ship it"], "current_work": "shipping"}\n```'


def write_sessions(folder: Path, n: int) -> None:
    for i in range(n):
        path = folder / f"s{i}.json"
        Session(f"s{i}", "goose-json", str(path), [Message.user(f"task {i}"),
                                                   Message.assistant("ok")]).write_goose_json(path)


def spec_file(folder: Path, **extra: str) -> Path:
    lines = ['name = "resume"', 'sessions = ["s*.json"]', 'models = ["extractive"]',
             'windows = ["8k", "16k"]', "concurrency = 2", *(f"{k} = {v}" for k, v in extra.items())]
    path = folder / "exp.toml"
    path.write_text("\n".join(lines) + "\n")
    return path


def marking_factory(marker: Path, latency: float = 0.0, fail: set[str] | None = None) -> Any:
    def factory(cell: Cell) -> ScriptedModel:
        with marker.open("a") as f:
            f.write(cell.cell_id + "\n")
        if fail and cell.session_id in fail:
            return ScriptedModel(always_raise=ModelCallError("down", "scripted"))
        return ScriptedModel([REPLY], latency=latency, usage=Usage(input_tokens=1, output_tokens=1))
    return factory


def stored(out: Path) -> list[tuple[str, str]]:
    db = sqlite3.connect(out / "results.sqlite")
    try:
        return list(db.execute("SELECT cell_id, status FROM cells"))
    except sqlite3.OperationalError:  # polled before the migrations ran
        return []
    finally:
        db.close()


CHILD = textwrap.dedent("""
    import sys
    from pathlib import Path
    sys.path.insert(0, {tests!r})
    from test_resume import marking_factory
    from workbench.harness import run_experiment
    run_experiment({spec!r}, {out!r}, model_factory=marking_factory(Path({marker!r}), 0.3),
                   progress=False)
""")


def test_a_killed_run_resumes_without_duplicates_or_recalls(tmp_path: Path) -> None:
    write_sessions(tmp_path, 6)  # 12 cells, 2 at a time, 0.3 s each
    spec, out, marker = spec_file(tmp_path), tmp_path / "run", tmp_path / "calls.txt"
    code = CHILD.format(tests=str(Path(__file__).parent), spec=str(spec), out=str(out),
                        marker=str(marker))
    child = subprocess.Popen([sys.executable, "-c", code], env=os.environ.copy())
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if (out / "results.sqlite").exists() and len(stored(out)) >= 3:
            break
        assert child.poll() is None, "the child run ended before it could be killed"
        time.sleep(0.05)
    child.send_signal(signal.SIGKILL)
    child.wait()
    done_before = {cid for cid, _ in stored(out)}
    assert 3 <= len(done_before) < 12
    marker.write_text("")

    results = run_experiment(spec, out, model_factory=marking_factory(marker), progress=False)
    called = marker.read_text().split()
    assert not set(called) & done_before
    assert len(called) == 12 - len(done_before)
    assert len(results.cells) == 12 and results.cells["cell_id"].is_unique
    assert set(results.cells["status"]) == {"ok"}
    assert results.attempts.groupby("cell_id").size().max() == 1
    # The killed run never finished; the resume, holding the folder's lock, marked it.
    assert list(results.runs["status"]) == ["interrupted", "finished"]


def test_a_rerun_skips_errors_unless_retry_errors(tmp_path: Path) -> None:
    write_sessions(tmp_path, 2)
    spec, out, marker = spec_file(tmp_path), tmp_path / "run", tmp_path / "calls.txt"
    run_experiment(spec, out, model_factory=marking_factory(marker, fail={"s1"}), progress=False)
    assert sorted(s for _, s in stored(out)) == ["error", "error", "ok", "ok"]
    errors = {cid for cid, s in stored(out) if s == "error"}

    marker.write_text("")
    run_experiment(spec, out, model_factory=marking_factory(marker), progress=False)
    assert marker.read_text() == ""

    results = run_experiment(spec, out, model_factory=marking_factory(marker), progress=False,
                             retry_errors=True)
    assert set(marker.read_text().split()) == errors
    assert set(results.cells["status"]) == {"ok"} and len(results.cells) == 4
    assert len(results.attempts) == 4
    assert Experiment.from_toml(out / "spec.toml").name == "resume"
