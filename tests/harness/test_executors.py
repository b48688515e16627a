"""The executor seam without a cluster: spec and flags, the missing extra, the local executor's
record in the runs table, and the Ray coordinator's bookkeeping driven directly."""

from __future__ import annotations

import asyncio
import json
import sqlite3
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from workbench.cli import cli
from workbench.compaction import Usage
from workbench.errors import ConfigError
from workbench.harness import Experiment, run_experiment
from workbench.harness.run.executors import RAY_EXTRA_MESSAGE, LocalExecutor, make_executor
from workbench.harness.run.executors._ray import LOST_PAID, LOST_UNKNOWN, _apply_lost
from workbench.harness.run.executors._ray_coordinator import Coordinator
from workbench.messages import Message
from workbench.sessions import Session
from workbench.testing import ScriptedModel

USAGE = Usage(model="m", input_tokens=100, output_tokens=20, cost=0.01)
REPLY = ('<analysis>ok</analysis>\n```json\n{"user_intent": ["fix app.py"], '
         '"current_work": "editing app.py"}\n```')


def write_session(folder: Path, sid: str) -> Path:
    messages = [Message.user(f"fix the bug in app.py ({sid})"), Message.assistant("fixed it")]
    path = folder / f"{sid}.json"
    Session(sid, "goose-json", str(path), messages).write_goose_json(path)
    return path


def experiment(folder: Path, **over: object) -> Experiment:
    return Experiment.from_dict({"name": "t", "sessions": ["s*.json"], "models": ["extractive"],
                                 "base_dir": str(folder), **over})


def scripted() -> object:
    return lambda cell: ScriptedModel([REPLY], usage=USAGE)


def test_the_executor_table_is_read_and_written_back(tmp_path: Path) -> None:
    spec = tmp_path / "e.toml"
    spec.write_text('sessions = ["s.json"]\nmodels = ["extractive"]\n'
                    'executor = { kind = "ray", address = "ray://head:10001", cpus_per_cell = 0.5 }\n')
    exp = Experiment.from_toml(spec)
    assert (exp.executor.kind, exp.executor.address, exp.executor.cpus_per_cell,
            exp.executor.max_retries) == ("ray", "ray://head:10001", 0.5, 3)
    again = tmp_path / "again.toml"
    again.write_text(exp.to_toml())
    assert Experiment.from_toml(again).executor == exp.executor
    assert "executor" not in Experiment.from_dict(
        {"sessions": ["s.json"], "models": ["extractive"]}).to_toml()


def test_unknown_executor_keys_and_an_address_without_ray_are_config_errors(tmp_path: Path) -> None:
    spec = tmp_path / "e.toml"
    spec.write_text('sessions = ["s.json"]\nmodels = ["extractive"]\n'
                    'executor = { kind = "ray", adress = "auto" }\n')
    with pytest.raises(ConfigError, match=r"e\.toml: executor\.adress: Extra inputs are not permitted"):
        Experiment.from_toml(spec)
    with pytest.raises(ConfigError, match=r'executor: an address needs kind = "ray"'):
        Experiment.from_dict({"sessions": ["s.json"], "models": ["extractive"],
                              "executor": {"address": "auto"}})
    with pytest.raises(ConfigError, match="unknown executor 'dask'; use one of local, ray"):
        make_executor("dask")
    with pytest.raises(ConfigError, match="--address 'auto' needs --executor ray"):
        make_executor("local", "auto")


def test_the_ray_executor_without_the_extra_names_the_pip_line(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "ray", None)  # makes `import ray` fail
    with pytest.raises(ConfigError) as info:
        make_executor("ray")
    assert str(info.value) == RAY_EXTRA_MESSAGE
    assert 'pip install "compaction-workbench[ray]"' in RAY_EXTRA_MESSAGE
    write_session(tmp_path, "s1")
    spec = tmp_path / "e.toml"
    spec.write_text(experiment(tmp_path).to_toml())
    result = CliRunner().invoke(cli, ["run", str(spec), "--executor", "ray", "--out",
                                       str(tmp_path / "run"), "--no-progress"])
    assert result.exit_code == 1
    assert 'pip install "compaction-workbench[ray]"' in result.output
    assert not (tmp_path / "run").exists()


def test_the_local_executor_is_the_default_and_the_run_says_so(tmp_path: Path) -> None:
    write_session(tmp_path, "s1")
    out = tmp_path / "run"
    results = run_experiment(experiment(tmp_path), out, model_factory=scripted(), progress=False)
    assert len(results.cells) == 1
    db = sqlite3.connect(out / "results.sqlite")
    executor, cluster = db.execute("SELECT executor, cluster FROM runs").fetchone()
    assert executor == "local" and set(json.loads(cluster)) == {"host"}
    assert db.execute("SELECT task_attempt FROM attempts").fetchall() == [(None,)]
    assert LocalExecutor.kind == "local"


def test_the_first_wave_is_sent_before_the_lookahead_cells_prepare(tmp_path: Path) -> None:
    # Each cell builds its model as it starts preparing: with concurrency 2, the first two
    # calls go out before a third cell starts, and the lookahead then prepares while they are
    # out (its cells are ready when the slots come back).
    write_session(tmp_path, "s1")
    events: list[str] = []

    class Logged(ScriptedModel):
        async def complete(self, system: str,
                           messages: list[Message]) -> tuple[Message, Usage]:
            events.append("call")
            return await super().complete(system, messages)

    def factory(cell: object) -> ScriptedModel:
        events.append("prepare")
        return Logged([REPLY], usage=USAGE, latency=0.05)

    results = run_experiment(experiment(tmp_path, repeats=6, concurrency=2), tmp_path / "run",
                             model_factory=factory, progress=False)
    assert len(results.cells) == 6 and set(results.cells["status"]) == {"ok"}
    assert events[:5] == ["prepare", "prepare", "call", "call", "prepare"]
    assert events.count("prepare") == events.count("call") == 6


# -- the coordinator, driven as plain asyncio ------------------------------------------------


async def _settle() -> None:
    """Let every task that can go on do so (a waiter still waiting after this never will)."""
    for _ in range(50):
        await asyncio.sleep(0)


async def test_a_retried_cell_inherits_its_slot_so_a_dead_worker_leaks_none() -> None:
    coord = Coordinator(global_limit=1, model_limits={})
    assert await coord.begin_cell("c1", 0) == 0
    # c1's worker dies holding the only slot; its retry still starts at once...
    assert await asyncio.wait_for(coord.begin_cell("c1", 0), 1) == 1
    # ...while another cell waits until the retry ends it.
    other = asyncio.ensure_future(coord.begin_cell("c2", 0))
    await _settle()
    assert not other.done()
    coord.end_cell("c1")
    assert await asyncio.wait_for(other, 1) == 0
    coord.end_cell("c2")
    coord.end_cell("c2")  # idempotent: the slot is not released twice
    assert coord._sem("global", 1)._value == 1


async def test_per_model_limits_hold_beside_the_global_one() -> None:
    coord = Coordinator(global_limit=3, model_limits={0: 1})
    await coord.begin_cell("a", 0)
    second = asyncio.ensure_future(coord.begin_cell("b", 0))
    await coord.begin_cell("c", 1)  # another model still gets a slot
    await _settle()
    assert not second.done()
    coord.end_cell("a")
    assert await asyncio.wait_for(second, 1) == 0


async def test_identical_cached_prompts_in_flight_are_paid_once(tmp_path: Path) -> None:
    coord = Coordinator(global_limit=4, model_limits={})
    cache = str(tmp_path / "responses.db")
    first = await coord.call_begin("c1", 0, "k1", "rw", cache, "m", "p1")
    assert first[0] == "call"
    waiting = asyncio.ensure_future(coord.call_begin("c2", 0, "k1", "rw", cache, "m", "p1"))
    await _settle()
    assert not waiting.done()
    coord.call_end(first[1], "ok", (Message.assistant("the summary"), USAGE.copy(), 12.0),
                   "rw", cache)
    kind, message, usage = await asyncio.wait_for(waiting, 1)
    assert (kind, message.concat_text(), usage.cost) == ("hit", "the summary", 0.01)
    assert coord.stats() == {"paid": 1, "hits": 0, "deduplicated": 1, "refused": 0, "failed": 0,
                             "shared": 0}
    # Replay mode never grants a call: a miss is a miss.
    assert await coord.call_begin("c3", 0, "k2", "replay", cache, "m", "p2") == ("miss",)


async def test_a_failed_call_lets_the_waiter_call_itself(tmp_path: Path) -> None:
    coord = Coordinator(global_limit=4, model_limits={})
    cache = str(tmp_path / "responses.db")
    first = await coord.call_begin("c1", 0, "k1", "rw", cache, "m", "p1")
    waiting = asyncio.ensure_future(coord.call_begin("c2", 0, "k1", "rw", cache, "m", "p1"))
    await _settle()
    coord.call_end(first[1], "error", None, "rw", cache)
    assert (await asyncio.wait_for(waiting, 1))[0] == "call"


async def test_lost_calls_count_what_a_killed_try_paid_and_the_kept_try_did_not_reuse(
        tmp_path: Path) -> None:
    coord = Coordinator(global_limit=2, model_limits={})
    cache = str(tmp_path / "responses.db")
    await coord.begin_cell("c1", 0)
    reused = await coord.call_begin("c1", 0, "k1", "rw", cache, "m", "p1")
    coord.call_end(reused[1], "ok", (Message.assistant("a"), USAGE.copy(), 1.0), "rw", cache)
    uncached = await coord.call_begin("c1", 0, None, "off", None, "m", "p2")
    coord.call_end(uncached[1], "ok", (Message.assistant("b"), USAGE.copy(), 1.0))
    cut = await coord.call_begin("c1", 0, "k3", "rw", cache, "m", "p3")  # worker dies here
    assert await coord.begin_cell("c1", 0) == 1
    # The retry is served k1 from the recording the dead try made, and k3 is free again.
    assert (await coord.call_begin("c1", 1, "k1", "rw", cache, "m", "p1"))[0] == "hit"
    assert (await coord.call_begin("c2", 0, "k3", "rw", cache, "m", "p3"))[0] == "call"
    lost = coord.lost_calls("c1", 1)
    assert [(c["try_no"], c["seq"], c["prompt_hash"], c["usage"] is not None) for c in lost] == [
        (0, 2, "p2", True), (0, 3, "p3", False)]
    assert cut[0] == "call"
    # Every try died: all of its paid calls are lost.
    assert [c["prompt_hash"] for c in coord.lost_calls("c1", None)] == ["p1", "p2", "p3"]


async def test_a_shared_prompt_is_sent_once_cluster_wide_and_paid_by_its_first_caller(
        tmp_path: Path) -> None:
    coord = Coordinator(global_limit=4, model_limits={}, share_calls=True)
    first = await coord.call_begin("c1", 0, None, "off", None, "m", "p1", "s1")
    assert first[0] == "call"
    waiting = asyncio.ensure_future(coord.call_begin("c2", 0, None, "off", None, "m", "p1", "s1"))
    await _settle()
    assert not waiting.done()
    call_id = coord.call_end(first[1], "ok", (Message.assistant("the summary"), USAGE.copy(), 5.0))
    assert isinstance(call_id, str) and len(call_id) == 26
    kind, message, usage = await asyncio.wait_for(waiting, 1)
    assert (kind, message.concat_text()) == ("shared", "the summary")
    # The sharer's usage is what the answer cost, flagged as paid by the call it names.
    assert (usage.input_tokens, usage.output_tokens, usage.cost, usage.extra) == (
        100, 20, 0.01, {"shared": True, "shared_from": call_id})
    # Later in the run: answered from the table, without waiting; another scope calls.
    assert (await coord.call_begin("c3", 0, None, "off", None, "m", "p1", "s1"))[0] == "shared"
    assert (await coord.call_begin("c4", 0, None, "off", None, "m", "p1", "s2"))[0] == "call"
    answers, made, shared = coord.shared_state()
    assert (list(answers), made, shared) == (["s1"], 2, 2)
    assert coord.stats()["shared"] == 2
    # The next run of the same table (a tuner's rung) starts from these answers.
    seeded = Coordinator(global_limit=4, model_limits={}, share_calls=True, answers=answers)
    again = await seeded.call_begin("c9", 0, None, "off", None, "m", "p1", "s1")
    assert again[0] == "shared" and again[2].extra["shared_from"] == call_id
    assert seeded.shared_state() == ({}, 0, 1)


async def test_a_cached_leader_keeps_its_usage_and_a_failed_or_dead_one_is_not_shared(
        tmp_path: Path) -> None:
    coord = Coordinator(global_limit=4, model_limits={}, share_calls=True)
    cache = str(tmp_path / "responses.db")
    first = await coord.call_begin("c1", 0, "k1", "rw", cache, "m", "p1", "s1")
    coord.call_end(first[1], "ok", (Message.assistant("a"), USAGE.copy(), 1.0), "rw", cache)
    # Another repeat (scope) hits the recording and leads its own share group, billed as a hit.
    kind, _, usage = await coord.call_begin("c2", 0, "k1", "rw", cache, "m", "p1", "s2")
    assert (kind, usage.cost, sorted(usage.extra)) == ("hit", 0.01, ["call_id"])
    # A failed leader: its waiter sends its own call.
    failing = await coord.call_begin("c3", 0, None, "off", None, "m", "p3", "s3")
    waiter = asyncio.ensure_future(coord.call_begin("c4", 0, None, "off", None, "m", "p3", "s3"))
    await _settle()
    assert coord.call_end(failing[1], "error") is None
    assert (await asyncio.wait_for(waiter, 1))[0] == "call"
    # A leader whose worker dies: its cell's retry frees the waiter, which becomes the leader.
    await coord.begin_cell("c5", 0)
    await coord.call_begin("c5", 0, None, "off", None, "m", "p5", "s5")
    waiter = asyncio.ensure_future(coord.call_begin("c6", 0, None, "off", None, "m", "p5", "s5"))
    await _settle()
    assert not waiter.done()
    assert await coord.begin_cell("c5", 0) == 1
    assert (await asyncio.wait_for(waiter, 1))[0] == "call"
    # A waiter whose own worker died meanwhile never leads: it steps aside for the retry.
    leader = await coord.call_begin("c7", 0, None, "off", None, "m", "p7", "s7")
    await coord.begin_cell("c8", 0)
    zombie = asyncio.ensure_future(coord.call_begin("c8", 0, None, "off", None, "m", "p7", "s7"))
    await _settle()
    assert await coord.begin_cell("c8", 0) == 1
    coord.call_end(leader[1], "error")
    assert await asyncio.wait_for(zombie, 1) == ("gone",)
    assert (await coord.call_begin("c8", 1, None, "off", None, "m", "p7", "s7"))[0] == "call"


async def test_with_sharing_off_every_call_is_sent_and_counted() -> None:
    coord = Coordinator(global_limit=4, model_limits={}, share_calls=False)
    for cell in ("c1", "c2"):
        assert (await coord.call_begin(cell, 0, None, "off", None, "m", "p1", None))[0] == "call"
    assert coord.shared_state() == ({}, 2, 0)


async def test_a_paid_call_of_a_killed_try_keeps_the_id_its_sharers_name() -> None:
    coord = Coordinator(global_limit=2, model_limits={}, share_calls=True)
    await coord.begin_cell("c1", 0)
    paid = await coord.call_begin("c1", 0, None, "off", None, "m", "p1", "s1")
    call_id = coord.call_end(paid[1], "ok", (Message.assistant("a"), USAGE.copy(), 1.0))
    assert await coord.begin_cell("c1", 0) == 1  # the worker died after the call
    assert (await coord.call_begin("c1", 1, None, "off", None, "m", "p1", "s1"))[0] == "shared"
    lost = coord.lost_calls("c1", 1)
    assert [(c["seq"], c["usage"].cost, c["call_id"]) for c in lost] == [(1, 0.01, call_id)]


def test_lost_calls_become_attempt_rows_and_known_costs_join_the_cell() -> None:
    from workbench.harness.results._cell_result import AttemptResult, CellResult

    result = CellResult(cell_id="c1", run_id="r", model="m", billed_input_tokens=100,
                        billed_output_tokens=20, cost=0.01,
                        attempt_results=[AttemptResult(attempt_no=1, outcome="ok", cost=0.01)])
    _apply_lost(result, [{"try_no": 0, "seq": 1, "model": "m", "prompt_hash": "p",
                          "usage": USAGE.copy()},
                         {"try_no": 0, "seq": 2, "model": None, "prompt_hash": "q",
                          "usage": None}], 1)
    assert [(a.outcome, a.task_attempt, a.cost, a.error)
            for a in result.attempt_results] == [("ok", 1, 0.01, None),
                                                 ("lost", 0, 0.01, LOST_PAID),
                                                 ("lost", 0, None, LOST_UNKNOWN)]
    assert (result.billed_input_tokens, result.billed_output_tokens, result.cost) == \
        (200, 40, 0.02)


async def test_after_a_stop_new_cells_are_refused_but_started_ones_may_retry() -> None:
    coord = Coordinator(global_limit=1, model_limits={})
    assert await coord.begin_cell("c1", 0) == 0
    waiting = asyncio.ensure_future(coord.begin_cell("c2", 0))
    await _settle()
    coord.stop("cost $0.0030 >= max_cost $0.0025")
    assert await asyncio.wait_for(coord.begin_cell("c1", 0), 1) == 1  # c1 had started
    coord.end_cell("c1")
    assert await asyncio.wait_for(waiting, 1) == -1  # got the slot after the stop: gives it back
    assert await coord.begin_cell("c3", 0) == -1
    assert coord._sem("global", 1)._value == 1 and coord._slots == {}


def test_an_address_without_the_ray_executor_is_refused_by_the_command(tmp_path: Path) -> None:
    write_session(tmp_path, "s1")
    spec = tmp_path / "e.toml"
    spec.write_text(experiment(tmp_path).to_toml())
    result = CliRunner().invoke(cli, ["run", str(spec), "--address", "auto", "--out",
                                      str(tmp_path / "run")])
    assert result.exit_code == 1
    assert "Error: --address 'auto' needs --executor ray" in result.output


async def test_a_rate_limited_call_pauses_that_model_for_every_worker(tmp_path: Path) -> None:
    coord = Coordinator(global_limit=4, model_limits={})
    now, waited = [100.0], []

    async def sleep(seconds: float) -> None:  # a clock that moves only when someone waits
        waited.append(round(seconds, 6))
        now[0] += seconds

    coord.clock, coord.sleep = lambda: now[0], sleep
    first = await coord.call_begin("c1", 0, None, "off", None, "openai/gpt", "p1")
    coord.call_end(first[1], "rate_limited", 0.3)
    other_model = await coord.call_begin("c2", 0, None, "off", None, "anthropic/claude", "p2")
    assert other_model[0] == "call" and waited == []  # another model is not held off
    again = await coord.call_begin("c3", 0, None, "off", None, "openai/gpt", "p3")
    assert again[0] == "call" and waited == [0.3]  # the provider's retry-after, then the call
    assert coord.stats()["failed"] == 1
