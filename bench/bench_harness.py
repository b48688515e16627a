"""Harness benchmark: per-cell overhead, concurrency efficiency, and inspect_ai side by side.

Run: ``python bench/bench_harness.py [--cells 60] [--concurrency 8]``. Offline; uses the shipped
``gen-005k-s1`` dataset (or a generated stand-in) and scripted models, so no model is called.

1. Overhead: a zero-latency `ScriptedModel`; wall time per cell of the whole runner (session
   load, compaction, token counts, metrics, SQLite writes), and the same minus a bare loop of
   ``compact_messages`` over the same cells (= what the harness itself adds).
2. Concurrency: a 200 ms scripted model; efficiency = (cells x latency / concurrency) / wall.
3. inspect_ai (when importable): the same cells as samples with the ``mockllm`` model, a solver
   that sleeps the same latency, and the ratio of wall times.
"""

from __future__ import annotations

import argparse
import asyncio
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
from workbench.sessions import Session, load_session  # noqa: E402
from workbench.testing import ScriptedModel  # noqa: E402

REPLY = ('<analysis>ok</analysis>\n```json\n{"user_intent": ["finish the task"], '
         '"current_work": "benchmarking"}\n```')
LATENCY = 0.2


def session_file(tmp: Path) -> Path:
    manifest = read_manifest()
    if "gen-005k-s1" in manifest:
        return manifest["gen-005k-s1"][0]
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


def timed_run(session: Path, cells: int, concurrency: int, latency: float, out: Path) -> float:
    start = time.perf_counter()
    results = run_experiment(spec(session, cells, concurrency), out, model_factory=factory(latency),
                             progress=False)
    wall = time.perf_counter() - start
    assert len(results.cells) == cells and set(results.cells["status"]) == {"ok"}
    return wall


def bare_compaction(session: Path, cells: int) -> float:
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


def metrics_time(session: Path, cells: int) -> float:
    try:
        from workbench.metrics import compute_forgotten, compute_metrics
    except ModuleNotFoundError:
        return 0.0
    loaded = load_session(session)
    text = "# Conversation Summary\n\n## User Intent\n- finish the task\n"
    start = time.perf_counter()
    for _ in range(cells):
        compute_metrics(loaded, text, None, original_tokens=5000, summary_tokens=20)
        compute_forgotten(loaded, text)
    return time.perf_counter() - start


def inspect_run(session: Path, cells: int, concurrency: int, latency: float, log_dir: Path) -> float:
    from inspect_ai import Task, eval
    from inspect_ai.dataset import Sample
    from inspect_ai.solver import Generate, TaskState, generate, solver

    from workbench.compaction._format import format_transcript

    transcript = format_transcript(load_session(session).messages, "goose")

    @solver
    def slow() -> Any:
        async def solve(state: TaskState, generate: Generate) -> TaskState:
            await asyncio.sleep(latency)
            return state
        return solve

    task = Task(dataset=[Sample(input=transcript, id=i) for i in range(cells)],
                solver=[slow(), generate()])
    start = time.perf_counter()
    logs = eval(task, model="mockllm/model", log_dir=str(log_dir), display="none",
                max_samples=concurrency, max_connections=concurrency, max_tasks=1)
    wall = time.perf_counter() - start
    assert logs[0].status == "success", logs[0].status
    return wall


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cells", type=int, default=60)
    parser.add_argument("--concurrency", type=int, default=8)
    args = parser.parse_args()
    n, c = args.cells, args.concurrency
    with tempfile.TemporaryDirectory() as tmpdir:
        tmp = Path(tmpdir)
        os.environ.setdefault("WORKBENCH_USER_PATH", str(tmp / "user"))
        session = session_file(tmp)
        print(f"session: {session.name}; {n} cells; concurrency {c}")
        bare_compaction(session, 2)  # warm tiktoken and templates
        timed_run(session, 2, c, 0.0, tmp / "warm")  # warm pandas, sessions, metrics imports
        bare = bare_compaction(session, n)
        metrics = metrics_time(session, n)
        wall0 = timed_run(session, n, c, 0.0, tmp / "zero")
        own = wall0 - bare - metrics
        print(f"zero latency: {wall0 / n * 1000:.1f} ms/cell through the runner = compact_messages "
              f"{bare / n * 1000:.1f} + metrics/probes {metrics / n * 1000:.1f} + harness itself "
              f"{own / n * 1000:.1f} ms/cell (spec, store, files, scheduling, Results.load)")
        wall1 = timed_run(session, n, c, LATENCY, tmp / "slow")
        ideal = n * LATENCY / c
        print(f"{LATENCY * 1000:.0f} ms latency: wall {wall1:.2f} s vs ideal {ideal:.2f} s "
              f"(cells x latency / concurrency): efficiency {ideal / wall1:.0%}")
        try:
            import inspect_ai  # noqa: F401
        except ImportError as exc:
            print(f"inspect_ai: not importable ({exc}); `pip install inspect-ai` to compare")
            return
        inspect_run(session, 2, c, 0.0, tmp / "inspect-warm")
        i0 = inspect_run(session, n, c, 0.0, tmp / "inspect0")
        i1 = inspect_run(session, n, c, LATENCY, tmp / "inspect1")
        print(f"inspect_ai mockllm, zero latency: {i0 / n * 1000:.1f} ms/sample "
              f"(workbench/inspect wall ratio {wall0 / i0:.2f})")
        print(f"inspect_ai mockllm, {LATENCY * 1000:.0f} ms latency: wall {i1:.2f} s, efficiency "
              f"{ideal / i1:.0%} (workbench/inspect wall ratio {wall1 / i1:.2f})")


if __name__ == "__main__":
    main()
