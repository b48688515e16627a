"""The Ray executor on a local Ray instance with two worker CPUs: same table as the local
executor, a worker killed mid-cell, limits across workers, one payment per cached prompt."""

from __future__ import annotations

import asyncio
import os
import signal
import sqlite3
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from tests.harness.ray_compare import assert_same_results
from workbench.compaction import Usage
from workbench.harness import Experiment, expand_cells, run_experiment
from workbench.harness.experiment._cells import read_manifest
from workbench.harness.run.executors._ray import LOST_UNKNOWN
from workbench.messages import Message
from workbench.sessions import Session
from workbench.testing import ScriptedModel

ray = pytest.importorskip("ray", reason="needs the ray extra: pip install \"compaction-workbench[ray]\"")

REPLY = ('<analysis>ok</analysis>\n```json\n{"user_intent": ["fix app.py"], '
         '"current_work": "editing app.py"}\n```')
USAGE = Usage(model="scripted", input_tokens=100, output_tokens=50, cost=0.001)


@pytest.fixture(scope="module")
def ray_instance() -> Any:
    """One small local Ray instance for the module: two CPUs, no dashboard."""
    # "local": a new instance even when RAY_ADDRESS or an earlier `ray start` names a cluster.
    ray.init(address="local", num_cpus=2, include_dashboard=False, log_to_driver=False)
    # Workers cannot import this test module by name: ship its model classes by value.
    ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])
    yield ray
    ray.shutdown()


def write_sessions(folder: Path, count: int) -> None:
    for i in range(count):
        sid = f"s{i}"
        messages = [Message.user(f"fix the bug in app.py ({sid})"),
                    Message.assistant("looking").with_tool_request("t1", "shell", {"command": "ls"}),
                    Message.user().with_tool_response("t1", f"app.py {sid}.txt"),
                    Message.assistant("fixed it")]
        Session(sid, "goose-json", str(folder / f"{sid}.json"), messages).write_goose_json(
            folder / f"{sid}.json")


class KillOnce(ScriptedModel):
    """Kills its own worker process in the middle of the victim cell's first call."""

    def __init__(self, folder: str, cell_id: str, victim: str) -> None:
        super().__init__([REPLY], usage=USAGE, latency=0.05)
        self.folder, self.cell_id, self.victim = Path(folder), cell_id, victim

    async def complete(self, system: str, messages: list[Message]) -> Any:
        marker = self.folder / "killed"
        if self.cell_id == self.victim and not marker.exists():
            marker.write_text(str(os.getpid()))
            await asyncio.sleep(0.05)
            os.kill(os.getpid(), signal.SIGKILL)
        reply = await super().complete(system, messages)
        with open(self.folder / "paid.log", "a", encoding="utf-8") as log:
            log.write(f"{self.cell_id} {os.getpid()}\n")
        return reply


class Timed(ScriptedModel):
    """Logs ``model pid start end`` for every call; a call of model ``b`` waits for a partner.

    The partner makes the test deterministic: a ``b`` call stays in flight until it has seen
    another call in flight at the same time (or until every other call is done, for the last
    one), so two calls overlap however slowly the workers start, and the limits are what keeps
    a third one out. A call's interval is logged around its marker's lifetime, so a marker seen
    is an overlap of the logged intervals.
    """

    CALLS = 8

    def __init__(self, folder: str, model: str) -> None:
        super().__init__([REPLY], usage=USAGE, latency=0.05)
        self.folder, self.model_name = Path(folder), model

    async def complete(self, system: str, messages: list[Message]) -> Any:
        me = f"{os.getpid()}-{time.monotonic_ns()}"
        start = time.time()
        (self.folder / "in-flight" / me).touch()
        if self.model_name == "b":
            await self._partner(me)
        reply = await super().complete(system, messages)
        (self.folder / "in-flight" / me).unlink()
        (self.folder / "done" / me).touch()
        with open(self.folder / "calls.log", "a", encoding="utf-8") as log:
            log.write(f"{self.model_name} {os.getpid()} {start} {time.time()}\n")
        return reply

    async def _partner(self, me: str) -> None:
        deadline = time.monotonic() + 120  # a hang fails the test instead of stopping the suite
        while time.monotonic() < deadline:
            others = [p for p in (self.folder / "in-flight").iterdir() if p.name != me]
            if others or len(list((self.folder / "done").iterdir())) == self.CALLS - 1:
                return
            await asyncio.sleep(0.01)


def max_overlap(intervals: list[tuple[float, float]]) -> int:
    events = sorted([(s, 1) for s, _ in intervals] + [(e, -1) for _, e in intervals])
    most = now = 0
    for _, step in events:  # at equal times an end (-1) sorts before a start
        now += step
        most = max(most, now)
    return most


def same_results_on_both_executors(default: Experiment, tmp_path: Path, cells: int) -> None:
    local = run_experiment(default, tmp_path / "local", progress=False)
    on_ray = run_experiment(default, tmp_path / "ray", progress=False, executor="ray")
    assert len(on_ray.cells) == len(local.cells) == cells
    assert_same_results(tmp_path / "local", tmp_path / "ray")
    assert '"nodes": 1' in on_ray.runs["cluster"].iloc[0]


def test_the_default_experiment_on_its_smallest_dataset_gives_the_local_table_cell_for_cell(
        ray_instance: Any, tmp_path: Path) -> None:
    if "gen-005k-s1" not in read_manifest():
        pytest.skip("needs the shipped datasets/manifest.json")
    default = Experiment.default()
    # Every model, template and window of the default experiment; one of its sessions.
    small = default.model_copy(update={
        "sessions": [default.sessions[0].model_copy(update={"path": "gen-005k-s1"})],
        # the local models' subsets narrowed with it (a name outside the sessions is refused)
        "models": [m.model_copy(update={"sessions": ["gen-005k-s1"]}) if m.sessions else m
                   for m in default.models]})
    same_results_on_both_executors(small, tmp_path, 40)


@pytest.mark.slow
def test_the_whole_default_experiment_gives_the_local_table_cell_for_cell(
        ray_instance: Any, tmp_path: Path) -> None:
    if not read_manifest():
        pytest.skip("needs the shipped datasets/manifest.json")
    # the extractive baseline on every shipped session, the 4 local model entries on the 6
    # they were recorded on; x 4 templates x 2 windows
    cells = (len(read_manifest()) + 4 * 6) * 4 * 2
    same_results_on_both_executors(Experiment.default(), tmp_path, cells)


def test_a_worker_killed_mid_cell_loses_only_that_try_and_nothing_is_billed_twice(
        ray_instance: Any, tmp_path: Path) -> None:
    write_sessions(tmp_path, 4)
    exp = Experiment.from_dict({"name": "kill", "sessions": ["s*.json"], "models": ["extractive"],
                                "repeats": 2, "concurrency": 2, "base_dir": str(tmp_path)})
    cells = expand_cells(exp)
    victim = cells[2].cell_id
    folder = str(tmp_path)
    results = run_experiment(exp, tmp_path / "run", progress=False, executor="ray",
                             model_factory=lambda cell: KillOnce(folder, cell.cell_id, victim))
    killed_pid = int((tmp_path / "killed").read_text())
    paid = (tmp_path / "paid.log").read_text().split()
    assert results.status == "finished"
    assert sorted(results.cells["cell_id"]) == sorted(c.cell_id for c in cells)
    assert set(results.cells["status"]) == {"ok"}
    assert sorted(paid[0::2]) == sorted(c.cell_id for c in cells)  # one completed call each
    # The victim's one completed call came from the retry, not the killed process (which may
    # have completed an earlier cell's call before it took the victim: workers are reused).
    assert dict(zip(paid[0::2], paid[1::2], strict=True))[victim] != str(killed_pid)
    db = sqlite3.connect(tmp_path / "run" / "results.sqlite")
    attempts = db.execute("SELECT cell_id, outcome, task_attempt, cost, error FROM attempts "
                          "ORDER BY cell_id, task_attempt").fetchall()
    # Try 1 normally; later if Ray also had to retry a start that failed under load.
    lost, kept = [a[1:] for a in attempts if a[0] == victim]
    assert lost == ("lost", 0, None, LOST_UNKNOWN), (victim, attempts, paid)
    assert (kept[0], kept[1] >= 1, kept[2:]) == ("ok", True, (0.001, None)), (victim, attempts)
    assert sorted(a[1:4] for a in attempts if a[0] != victim) == [("ok", 0, 0.001)] * 7, (
        victim, attempts, paid)
    # Billed = exactly the calls the provider completed, each once.
    total = db.execute("SELECT SUM(cost), SUM(billed_input_tokens) FROM cells").fetchone()
    assert (round(total[0], 6), total[1]) == (round(len(cells) * 0.001, 6), len(cells) * 100)


def test_the_concurrency_limits_hold_across_workers(ray_instance: Any, tmp_path: Path) -> None:
    write_sessions(tmp_path, 4)
    for folder in ("in-flight", "done"):
        (tmp_path / folder).mkdir()
    exp = Experiment.from_dict({
        "name": "limits", "sessions": ["s*.json"], "base_dir": str(tmp_path), "concurrency": 2,
        "models": [{"model": "extractive", "name": "a", "concurrency": 1},
                   {"model": "extractive", "name": "b"}],
        # Four cell tasks fit on the two CPUs at once; only the coordinator stops a third call.
        "executor": {"kind": "ray", "cpus_per_cell": 0.5}})
    results = run_experiment(exp, tmp_path / "run", progress=False,
                             model_factory=lambda cell: Timed(str(tmp_path), cell.model))
    calls = [line.split() for line in (tmp_path / "calls.log").read_text().splitlines()]
    assert len(results.cells) == len(calls) == Timed.CALLS
    assert set(results.cells["status"]) == {"ok"}
    intervals = [(float(c[2]), float(c[3])) for c in calls]
    assert max_overlap(intervals) == 2  # two at once (every b call waited for a partner)...
    assert max_overlap([i for c, i in zip(calls, intervals, strict=True) if c[0] == "a"]) == 1
    assert len({c[1] for c in calls}) >= 2  # ...so two worker processes took part


def test_identical_cached_prompts_are_paid_once_and_recorded_by_the_driver_side(
        ray_instance: Any, tmp_path: Path) -> None:
    write_sessions(tmp_path, 2)
    recordings = tmp_path / "rec" / "responses.db"
    exp = Experiment.from_dict({
        "name": "dedup", "sessions": ["s*.json"], "models": ["extractive"], "repeats": 3,
        "concurrency": 4, "cache": {"mode": "rw", "path": str(recordings)},
        "base_dir": str(tmp_path)})
    results = run_experiment(exp, tmp_path / "run", progress=False, executor="ray")
    assert len(results.cells) == 6 and set(results.cells["status"]) == {"ok"}
    attempts = results.attempts
    misses = attempts[attempts["cache_hit"] == 0]
    assert sorted(misses["prompt_hash"]) == sorted(set(attempts["prompt_hash"]))
    assert len(attempts[attempts["cache_hit"] == 1]) == len(attempts) - len(misses) == 4
    db = sqlite3.connect(recordings)
    assert sorted(r[0] for r in db.execute("SELECT prompt_hash FROM responses")) == sorted(
        misses["prompt_hash"])


def test_calls_are_shared_across_workers_and_runs_and_every_call_is_sent_with_sharing_off(
        ray_instance: Any, tmp_path: Path) -> None:
    from workbench.models import SharedCalls

    write_sessions(tmp_path, 2)
    base = {"name": "share", "sessions": ["s*.json"], "models": ["extractive"],
            "windows": ["32k", "none"], "concurrency": 4, "base_dir": str(tmp_path),
            "executor": {"kind": "ray", "cpus_per_cell": 0.5}}

    def factory(cell: Any) -> ScriptedModel:
        return ScriptedModel([REPLY], usage=USAGE, latency=0.05)

    def run(templates: list[str], out: str, share_calls: Any) -> Any:
        return run_experiment(Experiment.from_dict({**base, "templates": templates}),
                              tmp_path / out, progress=False, model_factory=factory,
                              share_calls=share_calls)

    def calls(results: Any) -> tuple[int, int, float]:
        cells = results.cells
        assert set(cells["cost"]) == {0.001}  # what each cell's summary cost, paid or shared
        return (int(cells["calls_made"].sum()), int(cells["calls_shared"].sum()),
                round(float(cells["spent_cost"].sum()), 6))

    shared = SharedCalls()  # one table over two runs, as the tuner's rungs use it
    first = run(["default"], "a", shared)
    assert calls(first) == (2, 2, 0.002)  # per session: one window calls, the other shares it
    billed = first.attempts[first.attempts["shared"] == 0]
    # A summary-only variant in the next run sends nothing: the first run's calls answer it.
    second = run(["top3-intent"], "b", shared)
    assert calls(second) == (0, 4, 0.0)
    assert set(second.attempts["shared_from"]) == set(billed["attempt_id"])
    assert (shared.calls_made, shared.calls_shared) == (2, 6)
    off = run(["default"], "c", False)
    assert calls(off) == (4, 0, 0.004)
    assert list(off.attempts["shared"]) == [0] * 4


def test_the_budget_stops_the_same_cells_as_the_local_executor(
        ray_instance: Any, tmp_path: Path) -> None:
    write_sessions(tmp_path, 6)
    exp = Experiment.from_dict({"name": "budget", "sessions": ["s*.json"],
                                "models": ["extractive"], "concurrency": 1,
                                "budget": {"max_cost": 0.0025}, "base_dir": str(tmp_path)})

    def factory(cell: Any) -> ScriptedModel:
        return ScriptedModel([REPLY], usage=USAGE)

    local = run_experiment(exp, tmp_path / "local", progress=False, model_factory=factory)
    on_ray = run_experiment(exp, tmp_path / "ray", progress=False, model_factory=factory,
                            executor="ray")
    assert (local.status, len(local.cells)) == ("budget_reached", 3)
    assert (on_ray.status, len(on_ray.cells)) == ("budget_reached", 3)


def test_the_run_command_takes_the_executor_flag_and_prints_the_usual_table(
        ray_instance: Any, tmp_path: Path) -> None:
    from click.testing import CliRunner

    from workbench.cli import cli

    write_sessions(tmp_path, 2)
    spec = tmp_path / "e.toml"
    spec.write_text('name = "cli"\nsessions = ["s*.json"]\nmodels = ["extractive"]\n')
    result = CliRunner().invoke(cli, ["run", str(spec), "--executor", "ray", "--no-progress",
                                      "--out", str(tmp_path / "run")])
    assert result.exit_code == 0, result.output
    assert "(2 cells, 0 failed, 0 errors, status finished)" in result.output
    lines = result.output.splitlines()
    header = next(i for i, line in enumerate(lines) if line.split()[:3] == ["template", "model",
                                                                           "window"])
    assert "extractive" in lines[header + 2]  # the usual table (labels, units), its first row
    db = sqlite3.connect(tmp_path / "run" / "results.sqlite")
    assert db.execute("SELECT executor FROM runs").fetchall() == [("ray",)]


def test_a_factory_ray_cannot_ship_is_a_config_error_and_the_run_is_marked_interrupted(
        ray_instance: Any, tmp_path: Path) -> None:
    import threading

    from workbench.errors import ConfigError

    write_sessions(tmp_path, 1)
    exp = Experiment.from_dict({"name": "unshippable", "sessions": ["s*.json"],
                                "models": ["extractive"], "base_dir": str(tmp_path)})
    lock = threading.Lock()  # locks cannot be pickled

    def factory(cell: Any) -> ScriptedModel:
        with lock:
            return ScriptedModel([REPLY], usage=USAGE)

    with pytest.raises(ConfigError, match="model_factory cannot be sent to Ray workers"):
        run_experiment(exp, tmp_path / "run", progress=False, model_factory=factory,
                       executor="ray")
    db = sqlite3.connect(tmp_path / "run" / "results.sqlite")
    assert db.execute("SELECT executor, status FROM runs").fetchall() == [("ray", "interrupted")]


def test_a_cluster_that_drops_the_run_s_data_is_not_blamed_on_the_factory(
        ray_instance: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import ray

    from workbench.errors import ConfigError, WorkbenchError

    write_sessions(tmp_path, 1)
    exp = Experiment.from_dict({"name": "dropped", "sessions": ["s*.json"],
                                "models": ["extractive"], "base_dir": str(tmp_path)})

    def dropped(value: object) -> None:  # what Ray Client raises once its connection broke
        raise ConnectionError("Request can't be sent because the Ray client has already been "
                              "disconnected due to an error")

    monkeypatch.setattr(ray, "put", dropped)
    with pytest.raises(WorkbenchError) as caught:
        run_experiment(exp, tmp_path / "run", progress=False,
                       model_factory=lambda cell: ScriptedModel([REPLY], usage=USAGE),
                       executor="ray")
    assert not isinstance(caught.value, ConfigError)
    assert str(caught.value) == (
        "the Ray cluster did not take the run's data (Request can't be sent because the Ray "
        "client has already been disconnected due to an error); run the same command again: "
        "it resumes, and finished cells are not run or billed again")
    db = sqlite3.connect(tmp_path / "run" / "results.sqlite")
    assert db.execute("SELECT executor, status FROM runs").fetchall() == [("ray", "interrupted")]


def test_a_cell_whose_every_try_dies_is_an_error_row_and_the_run_goes_on(
        ray_instance: Any, tmp_path: Path) -> None:
    write_sessions(tmp_path, 3)
    exp = Experiment.from_dict({"name": "no-retry", "sessions": ["s*.json"],
                                "models": ["extractive"], "base_dir": str(tmp_path),
                                "executor": {"kind": "ray", "max_retries": 0}})
    victim = expand_cells(exp)[1].cell_id
    folder = str(tmp_path)
    results = run_experiment(exp, tmp_path / "run", progress=False,
                             model_factory=lambda cell: KillOnce(folder, cell.cell_id, victim))
    assert results.status == "finished" and len(results.cells) == 3
    by_id = results.cells.set_index("cell_id")
    assert by_id.loc[victim, "status"] == "error"
    assert by_id.loc[victim, "error_type"].startswith("WorkerCrashedError")
    assert by_id.loc[victim, "outcome_kind"] == "error"  # infrastructure, as a local error row
    assert by_id.loc[victim, "error_class"]
    assert sorted(by_id["status"]) == ["error", "ok", "ok"]
    db = sqlite3.connect(tmp_path / "run" / "results.sqlite")
    assert db.execute("SELECT outcome, task_attempt, cost, error FROM attempts WHERE cell_id = ?",
                      (victim,)).fetchall() == [("lost", 0, None, LOST_UNKNOWN)]
