"""Executors benchmark: cells per second, local asyncio vs Ray, on the same 200 ms scripted model.

Run: ``python bench/bench_executors.py [--cells 40 160] [--concurrency 8] [--cpus 2]``.
Offline; needs the ``ray`` extra for the Ray rows. Every run compacts the shipped
``gen-005k-s1`` dataset (or a generated stand-in) with a `ScriptedModel` that sleeps 200 ms per
call, so the ideal rate is ``concurrency / 0.2`` cells/s.

Rows:
- ``local``: the default executor, all cells on one event loop in this process.
- ``ray cold``: the first Ray run on a fresh local instance (worker processes start and import
  the workbench while cells wait), ``cpus_per_cell = 1``.
- ``ray cpus_per_cell=C``: warm workers (after an untimed warm-up run); ``C = 1`` runs one cell per CPU, smaller values pack
  several I/O-bound cells per CPU.

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
import os
import sys
import tempfile
import time
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


def row(label: str, cells: int, wall: float, concurrency: int) -> None:
    ideal = concurrency / LATENCY
    rate = cells / wall
    print(f"{label:<26} {cells:>6} {wall:>8.2f} {rate:>8.1f} {rate / ideal:>9.0%}")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cells", type=int, nargs="+", default=[40, 160])
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--cpus", type=int, default=2, help="CPUs of the local Ray instance")
    parser.add_argument("--cpu-cells", type=int, default=16,
                        help="cells of the CPU-bound table (0 skips it)")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        session = session_file(tmp)
        print(f"session {session.name}, model latency {LATENCY * 1000:.0f} ms, concurrency "
              f"{args.concurrency} (ideal {args.concurrency / LATENCY:.0f} cells/s); "
              f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")
        print(f"{'executor':<26} {'cells':>6} {'wall s':>8} {'cells/s':>8} {'of ideal':>9}")
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
        ray.init(num_cpus=args.cpus, include_dashboard=False, log_to_driver=False)
        print(f"ray.init (local instance, {args.cpus} CPUs): "
              f"{time.perf_counter() - started:.1f} s")
        try:
            first = args.cells[0]
            wall, done = timed(spec(session, first, args.concurrency), tmp / "ray-cold", "ray")
            row("ray cold, cpus_per_cell=1", done, wall, args.concurrency)
            for cpus in (1.0, 0.25):
                # Warm-up: let Ray start every worker process this packing needs.
                timed(spec(session, 2 * args.concurrency, args.concurrency, cpus),
                      tmp / f"ray-warm-{cpus}", "ray")
                for n in args.cells:
                    exp = spec(session, n, args.concurrency, cpus)
                    wall, done = timed(exp, tmp / f"ray-{cpus}-{n}", "ray")
                    row(f"ray cpus_per_cell={cpus:g}", done, wall, args.concurrency)
            if args.cpu_cells:
                cpu_bound(tmp, args.cpu_cells, ray_ready=True)
        finally:
            ray.shutdown()


if __name__ == "__main__":
    main()
