"""Executors benchmark: cells per second, local asyncio vs Ray, on the same 200 ms scripted model.

Run: ``python bench/bench_executors.py [--cells 40 160] [--concurrency 8] [--cpus 2] [--nodes 2]``.
Offline; needs the ``ray`` extra for the Ray rows. Every run compacts the shipped
``gen-005k-s1`` dataset (or a generated stand-in) with a `ScriptedModel` that sleeps 200 ms per
call, so the ideal rate is ``concurrency / 0.2`` cells/s.

Rows:
- ``local``: the default executor, all cells on one event loop in this process.
- ``ray cold``: the first Ray run on a fresh local instance (worker processes start and import
  the workbench while cells wait), ``cpus_per_cell = 1``.
- ``ray cpus_per_cell=C``: warm workers (after an untimed warm-up run); ``C = 1`` runs one cell per CPU, smaller values pack
  several I/O-bound cells per CPU.
- ``ray N nodes, cpus_per_cell=C``: the same, on a multi-node cluster started on this machine
  (``ray.cluster_utils.Cluster``: a head and N - 1 worker nodes sharing the same ``--cpus``, on
  private ports and temp dir), so cells and their model calls cross between node processes as
  on a real cluster; ``--nodes 0`` skips these rows. On one machine the nodes share its cores,
  so these rows measure what spreading over nodes costs, not what more machines would add.

A second table (``--cpu-cells N``, 0 to skip) runs CPU-bound cells instead: the largest shipped
dataset with a zero-latency model, so each cell is token counting, the removal ladder and
metrics. One process does those one at a time; Ray spreads them over the CPUs.

Ray's start-up (``ray.init``) is printed on its own line. Where Ray starts to pay off: when a
cell's own CPU work (token counting, metrics over long sessions, a local model) exceeds what
one process can do, and the cluster has more cores or GPUs than this machine; for API-bound
cells on one box, the local executor's single loop is hard to beat.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from workbench.compaction import Usage  # noqa: E402
from workbench.harness import Cell, Experiment, run_experiment  # noqa: E402
from workbench.harness.experiment._cells import read_manifest  # noqa: E402
from workbench.messages import Message  # noqa: E402
from workbench.sessions import Session  # noqa: E402
from workbench.testing import ScriptedModel  # noqa: E402

REPLY = ('<analysis>ok</analysis>\n```json\n{"user_intent": ["finish the task"], '
         '"current_work": "benchmarking"}\n```')
LATENCY = 0.2
USAGE = Usage(model="scripted", input_tokens=1000, output_tokens=100, cost=0.0)


def session_file(tmp: Path) -> Path:
    manifest = read_manifest()
    if "gen-005k-s1" in manifest:
        return manifest["gen-005k-s1"][0]
    path = tmp / "bench.json"
    messages = [Message.user("refactor the parser")]
    for i in range(8):
        messages.append(Message.assistant("checking").with_tool_request(
            f"t{i}", "shell", {"command": f"cat f{i}.py"}))
        messages.append(Message.user().with_tool_response(f"t{i}", "x = 1\n" * 80))
    Session("bench", "goose-json", str(path), messages).write_goose_json(path)
    return path


def spec(session: Path, cells: int, concurrency: int, cpus_per_cell: float = 1.0) -> Experiment:
    return Experiment.from_dict({
        "name": "bench", "sessions": [str(session)], "models": ["extractive"],
        "repeats": cells, "concurrency": concurrency,
        "executor": {"kind": "ray", "cpus_per_cell": cpus_per_cell}})


def factory(cell: Cell) -> ScriptedModel:
    return ScriptedModel([REPLY], usage=USAGE, latency=LATENCY)


def instant(cell: Cell) -> ScriptedModel:
    return ScriptedModel([REPLY], usage=USAGE)


def timed(exp: Experiment, out: Path, executor: str, build: Any = factory) -> tuple[float, int]:
    started = time.perf_counter()
    results = run_experiment(exp, out, progress=False, model_factory=build, executor=executor)
    return time.perf_counter() - started, len(results.cells)


def cpu_bound(tmp: Path, cells: int, ray_ready: bool) -> None:
    manifest = read_manifest()
    if not manifest:
        print("cpu-bound rows skipped: no shipped datasets")
        return
    name = max(manifest, key=lambda n: manifest[n][0].stat().st_size)
    exp = spec(manifest[name][0], cells, 8)
    print(f"\nCPU-bound: {name}, no model latency (after an untimed warm-up run each)")
    print(f"{'executor':<26} {'cells':>6} {'wall s':>8} {'cells/s':>8}")
    runs = [("local", "local")] + ([("ray cpus_per_cell=1", "ray")] if ray_ready else [])
    for label, executor in runs:
        # Warm-up: the first long session a process meets fills its token-count caches.
        timed(exp, tmp / f"cpu-warm-{executor}", executor, instant)
        wall, done = timed(exp, tmp / f"cpu-{executor}", executor, instant)
        print(f"{label:<26} {done:>6} {wall:>8.2f} {done / wall:>8.1f}")


@contextlib.contextmanager
def local_cluster(nodes: int, cpus: int) -> Iterator[str]:
    """A head and ``nodes - 1`` worker nodes sharing `cpus` CPUs, on this machine; yields the
    address. Private temp dir (``RAY_TMPDIR``, short: Ray's socket paths must fit 107 bytes),
    so no other Ray on the machine finds it; stopped on the way out."""
    from ray.cluster_utils import Cluster

    temp = tempfile.mkdtemp(prefix="wbray-", dir="/tmp")
    before = os.environ.get("RAY_TMPDIR")
    os.environ["RAY_TMPDIR"] = temp
    cluster = Cluster()
    try:
        share = [max(1, cpus // nodes + (1 if i < cpus % nodes else 0)) for i in range(nodes)]
        for i, n in enumerate(share):
            extra = {"include_dashboard": False} if i == 0 else {}
            cluster.add_node(wait=False, num_cpus=n, **extra)
        cluster.wait_for_nodes(timeout=180)
        yield cluster.address
    finally:
        cluster.shutdown()
        if before is None:
            os.environ.pop("RAY_TMPDIR", None)
        else:
            os.environ["RAY_TMPDIR"] = before
        shutil.rmtree(temp, ignore_errors=True)


def ray_rows(session: Path, tmp: Path, args: argparse.Namespace, label: str) -> None:
    """Warm-up, then the timed Ray rows for each packing, on the Ray this process is attached to."""
    for cpus in (1.0, 0.25):
        # Warm-up: let Ray start every worker process this packing needs.
        timed(spec(session, 2 * args.concurrency, args.concurrency, cpus),
              tmp / f"{label}-warm-{cpus}", "ray")
        for n in args.cells:
            exp = spec(session, n, args.concurrency, cpus)
            wall, done = timed(exp, tmp / f"{label}-{cpus}-{n}", "ray")
            row(f"{label} cpus_per_cell={cpus:g}", done, wall, args.concurrency)


def two_node_rows(session: Path, tmp: Path, args: argparse.Namespace) -> None:
    import ray

    started = time.perf_counter()
    with local_cluster(args.nodes, args.cpus) as address:
        ray.init(address=address, include_dashboard=False, log_to_driver=False)
        cpus = ray.cluster_resources().get("CPU", 0.0)
        print(f"cluster start + ray.init ({args.nodes} nodes, {cpus:g} CPUs in all): "
              f"{time.perf_counter() - started:.1f} s")
        try:
            nodes = sum(1 for n in ray.nodes() if n.get("Alive"))
            ray_rows(session, tmp, args, f"ray {nodes} nodes,")
        finally:
            ray.shutdown()


def row(label: str, cells: int, wall: float, concurrency: int) -> None:
    ideal = concurrency / LATENCY
    rate = cells / wall
    print(f"{label:<34} {cells:>6} {wall:>8.2f} {rate:>8.1f} {rate / ideal:>9.0%}")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cells", type=int, nargs="+", default=[40, 160])
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--cpus", type=int, default=2, help="CPUs of the local Ray instance")
    parser.add_argument("--cpu-cells", type=int, default=16,
                        help="cells of the CPU-bound table (0 skips it)")
    parser.add_argument("--nodes", type=int, default=2,
                        help="nodes of the multi-node cluster rows (0 skips them)")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        session = session_file(tmp)
        print(f"session {session.name}, model latency {LATENCY * 1000:.0f} ms, concurrency "
              f"{args.concurrency} (ideal {args.concurrency / LATENCY:.0f} cells/s); "
              f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")
        print(f"{'executor':<34} {'cells':>6} {'wall s':>8} {'cells/s':>8} {'of ideal':>9}")
        for n in args.cells:
            wall, done = timed(spec(session, n, args.concurrency), tmp / f"local-{n}", "local")
            row("local", done, wall, args.concurrency)
        try:
            import ray
        except ImportError:
            print('ray rows skipped: pip install "compaction-workbench[ray]"')
            if args.cpu_cells:
                cpu_bound(tmp, args.cpu_cells, ray_ready=False)
            return
        started = time.perf_counter()
        ray.init(address="local", num_cpus=args.cpus, include_dashboard=False,
                 log_to_driver=False)
        print(f"ray.init (local instance, {args.cpus} CPUs): "
              f"{time.perf_counter() - started:.1f} s")
        try:
            first = args.cells[0]
            wall, done = timed(spec(session, first, args.concurrency), tmp / "ray-cold", "ray")
            row("ray cold, cpus_per_cell=1", done, wall, args.concurrency)
            ray_rows(session, tmp, args, "ray")
        finally:
            ray.shutdown()
        if args.nodes > 1:
            two_node_rows(session, tmp, args)
        if args.cpu_cells:
            ray.init(address="local", num_cpus=args.cpus, include_dashboard=False,
                     log_to_driver=False)
            try:
                cpu_bound(tmp, args.cpu_cells, ray_ready=True)
            finally:
                ray.shutdown()


if __name__ == "__main__":
    main()
