"""The Ray executor's driver side without a cluster: how it connects (a private instance stays
private, a Ray Client start the head failed is tried again), where the coordinator goes, and the
recording that travels to the coordinator and back instead of being opened on the cluster."""

from __future__ import annotations

import logging
import os
import sqlite3
import sys
from pathlib import Path
from typing import Any

import pytest

from workbench.compaction import Usage
from workbench.errors import ConfigError
from workbench.harness.run.executors import _ray
from workbench.harness.run.executors._ray import (
    CLIENT_TRIES,
    HEAD_RESOURCE,
    RayExecutor,
    _apply_lost,
    _connect,
)
from workbench.harness.run.executors._ray_coordinator import Coordinator
from workbench.harness.run.executors._ray_recording import open_recordings, snapshot, write_back
from workbench.messages import Message
from workbench.models._cache import ResponseCache

USAGE = Usage(model="m", input_tokens=100, output_tokens=20, cost=0.01)
PROXY_FAILED = ("Initialization failure from server:\nTraceback (most recent call last):\n"
                "RuntimeError: Starting Ray client server failed. See "
                "ray_client_server_23000.err for detailed logs.")


class FakeRay:
    """What `RayExecutor.start` and `_connect` ask of the ``ray`` module."""

    __version__ = "2.60.0"

    def __init__(self, failures: list[BaseException] | None = None) -> None:
        self.failures = list(failures or [])
        self.inits: list[dict[str, Any]] = []
        self.initialized = False

    def is_initialized(self) -> bool:
        return self.initialized

    def init(self, **kwargs: Any) -> None:
        self.inits.append(kwargs)
        if self.failures:
            raise self.failures.pop(0)
        self.initialized = True

    def nodes(self) -> list[dict[str, Any]]:
        return [{"NodeID": "w1", "Alive": True, "Resources": {"CPU": 1.0}},
                {"NodeID": "gone", "Alive": False, "Resources": {HEAD_RESOURCE: 1.0}},
                {"NodeID": "h1", "Alive": True, "Resources": {"CPU": 1.0, HEAD_RESOURCE: 1.0}}]

    def cluster_resources(self) -> dict[str, float]:
        return {"CPU": 2.0}


@pytest.fixture
def no_pause(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_ray, "CLIENT_RETRY_PAUSE", 0.0)


def test_a_private_instance_is_started_whatever_ray_address_says_and_the_head_is_named(
        monkeypatch: pytest.MonkeyPatch) -> None:
    fake = FakeRay()
    monkeypatch.setitem(sys.modules, "ray", fake)
    monkeypatch.setenv("RAY_ADDRESS", "10.0.0.1:6379")
    described = RayExecutor().start()
    # "local", not None: None would join the cluster RAY_ADDRESS (or a `ray start`) names.
    assert fake.inits == [{"address": "local", "include_dashboard": False,
                           "log_to_driver": False}]
    assert described == {"address": "local", "ray_version": "2.60.0", "nodes": 2, "cpus": 2.0,
                         "coordinator_node": "h1"}


def test_a_ray_client_start_the_head_failed_is_tried_again_and_said(
        no_pause: None, caplog: pytest.LogCaptureFixture) -> None:
    fake = FakeRay([ConnectionAbortedError(PROXY_FAILED)])
    with caplog.at_level(logging.WARNING, logger="workbench.harness"):
        _connect(fake, "ray://head:10001", {})
    assert [i["address"] for i in fake.inits] == ["ray://head:10001"] * 2
    assert caplog.messages == [
        "Ray Client at ray://head:10001 could not start a server for this connection (try 1 of "
        "3), trying again: RuntimeError: Starting Ray client server failed. See "
        "ray_client_server_23000.err for detailed logs."]


def test_a_ray_client_head_that_never_starts_a_server_is_a_config_error_naming_the_fix(
        no_pause: None) -> None:
    fake = FakeRay([ConnectionAbortedError(PROXY_FAILED)] * CLIENT_TRIES)
    with pytest.raises(ConfigError) as info:
        _connect(fake, "ray://head:10001", {})
    assert len(fake.inits) == CLIENT_TRIES
    message = str(info.value)
    assert message.startswith("cannot connect to Ray Client at ray://head:10001: the head could "
                              "not start a server for this connection, 3 times (RuntimeError: "
                              "Starting Ray client server failed.")
    assert "grpc/grpc#43055" in message and "GRPC_ENABLE_FORK_SUPPORT=false" in message


def test_other_connection_errors_are_config_errors_at_once(no_pause: None) -> None:
    fake = FakeRay([ConnectionError("Could not find any running Ray instance.")])
    with pytest.raises(ConfigError, match="^cannot start Ray on auto: Could not find any"):
        _connect(fake, "auto", {})
    fake = FakeRay([ConnectionAbortedError("refused")])  # not Ray Client: no second try
    with pytest.raises(ConfigError, match="^cannot start Ray on 10.0.0.1:6379: refused"):
        _connect(fake, "10.0.0.1:6379", {})
    assert len(fake.inits) == 1
    fake = FakeRay([RuntimeError("Version mismatch: the client has Ray 2.60.0, the head 2.9.0")])
    with pytest.raises(ConfigError, match="^cannot start Ray on ray://h:10001: Version mismatch"):
        _connect(fake, "ray://h:10001", {})


def recording_with_one_answer(path: Path) -> ResponseCache:
    cache = ResponseCache(path)
    cache.put("k1", model="m", prompt_sha256="p1", message=Message.assistant("recorded"),
              usage=USAGE.copy(), latency_ms=3.0)
    cache.put_tokens("n1", "gemma3-270m", 512)
    return cache


async def test_the_coordinator_answers_from_the_shipped_recording_and_opens_no_file(
        tmp_path: Path) -> None:
    driver = recording_with_one_answer(tmp_path / "driver" / "responses.db")
    rows, counts = snapshot(driver)
    assert counts == {"n1": 512}
    # The path names the driver's file; on the coordinator's node nothing need be there.
    path = str(tmp_path / "elsewhere" / "responses.db")
    coord = Coordinator(global_limit=2, model_limits={}, recordings={path: rows})
    kind, message, usage = await coord.call_begin("c1", 0, "k1", "rw", path, "m", "p1")
    assert (kind, message.concat_text(), usage.cost) == ("hit", "recorded", 0.01)
    granted = await coord.call_begin("c1", 0, "k2", "rw", path, "m", "p2")
    coord.call_end(granted[1], "ok", (Message.assistant("new"), USAGE.copy(), 5.0), "rw", path)
    refused = await coord.call_begin("c1", 0, "k3", "rw", path, "m", "p3")
    coord.call_end(refused[1], "refusal", "prompt too long", "rw", path)
    # Later lookups see what the run recorded, before the driver has written it anywhere.
    assert (await coord.call_begin("c2", 0, "k2", "rw", path, "m", "p2"))[:2][0] == "hit"
    batches = coord.end_cell("c1")
    assert list(batches) == [path]
    assert [r["key"] for r in batches[path].rows] == ["k2", "k3"]
    assert batches[path].hits == {"k1": 1, "k2": 1}
    assert coord.drain() == {}  # handed over once
    assert not (tmp_path / "elsewhere").exists()
    # The driver writes it to its own file, as a local run would have.
    write_back(driver, batches[path], [("n2", "gemma3-270m", 64)])
    assert driver.get("k3", count_hit=False).message == "prompt too long"
    assert driver.get("k2", count_hit=False)[0].concat_text() == "new"
    assert driver.get_tokens("n2") == 64
    db = sqlite3.connect(driver.path)
    assert dict(db.execute("SELECT key, hits FROM responses")) == {"k1": 1, "k2": 1, "k3": 0}


async def test_a_replay_counts_no_hits_and_sends_nothing_back(tmp_path: Path) -> None:
    rows, _ = snapshot(recording_with_one_answer(tmp_path / "r.db"))
    coord = Coordinator(global_limit=1, model_limits={}, recordings={"r": rows})
    assert (await coord.call_begin("c1", 0, "k1", "replay", "r", "m", "p1"))[0] == "hit"
    assert await coord.call_begin("c1", 0, "k9", "replay", "r", "m", "p9") == ("miss",)
    assert coord.end_cell("c1") == {}


def test_recordings_open_for_the_strongest_mode_and_a_read_only_one_is_never_written(
        tmp_path: Path) -> None:
    path = tmp_path / "shared" / "responses.db"
    recording_with_one_answer(path).close()
    assert open_recordings([("off", None), ("replay", str(path)),
                            ("rw", str(path))])[str(path)].read_only is False
    frozen = tmp_path / "frozen"
    frozen.mkdir()
    (frozen / "responses.db").write_bytes(path.read_bytes())
    os.chmod(frozen / "responses.db", 0o444)
    os.chmod(frozen, 0o555)
    try:
        target = str(frozen / "responses.db")
        with pytest.raises(ConfigError, match="is read-only: replay it"):
            open_recordings([("rw", target)])
        cache = open_recordings([("replay", target)])[target]
        assert cache.read_only
        before = (frozen / "responses.db").read_bytes()
        write_back(cache, None, [("n9", "gemma3-270m", 1)])
        assert (frozen / "responses.db").read_bytes() == before
        assert sorted(p.name for p in frozen.iterdir()) == ["responses.db"]
    finally:
        os.chmod(frozen, 0o755)


async def test_every_attempt_names_its_node_and_a_lost_call_the_node_of_its_try() -> None:
    from workbench.harness.results._cell_result import AttemptResult, CellResult

    coord = Coordinator(global_limit=1, model_limits={})
    assert await coord.begin_cell("c1", 0, "node-a") == 0
    await coord.call_begin("c1", 0, None, "off", None, "m", "p1")  # node-a dies mid-call
    assert await coord.begin_cell("c1", 0, "node-b") == 1
    lost = coord.lost_calls("c1", 1)
    assert [(c["try_no"], c["node_id"]) for c in lost] == [(0, "node-a")]
    result = CellResult(cell_id="c1", run_id="r", model="m", cost=0.01,
                        attempt_results=[AttemptResult(attempt_no=1, outcome="ok")])
    _apply_lost(result, lost, 1, "node-b")
    assert [(a.outcome, a.task_attempt, a.node_id) for a in result.attempt_results] == [
        ("ok", 1, "node-b"), ("lost", 0, "node-a")]
