"""Harness benchmark: per-cell overhead and concurrency efficiency against inspect_ai, and how a
cell's cost grows with the session's length.

Run: ``python bench/bench_harness.py [--cells 40] [--concurrency 8] [--repeats 5]
[--skip-sweep]``. Offline; needs the ``bench`` extra (``pip install -e ".[bench]"``) for the
inspect_ai rows. No model is called: the workbench runs a `ScriptedModel`, inspect_ai its
``mockllm`` model.

The same N cells of work on both sides: the shipped ``gen-005k-s1`` session (or a generated
stand-in), N times. The workbench run compacts it N times through the whole runner (session
load, the removal ladder, the render, the summary parse and render, token counts, metrics and
probes, the store, `Results.load`); inspect_ai evaluates N samples whose input is the same
transcript, with a solver that waits the model's latency and then calls ``generate()``.

Each harness runs in a process of its own (two workers this script starts, each warmed once
and then asked for one measurement at a time), so neither is measured among the other's
imports and state: a workbench run that follows inspect_ai's in one process takes 3.5-5 ms
longer at zero latency (26.6-28.5 against 23.0-23.5 ms, medians of 8 runs, two processes of
each kind; inspect_ai leaves 2,100 more modules, 216,000 more objects and a root log handler),
while inspect_ai's samples were not measurably slower after workbench runs.
``--same-process`` measures both in this one process, as before. Measured in interleaved turns
(workbench, inspect, inspect, workbench, ... alternating which goes first), ``--repeats``
times, so a shared machine's load falls on both sides alike; the figures are medians over the
repeats:

1. Overhead, zero-latency model: wall time per cell. The workbench's *harness overhead* is that
   minus the necessary work of a cell (a bare loop of ``compact_messages`` over the same cells:
   format, render, call, parse, summary render, counts); inspect_ai's is its whole wall time
   per sample (its mock model does no work). Printed: both, and their ratio.
2. Concurrency, a 200 ms model at ``--concurrency``: efficiency = (cells x latency /
   concurrency) / wall, for both.
3. Session-length sweep (workbench only): CPU time per cell (zero latency, concurrency 1) on
   each shipped dataset, against the session's tokens; the least-squares slope in ms per 1k
   session tokens.

Whole runs are timed, so a run's fixed costs count against the efficiency: with 40 cells at 200 ms
and concurrency 8 the ideal is 1 s, and 98 % leaves 20 ms for the start, the waves' slips and the
end together. Where they go (a timeline of the 200 ms run, medians of 20 runs, on this 2-core
machine, 2026-12-05): the plan (sessions parsed, variants checked in the render process) about 2.2
ms, the lock about 0.1 ms, and the first call out at about 4.6 ms; a wave's eight calls leave
within 0.1-0.15 ms of each other. Each wave then comes back about 1.1 ms after its 200 ms: mostly
the sleep's own timer (asyncio's epoll wait is rounded up to a whole millisecond and wakes late;
inspect_ai's solver sleeps the same way), the rest the wave's scoring before the next calls leave.
The last wave's scoring takes about 2.3 ms, and after the last cell about 4.7 ms go: the writer's
last write with the run's status and the rest of the tables (it read each wave's rows while the
next wave's calls were out) about 1.2 ms, then the lock about 0.5 ms, the loop's close about 0.6 ms
and the cells frame about 1.3 ms, beside the writer's close (which folds the log into the file:
about 3.1 ms, the longest part), and the writer's join. A new folder's spec copy and run row are
written by the writer in the first wait, as the writer thread starts once the first wave is out,
and finished cells go to it 2 ms after they finish, so its turns at the interpreter lock fall in
the waits for replies. At zero latency the loop never waits: the writer thread starts at the run's
end and writes the 40 cells alone with the lock (started at the first cell done, as before, it took
the lock from the cells and the run took 0.7 ms longer), into a store made in memory and written to
its file in one piece, one sync, while the frame is made (a store made on disk first, its log and
the log's fold took about 2.3 ms more of a 35 ms run). On a shared machine the load falls on both
sides of each pair; the ranges say how much it moved the figures.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(os.environ.get("WORKBENCH_TREE") or Path(__file__).resolve().parents[1]).resolve()
"""The tree measured: this one, or another checkout (`bench/compare.py` sets WORKBENCH_TREE)."""
sys.path.insert(0, str(ROOT))

from workbench.compaction import Usage  # noqa: E402
from workbench.harness import Cell, Experiment, run_experiment  # noqa: E402
from workbench.harness.experiment._cells import read_manifest  # noqa: E402
from workbench.messages import Message  # noqa: E402
from workbench.sessions import Session, load_session  # noqa: E402
from workbench.testing import ScriptedModel  # noqa: E402

REPLY = ('<analysis>ok</analysis>\n```json\n{"user_intent": ["finish the task"], '
         '"current_work": "benchmarking"}\n```')
LATENCY = 0.2


def session_file(tmp: Path, name: str = "gen-005k-s1") -> Path:
    manifest = read_manifest()
    if name in manifest:
        return manifest[name][0]
    path = tmp / "bench.json"
    messages = [Message.user("refactor the parser")]
    for i in range(8):
        messages.append(Message.assistant("checking").with_tool_request(f"t{i}", "shell",
                                                                        {"command": f"cat f{i}.py"}))
        messages.append(Message.user().with_tool_response(f"t{i}", "x = 1\n" * 80))
    Session("bench", "goose-json", str(path), messages).write_goose_json(path)
    return path


def spec(session: Path, cells: int, concurrency: int) -> Experiment:
    return Experiment.from_dict({"name": "bench", "sessions": [str(session)],
                                 "models": ["extractive"], "repeats": cells,
                                 "concurrency": concurrency})


def factory(latency: float) -> Any:
    def build(cell: Cell) -> ScriptedModel:
        return ScriptedModel([REPLY], latency=latency,
                             usage=Usage(model="scripted", input_tokens=10, output_tokens=10))
    return build


def workbench_run(session: Path, cells: int, concurrency: int, latency: float,
                  out: Path) -> tuple[float, float]:
    """Wall and CPU seconds of one whole run, up to its cells' frame (what every caller of a
    run reads: a frame made when first used is timed as well). The spec and the model factory
    are made before the clock starts, as inspect_ai's task and dataset are (`inspect_run`)."""
    experiment, models = spec(session, cells, concurrency), factory(latency)
    wall, cpu = time.perf_counter(), time.process_time()
    results = run_experiment(experiment, out, model_factory=models, progress=False)
    frame = results.cells
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    assert len(frame) == cells and set(frame["status"]) == {"ok"}
    return wall, cpu


def bare_compaction(session: Path, cells: int) -> float:
    """Seconds of `cells` bare ``compact_messages`` calls (a cell's necessary work)."""
    from workbench.compaction import Templates
    from workbench.context_mgmt import compact_messages
    from workbench.tokens import default_estimator

    messages = load_session(session).messages
    templates = Templates.default()

    async def go() -> None:
        for _ in range(cells):
            await compact_messages(ScriptedModel([REPLY]), messages, manual_compact=True,
                                   templates=templates, estimator=default_estimator())

    start = time.perf_counter()
    asyncio.run(go())
    return time.perf_counter() - start


def inspect_run(session: Path, cells: int, concurrency: int, latency: float,
                log_dir: Path) -> float:
    """Wall seconds of one inspect_ai eval of `cells` samples."""
    from inspect_ai import Task, eval
    from inspect_ai.dataset import Sample
    from inspect_ai.solver import Generate, TaskState, generate, solver

    from workbench._offline import ensure_offline
    from workbench.compaction._format import format_transcript

    ensure_offline()  # inspect_ai's mockllm counts o200k tokens: litellm's copy, never a download
    transcript = format_transcript(load_session(session).messages, "goose")

    @solver
    def wait_latency() -> Any:
        async def solve(state: TaskState, generate: Generate) -> TaskState:
            await asyncio.sleep(latency)
            return state
        return solve

    task = Task(dataset=[Sample(input=transcript, id=i) for i in range(cells)],
                solver=[wait_latency(), generate()])
    start = time.perf_counter()
    logs = eval(task, model="mockllm/model", log_dir=str(log_dir), display="none",
                max_samples=concurrency, max_connections=concurrency, max_tasks=1)
    wall = time.perf_counter() - start
    assert logs[0].status == "success", logs[0].status
    return wall


def _med(values: list[float]) -> float:
    return statistics.median(values)


def _span(values: list[float], scale: float = 1.0, fmt: str = ".1f") -> str:
    return f"{min(values) * scale:{fmt}}-{max(values) * scale:{fmt}}"


SIDES = {"workbench": ("bare", "wb0", "wb1"), "inspect": ("in0", "in1")}
"""Each harness's measurements: the workbench's in one process, inspect_ai's in another."""


def measure(what: str, session: Path, n: int, c: int, out: Path) -> tuple[float, float]:
    """One measurement: seconds per cell (``bare``, ``wb0``, ``in0``) or of the whole run
    (``wb1``, ``in1``), and for ``wb0`` its CPU seconds per cell (else 0)."""
    if what == "bare":
        return bare_compaction(session, n) / n, 0.0
    if what == "wb0":
        wall, cpu = workbench_run(session, n, c, 0.0, out)
        return wall / n, cpu / n
    if what == "wb1":
        return workbench_run(session, n, c, LATENCY, out)[0], 0.0
    if what == "in0":
        return inspect_run(session, n, c, 0.0, out) / n, 0.0
    return inspect_run(session, n, c, LATENCY, out), 0.0


def warm(side: str, session: Path, c: int, tmp: Path) -> None:
    """Imports, tiktoken, templates, pandas; inspect_ai's registry."""
    if side == "workbench":
        bare_compaction(session, 2)
        workbench_run(session, 2, c, 0.0, tmp / "warm")
    else:
        inspect_run(session, 2, c, 0.0, tmp / "inspect-warm")


def serve(side: str, n: int, c: int, tmp: Path) -> None:
    """A worker process of one side (``--serve``): warms, prints ``ready``, then answers each
    measurement named on a line of stdin with one JSON line ``[value, cpu]``."""
    answers, sys.stdout = sys.stdout, sys.stderr  # whatever a harness prints stays off the pipe
    session = session_file(tmp)
    warm(side, session, c, tmp)
    print("ready", file=answers, flush=True)
    for k, line in enumerate(sys.stdin):
        what = line.strip()
        print(json.dumps(measure(what, session, n, c, tmp / f"{what}-{k}")), file=answers,
              flush=True)


class _Worker:
    """One side's process (`serve`), asked for one measurement at a time."""

    def __init__(self, side: str, n: int, c: int, tmp: Path) -> None:
        folder = tmp / side
        folder.mkdir()
        self.proc = subprocess.Popen(
            [sys.executable, str(Path(__file__).resolve()), "--serve", side, "--cells", str(n),
             "--concurrency", str(c), "--scratch", str(folder)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        self._read("ready")

    def _read(self, expected: str | None = None) -> str:
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        if not line or (expected is not None and line.strip() != expected):
            self.proc.kill()
            raise RuntimeError(f"a benchmark worker stopped ({self.proc.wait()}): {line!r}")
        return line

    def ask(self, what: str) -> tuple[float, float]:
        assert self.proc.stdin is not None
        self.proc.stdin.write(what + "\n")
        self.proc.stdin.flush()
        value, cpu = json.loads(self._read())
        return float(value), float(cpu)

    def close(self) -> None:
        if self.proc.stdin is not None:
            self.proc.stdin.close()
        self.proc.wait()


def compare(session: Path, n: int, c: int, repeats: int, tmp: Path,
            as_json: bool = False, same_process: bool = False) -> None:
    try:
        import inspect_ai  # noqa: F401
    except ImportError as exc:
        inspect_ok = False
        print(f"inspect_ai: not importable ({exc}); `pip install -e '.[bench]'` to compare")
    else:
        inspect_ok = True
    sides = ["workbench", "inspect"] if inspect_ok else ["workbench"]
    workers: dict[str, _Worker] = {}
    if same_process:
        for side in sides:
            warm(side, session, c, tmp)
    else:
        workers = {side: _Worker(side, n, c, tmp) for side in sides}

    def ask(side: str, what: str, k: int) -> tuple[float, float]:
        if same_process:
            return measure(what, session, n, c, tmp / f"{what}-{k}")
        return workers[side].ask(what)

    rows: dict[str, list[float]] = {k: [] for k in ("bare", "wb0", "wb0cpu", "wb1", "in0", "in1")}
    try:
        for r in range(repeats):
            for side in (sides if r % 2 == 0 else list(reversed(sides))):
                for what in SIDES[side]:
                    value, cpu = ask(side, what, r)
                    rows[what].append(value)
                    if what == "wb0":
                        rows["wb0cpu"].append(cpu)
    finally:
        for worker in workers.values():
            worker.close()
    ideal = n * LATENCY / c
    wb_over = [w - b for w, b in zip(rows["wb0"], rows["bare"], strict=True)]
    if as_json:
        found = {"overhead_ms": _med(wb_over) * 1000, "wall_ms": _med(rows["wb0"]) * 1000,
                 "cpu_ms": _med(rows["wb0cpu"]) * 1000, "bare_ms": _med(rows["bare"]) * 1000,
                 "efficiency": _med([ideal / w for w in rows["wb1"]])}
        if inspect_ok:
            found["inspect_ms"] = _med(rows["in0"]) * 1000
            found["overhead_ratio"] = _med([o / i for o, i in
                                            zip(wb_over, rows["in0"], strict=True)])
            found["inspect_efficiency"] = _med([ideal / w for w in rows["in1"]])
        print(json.dumps(found))
        return
    print(f"{n} cells of {session.name}, concurrency {c}, {repeats} interleaved repeats "
          f"(medians; ranges after them)")
    print(f"zero latency: workbench {_med(rows['wb0']) * 1000:.1f} ms/cell wall "
          f"({_span(rows['wb0'], 1000)}), {_med(rows['wb0cpu']) * 1000:.1f} ms/cell CPU; "
          f"necessary work (bare compact_messages) {_med(rows['bare']) * 1000:.1f} ms/cell; "
          f"harness overhead {_med(wb_over) * 1000:.1f} ms/cell ({_span(wb_over, 1000)})")
    effs = [ideal / w for w in rows["wb1"]]
    print(f"{LATENCY * 1000:.0f} ms latency: workbench wall {_med(rows['wb1']):.2f} s vs ideal "
          f"{ideal:.2f} s: efficiency {_med(effs):.1%} ({_span(effs, 100, '.0f')} %)")
    if not inspect_ok:
        return
    ratios = [o / i for o, i in zip(wb_over, rows["in0"], strict=True)]
    ieffs = [ideal / w for w in rows["in1"]]
    print(f"inspect_ai mockllm: {_med(rows['in0']) * 1000:.1f} ms/sample at zero latency "
          f"({_span(rows['in0'], 1000)}); {LATENCY * 1000:.0f} ms latency: efficiency "
          f"{_med(ieffs):.1%} ({_span(ieffs, 100, '.0f')} %)")
    print(f"harness overhead per cell, workbench / inspect_ai: median ratio "
          f"{_med(ratios):.3f} ({_span(ratios, 1, '.3f')}; goal <= 0.05)")
    print(f"concurrency efficiency at {LATENCY * 1000:.0f} ms, concurrency {c}: workbench "
          f"{_med(effs):.1%}, inspect_ai {_med(ieffs):.1%} (goal >= 98 %)")


def sweep(n: int, repeats: int, tmp: Path) -> None:
    manifest = read_manifest()
    names = sorted(manifest)
    if len(names) < 2:
        print("sweep: fewer than two shipped datasets; skipped")
        return
    tokens = {name: _session_tokens(manifest[name][0]) for name in names}
    cpu: dict[str, list[float]] = {name: [] for name in names}
    for name in names:  # warm each session's load (and the caches a run fills)
        workbench_run(manifest[name][0], 1, 1, 0.0, tmp / f"sweep-warm-{name}")
    for r in range(repeats):
        for name in (names if r % 2 == 0 else list(reversed(names))):
            cpu[name].append(workbench_run(manifest[name][0], n, 1, 0.0,
                                           tmp / f"sweep-{name}-{r}")[1] / n)
    xs = [tokens[name] / 1000 for name in names]
    ys = [_med(cpu[name]) * 1000 for name in names]
    mx, my = statistics.fmean(xs), statistics.fmean(ys)
    slope = sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True)) / \
        sum((x - mx) ** 2 for x in xs)
    print(f"session-length sweep: {n} cells per dataset, concurrency 1, {repeats} repeats "
          f"(median CPU ms per cell)")
    for name, x, y in zip(names, xs, ys, strict=True):
        print(f"  {name:<14} {x:7.1f}k tokens  {y:7.1f} ms/cell")
    print(f"growth: {slope:.3f} ms CPU per 1k session tokens per cell (least squares; "
          f"goal <= 0.25)")


def _session_tokens(path: Path) -> int:
    from workbench.tokens import default_estimator

    return default_estimator().count_context_tokens(load_session(path).messages)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cells", type=int, default=40)
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--sweep-cells", type=int, default=10)
    parser.add_argument("--skip-sweep", action="store_true")
    parser.add_argument("--skip-compare", action="store_true")
    parser.add_argument("--json", action="store_true",
                        help="print the comparison's medians as one JSON line (no sweep)")
    parser.add_argument("--same-process", action="store_true",
                        help="measure both harnesses in this one process, as before 2026-12-05 "
                             "(inspect_ai's imports and state then slow the workbench's runs)")
    parser.add_argument("--serve", choices=sorted(SIDES), help=argparse.SUPPRESS)
    parser.add_argument("--scratch", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        os.environ.setdefault("WORKBENCH_USER_PATH", str(args.scratch / "user"))
        serve(args.serve, args.cells, args.concurrency, args.scratch)
        return
    with tempfile.TemporaryDirectory() as tmpdir:
        tmp = Path(tmpdir)
        os.environ.setdefault("WORKBENCH_USER_PATH", str(tmp / "user"))
        if not args.skip_compare:
            compare(session_file(tmp), args.cells, args.concurrency, args.repeats, tmp,
                    as_json=args.json, same_process=args.same_process)
        if not args.skip_sweep and not args.json:
            sweep(args.sweep_cells, max(args.repeats // 2, 1) + 1, tmp)


if __name__ == "__main__":
    main()
