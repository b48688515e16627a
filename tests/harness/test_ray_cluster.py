"""The Ray executor on a real multi-node cluster started on this machine: a head and two worker
nodes of one CPU each (`ray.cluster_utils.Cluster`, private ports and temp dir), reached the two
ways the README gives, `ray://` through Ray Client and `--address auto` from a process on the
machine; the default experiment's smallest dataset gives the local table cell for cell, on more
than one node; a worker node killed mid-run loses no cell and bills no call twice; nothing of
the cluster is left running afterwards.

Every wait is bounded and generous: the machine may be busy. Suites run at once on this machine
take turns on Ray Client (`CLIENT_LOCK` says why).
"""

from __future__ import annotations

import asyncio
import fcntl
import json
import os
import shutil
import socket
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.harness.ray_compare import assert_same_results
from workbench.compaction import Usage
from workbench.harness import Experiment, Results, expand_cells, run_experiment
from workbench.harness.experiment._cells import read_manifest
from workbench.harness.run.executors._ray import (
    CLIENT_RETRY_MESSAGE,
    LOST_UNKNOWN,
)
from workbench.messages import Message
from workbench.sessions import Session
from workbench.testing import ScriptedModel

ray = pytest.importorskip("ray", reason="needs the ray extra: pip install \"compaction-workbench[ray]\"")
pytest.importorskip("grpc", reason="Ray Client needs ray[client]: pip install \"compaction-workbench[ray]\"")

pytestmark = pytest.mark.cluster

NODE_SECONDS = 180.0
"""At most this long for the three nodes to register."""
RUN_SECONDS = 600.0
"""At most this long for one run of the workbench against the cluster."""
EXIT_SECONDS = 60.0
"""At most this long for the cluster's processes to exit after the shutdown."""
CLIENT_CONNECT_SECONDS = "30"
"""Ray Client's first wait for the head (``RAY_CLIENT_INITIAL_CONNECTION_TIMEOUT_S``; Ray's
default, 5, makes three tries of about 35 s in all): the head starts a server process per
connection, which on a loaded 2-core machine beside two other nodes can take longer than that
("ray client connection timeout"). Only these tests' runs wait longer; the workbench leaves
Ray's default to the user."""
CLIENT_LOCK = Path("/tmp/workbench-ray-client.lock")
"""Held, machine-wide, by each of these tests' Ray Client runs (`one_ray_client_run`): two
suites at once on this machine each have a head whose Ray Client proxy starts a server per
connection on a port it picks from the same fixed range (23000-23999, Ray's
``proxier.MIN_SPECIFIC_SERVER_PORT``). A proxy checks that a port is free by binding it and
letting it go, and the server binds it a second or two later; two proxies starting servers in
that window pick the same port, and gRPC binds with ``SO_REUSEPORT``, so both servers listen on
it and one head's proxy may reach the other cluster's server. That connection then runs on
the other cluster and breaks when that cluster stops ("Socket closed", then "Attempted to
reconnect a session that has already been cleaned up"), or two drivers' puts meet in one
server ("Expected to receive a chunk from request with id 6, but found 3 instead"): about one
round in three of two suites at once failed so. One Ray Client run at a time on the machine
lets each proxy see the other's servers bound."""
LOCK_POLL = 0.1
"""How often a run waiting for `CLIENT_LOCK` tries again (seconds)."""
GO_FILE = "go-{node}"
"""The kill test's calls on a node are held until the test writes this file (that node's id)
in the sessions' folder: it never does for the node it kills."""
HOLD_POLL = 0.05
"""How often a held call looks for `GO_FILE` (seconds)."""
REPLY = ('<analysis>ok</analysis>\n```json\n{"user_intent": ["fix app.py"], '
         '"current_work": "editing app.py"}\n```')
USAGE = Usage(model="scripted", input_tokens=100, output_tokens=50, cost=0.001)
RETRIED = CLIENT_RETRY_MESSAGE.split("%s")[1]
"""What the workbench logs when it had to connect to Ray Client again."""


@dataclass
class LocalCluster:
    """The running cluster and how to reach it."""

    cluster: Any
    address: str
    client: str
    head_id: str
    workers: list[Any]
    temp: Path

    def node_ids(self) -> set[str]:
        return {self.head_id, *(w.node_id for w in self.workers)}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def ray_processes(temp: Path) -> list[str]:
    """Processes started for the cluster (they inherit its RAY_TMPDIR; a Ray worker renames
    itself, so its command line cannot tell), as "pid command" lines."""
    found = []
    marker = f"RAY_TMPDIR={temp}".encode()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            if marker in (entry / "environ").read_bytes().split(b"\0"):
                found.append(f"{entry.name} {(entry / 'cmdline').read_bytes()[:120]!r}")
        except OSError:
            continue  # gone meanwhile, or not ours to read
    return found


@pytest.fixture(scope="module")
def cluster() -> Iterator[LocalCluster]:
    """A head (with a Ray Client port) and two worker nodes, one CPU each, on private ports and
    in a private temp dir, so no other Ray on this machine finds or joins it; stopped at the
    end, and checked to have left no process behind."""
    from ray.cluster_utils import Cluster

    if not Path("/proc").is_dir():
        pytest.skip("the leftover-process check reads /proc (Linux)")
    # Short on purpose: Ray's socket paths under it must stay within 107 bytes.
    temp = Path(tempfile.mkdtemp(prefix="wbray-", dir="/tmp"))
    env = pytest.MonkeyPatch()
    # Ray writes the cluster's address under RAY_TMPDIR, where `ray.init()` elsewhere on this
    # machine would find it; and the tests pass the address themselves.
    env.setenv("RAY_TMPDIR", str(temp))
    env.delenv("RAY_ADDRESS", raising=False)
    client_port = free_port()
    made = Cluster()
    try:
        head = made.add_node(wait=False, num_cpus=1, gcs_server_port=free_port(),
                             ray_client_server_port=client_port, include_dashboard=False)
        workers = [made.add_node(wait=False, num_cpus=1) for _ in range(2)]
        made.wait_for_nodes(timeout=NODE_SECONDS)
        yield LocalCluster(made, made.address, f"ray://127.0.0.1:{client_port}", head.node_id,
                           workers, temp)
    finally:
        made.shutdown()
        env.undo()
        deadline = time.monotonic() + EXIT_SECONDS
        while ray_processes(temp) and time.monotonic() < deadline:
            time.sleep(0.5)
        left = ray_processes(temp)
        shutil.rmtree(temp, ignore_errors=True)
        assert not left, f"the cluster left processes running: {left}"


@pytest.fixture(scope="module")
def smallest(tmp_path_factory: pytest.TempPathFactory) -> tuple[Experiment, Path, Path]:
    """The default experiment on its smallest dataset (every model, template and window; the
    whole-session replay left out: it runs on the driver either way), as a spec file, and its
    run on the local executor."""
    if "gen-005k-s1" not in read_manifest():
        pytest.skip("needs the shipped datasets/manifest.json")
    default = Experiment.default()
    small = default.model_copy(update={"replay": None, "sessions": [
        default.sessions[0].model_copy(update={"path": "gen-005k-s1"})],
        # the local models' subsets narrowed with it (a name outside the sessions is refused)
        "models": [m.model_copy(update={"sessions": ["gen-005k-s1"]}) if m.sessions else m
                   for m in default.models]})
    folder = tmp_path_factory.mktemp("smallest")
    spec = folder / "smallest.toml"
    spec.write_text(small.to_toml(), encoding="utf-8")
    run_experiment(small, folder / "local", progress=False)
    return small, spec, folder / "local"


@contextmanager
def one_ray_client_run() -> Iterator[None]:
    """Hold `CLIENT_LOCK` (see there why) for a Ray Client run. Another suite's run holds it
    for about `RUN_SECONDS` at most: the wait for it is bounded at twice that."""
    with open(CLIENT_LOCK, "a", encoding="utf-8") as lock:
        deadline = time.monotonic() + 2 * RUN_SECONDS
        while True:
            try:
                fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                assert time.monotonic() < deadline, f"another Ray Client run kept {CLIENT_LOCK}"
                time.sleep(LOCK_POLL)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def run_command(spec: Path, out: Path, address: str, **env: str) -> subprocess.CompletedProcess:
    """`workbench run SPEC --executor ray --address ADDRESS` in a process of its own (alone on
    this machine's Ray Client, `one_ray_client_run`, when ADDRESS is one)."""
    command = [sys.executable, "-c", "from workbench.cli import main; main()", "run", str(spec),
               "--executor", "ray",
               "--address", address, "--no-progress", "--out", str(out)]
    with one_ray_client_run() if address.startswith("ray://") else nullcontext():
        done = subprocess.run(command, capture_output=True, text=True, timeout=RUN_SECONDS,
                              env={"RAY_CLIENT_INITIAL_CONNECTION_TIMEOUT_S":
                                   CLIENT_CONNECT_SECONDS, **os.environ, **env})
    assert done.returncode == 0, (done.stdout[-3000:], done.stderr[-6000:])
    return done


def ray_client_run(experiment: Experiment, out: Path, address: str) -> Results:
    """`run_experiment` on the cluster over Ray Client, in this process, alone on this
    machine's Ray Client (`one_ray_client_run`)."""
    with one_ray_client_run():
        return run_experiment(experiment, out, progress=False, executor="ray", address=address)


def same_as_local(small: Experiment, local: Path, out: Path, reference: Path) -> None:
    shutil.copytree(local, reference)
    assert_same_results(reference, out)


def attempt_nodes(out: Path) -> list[str | None]:
    db = sqlite3.connect(out / "results.sqlite")
    try:
        return [r[0] for r in db.execute("SELECT node_id FROM attempts")]
    finally:
        db.close()


def cluster_row(out: Path) -> dict[str, Any]:
    db = sqlite3.connect(out / "results.sqlite")
    try:
        (text,) = db.execute("SELECT cluster FROM runs").fetchone()
    finally:
        db.close()
    return dict(json.loads(text))


def test_a_ray_client_run_gives_the_local_table_cell_for_cell_on_more_than_one_node(
        cluster: LocalCluster, smallest: tuple[Experiment, Path, Path], tmp_path: Path) -> None:
    small, spec, local = smallest
    out = tmp_path / "client"
    done = run_command(spec, out, cluster.client)  # the head's first Ray Client connection
    # The head started this connection's server at once: no try had to be repeated.
    assert RETRIED not in done.stderr, done.stderr[-3000:]
    nodes = attempt_nodes(out)
    assert None not in nodes and set(nodes) <= cluster.node_ids()
    assert len(set(nodes)) >= 2, f"every cell ran on one node: {set(nodes)}"
    row = cluster_row(out)
    assert (row["address"], row["nodes"], row["cpus"]) == (cluster.client, 3, 3.0)
    assert row["coordinator_node"] == cluster.head_id  # the driver is no node: the head
    same_as_local(small, local, out, tmp_path / "local")


def write_sessions(folder: Path, count: int) -> None:
    for i in range(count):
        messages = [Message.user(f"fix the bug in app.py (s{i})"),
                    Message.assistant("looking").with_tool_request("t1", "shell", {"command": "ls"}),
                    Message.user().with_tool_response("t1", f"app.py s{i}.txt"),
                    Message.assistant("fixed it")]
        path = folder / f"s{i}.json"
        Session(f"s{i}", "goose-json", str(path), messages).write_goose_json(path)


def recorded(path: Path) -> dict[str, tuple[Any, ...]]:
    """A recording's rows by key, without what is timing (the columns, the reply's time and id)."""
    db = sqlite3.connect(path)
    try:
        rows = db.execute("SELECT key, model, prompt_hash, text, message_json, usage_json, cost, "
                          "refusal, hits FROM responses").fetchall()
    finally:
        db.close()
    return {key: (*rest[:3], {k: v for k, v in json.loads(message).items()
                              if k not in ("created", "id")}, *rest[4:])
            for key, *rest in rows for message in [rest[3]]}


def test_under_ray_client_the_driver_alone_reads_and_writes_the_recording_as_a_local_run_does(
        cluster: LocalCluster, tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    write_sessions(tmp_path, 2)

    def spec(recording: str) -> Experiment:
        return Experiment.from_dict({
            "name": "recorded", "sessions": ["s*.json"], "models": ["cached:extractive"],
            "windows": ["8k", "32k"], "base_dir": str(tmp_path),
            "cache": {"path": str(tmp_path / recording / "responses.db")}})

    for run in ("first", "again"):  # the second run answers every call from the recording
        run_experiment(spec("local"), tmp_path / f"local-{run}", progress=False)
        results = ray_client_run(spec("ray"), tmp_path / f"ray-{run}", cluster.client)
        assert set(results.cells["status"]) == {"ok"} and len(results.cells) == 4
        billed = results.attempts[results.attempts["shared"] == 0]
        assert list(billed["cache_hit"]) == [int(run == "again")] * 2, results.attempts
    # The same rows, the hits of the second run included, whichever executor wrote them.
    on_ray = recorded(tmp_path / "ray" / "responses.db")
    assert len(on_ray) == 2 and {r[-1] for r in on_ray.values()} == {1}
    assert on_ray == recorded(tmp_path / "local" / "responses.db")
    assert RETRIED not in caplog.text  # run after run, each connection started at once


def test_a_run_from_this_machine_with_address_auto_gives_the_local_table_cell_for_cell(
        cluster: LocalCluster, smallest: tuple[Experiment, Path, Path], tmp_path: Path) -> None:
    small, spec, local = smallest
    out = tmp_path / "auto"
    run_command(spec, out, "auto", RAY_ADDRESS=cluster.address)
    nodes = attempt_nodes(out)
    assert set(nodes) <= cluster.node_ids() and len(set(nodes)) >= 2, set(nodes)
    row = cluster_row(out)
    assert (row["address"], row["nodes"], row["coordinator_node"]) == ("auto", 3, cluster.head_id)
    same_as_local(small, local, out, tmp_path / "local")


class LoggedCall(ScriptedModel):
    """A scripted provider that logs, per call, where it started and where it was paid, and
    holds every call until the test lets its node's calls go (`GO_FILE`): each node running a
    cell has a call in flight until the test has killed a worker node, however slow the
    machine is, and the killed node's call is never let go (so it is never paid)."""

    def __init__(self, folder: str, cell_id: str) -> None:
        super().__init__([REPLY], usage=USAGE)
        self.folder, self.cell_id = Path(folder), cell_id

    def node(self) -> str:
        import ray as worker_ray

        return str(worker_ray.get_runtime_context().get_node_id())

    def log(self, name: str) -> None:
        with open(self.folder / name, "a", encoding="utf-8") as log:
            log.write(f"{self.node()} {self.cell_id}\n")

    async def complete(self, system: str, messages: list[Message]) -> Any:
        self.log("started.log")
        go = self.folder / GO_FILE.format(node=self.node())
        while not go.exists():  # held until the test lets this node's calls go
            await asyncio.sleep(HOLD_POLL)
        reply = await super().complete(system, messages)
        self.log("paid.log")  # the provider completed the call: it is billed
        return reply


def logged(folder: Path, name: str) -> list[tuple[str, str]]:
    path = folder / name
    lines = path.read_text(encoding="utf-8").splitlines() if path.exists() else []
    return [(line.split()[0], line.split()[1]) for line in lines]


def kill_a_worker_node_mid_call(cluster: LocalCluster, folder: Path,
                                finished: threading.Event) -> dict[str, Any]:
    """Wait until a call is in flight on a worker node, kill that node (SIGKILL), then let
    the other nodes' held calls go (`GO_FILE`).

    Every call is held until then, so the calls cannot finish before the kill, and the cells
    cannot all run on the head: each node has one CPU and each held cell keeps its node's, so
    the run's three cells in flight are one per node. The killed node's call is never let go:
    it cannot be paid in the moment its process takes to die.
    """
    by_id = {w.node_id: w for w in cluster.workers}
    killed: dict[str, Any] = {}
    deadline = time.monotonic() + RUN_SECONDS
    try:
        while not finished.is_set() and time.monotonic() < deadline:
            assert not logged(folder, "paid.log"), "a call was paid while the calls were held"
            busy = [(n, c) for n, c in logged(folder, "started.log") if n in by_id]
            if busy:
                node, cell = busy[0]
                cluster.cluster.remove_node(by_id[node], allow_graceful=False)
                killed.update(node=node, cell=cell)
                return killed
            time.sleep(HOLD_POLL)
        return killed
    finally:
        for node in cluster.node_ids() - {killed.get("node")}:  # the held calls go on
            (folder / GO_FILE.format(node=node)).write_text("go\n", encoding="utf-8")


def test_killing_a_worker_node_mid_run_loses_no_cell_and_bills_no_call_twice(
        cluster: LocalCluster, tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    write_sessions(tmp_path, 6)  # six prompts: each cell makes its own call
    exp = Experiment.from_dict({
        "name": "node-kill", "sessions": ["s*.json"], "models": ["extractive"],
        "concurrency": 3, "base_dir": str(tmp_path)})
    cells = expand_cells(exp)
    folder = str(tmp_path)
    # Workers cannot import this test module by name: ship its model class by value.
    ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])
    finished = threading.Event()
    outcome: dict[str, Any] = {}

    def drive() -> None:
        try:
            outcome["results"] = run_experiment(
                exp, tmp_path / "run", progress=False, executor="ray", address=cluster.client,
                model_factory=lambda cell: LoggedCall(folder, cell.cell_id))
        except BaseException as exc:  # noqa: BLE001 - reported by the test below
            outcome["error"] = exc
        finally:
            finished.set()

    driver = threading.Thread(target=drive, daemon=True)
    with one_ray_client_run():
        driver.start()
        killed = kill_a_worker_node_mid_call(cluster, tmp_path, finished)
        driver.join(RUN_SECONDS)
    assert not driver.is_alive(), "the run did not finish after the node was killed"
    assert "error" not in outcome, outcome.get("error")
    assert killed, "no call was ever in flight on a worker node"
    assert RETRIED not in caplog.text
    results = outcome["results"]

    # No cell lost: every cell is in the store once, each with a summary.
    assert results.status == "finished"
    assert sorted(results.cells["cell_id"]) == sorted(c.cell_id for c in cells)
    assert set(results.cells["status"]) == {"ok"}
    db = sqlite3.connect(tmp_path / "run" / "results.sqlite")
    attempts = db.execute("SELECT cell_id, outcome, task_attempt, node_id, cost, error "
                          "FROM attempts ORDER BY cell_id, task_attempt").fetchall()
    # The call cut off on the dead node is one lost row of unknown cost, on that node; the
    # cell's kept try ran elsewhere.
    victim = [a[1:] for a in attempts if a[0] == killed["cell"]]
    assert victim[0] == ("lost", 0, killed["node"], None, LOST_UNKNOWN), attempts
    assert victim[-1][0] == "ok" and victim[-1][2] != killed["node"], attempts
    # Nothing billed twice: the store's bill is exactly the calls the provider completed, each
    # once, cell by cell (a call completed on the dead node counts once, as a lost paid row).
    paid = logged(tmp_path, "paid.log")
    per_cell = {c.cell_id: sum(1 for _, cell in paid if cell == c.cell_id) for c in cells}
    billed = dict(db.execute("SELECT cell_id, ROUND(cost / 0.001) FROM cells").fetchall())
    assert billed == {cell: float(n) for cell, n in per_cell.items()}, (billed, paid, attempts)
    total = db.execute("SELECT SUM(billed_input_tokens) FROM cells").fetchone()[0]
    db.close()
    assert total == 100 * len(paid)
