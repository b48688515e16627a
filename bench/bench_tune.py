"""Tuning benchmark: a render-only tune of 500+ variants, with and without shared calls.

Run: ``python bench/bench_tune.py [--sessions 6] [--repeats 3] [--skip-unshared]``, or
``--marginal`` for the per-cell figure `bench/compare.py` reads (``--json``). Offline. The variant is a
copy of ``prompts/lean-facts`` whose ``variant.toml`` widens the four render-only parameters
(intent_limit 0-10, problem_limit 1-12, show_concepts, key_code: 528 points); its prompt is the
shipped one, so every point sends the same request per session. The model is the extractive
baseline, priced as if it were a paid model (``PRICE_IN`` / ``PRICE_OUT`` dollars per million
tokens) so the cost columns mean something; the tune runs over the shipped datasets.

Prints, for sharing on and off: wall time, model calls made and shared, billed tokens, cost,
and per-variant cost (cost / variants) and per-variant wall time; CPU seconds of the process
beside the wall time, since the machine may be shared; and the CPU milliseconds per cell of the
shared run (every cell but one per session re-renders a shared reply: a render-only cell; the
goal is at most 5 ms). The shared run is repeated ``--repeats`` times in fresh folders: the
first run's figure is a fresh process's (what ``workbench tune`` costs), the later ones' median
and range a warm one's (a notebook tuning again). On a shared virtual machine one run's figure
moves by half or more: run the script a few times. Asserts nothing.

``--marginal``: in one warm process (after a first tune has paid the imports and the
tokenizer's load), a small grid (``--small`` points) and a large one (``--large`` points) over the
same sessions; the CPU per render-only cell is the difference of their CPU times over the
difference of their cells. Beside it, measured in the same process, the *floor*: for every cell
of the large grid, parsing its reply (`StructuredSummary.parse_detailed`), rendering its summary
template with its parameters in the sandboxed Jinja environment (compiled once, no render
limits) and counting the result with tiktoken's o200k (no cache). The goal is at most 5x the
floor.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(os.environ.get("WORKBENCH_TREE") or Path(__file__).resolve().parents[1]).resolve()
"""The tree measured: this one, or another checkout (`bench/compare.py` sets WORKBENCH_TREE)."""
sys.path.insert(0, str(ROOT))

from workbench.compaction import Usage  # noqa: E402
from workbench.harness import Experiment  # noqa: E402
from workbench.harness.experiment._cells import read_manifest  # noqa: E402
from workbench.models import ExtractiveModel  # noqa: E402
from workbench.tune import tune  # noqa: E402

PRICE_IN = 0.15
PRICE_OUT = 0.60
VARIANT_TOML = """description = "lean-facts with wide render-only domains (bench)"

[params.intent_limit]
default = 0
min = 0
max = 10

[params.problem_limit]
default = 5
min = 1
max = 12

[params.show_concepts]
default = false

[params.key_code]
default = true

[params.list_cap]
default = 0

[params.drop_fields]
default = []
"""


class PricedExtractive:
    """The extractive baseline, billed at a paid model's price per token."""

    def __init__(self) -> None:
        self.inner = ExtractiveModel()
        self.calls = 0

    async def complete(self, system: str, messages: list) -> Any:  # type: ignore[type-arg]
        self.calls += 1
        reply, usage = await self.inner.complete(system, messages)
        cost = ((usage.input_tokens or 0) * PRICE_IN + (usage.output_tokens or 0) * PRICE_OUT) / 1e6
        return reply, Usage(model="priced-extractive", input_tokens=usage.input_tokens,
                            output_tokens=usage.output_tokens, total_tokens=usage.total_tokens,
                            cost=cost)

    def cache_identity(self) -> dict[str, Any]:
        return {"model": "priced-extractive"}


def _cpu() -> float:
    """CPU seconds of this process and of the render processes it keeps (where the tree
    renders templates in one: `workbench.compaction._sandbox`)."""
    try:
        from workbench.compaction._sandbox import worker_cpu_seconds
    except ImportError:
        return time.process_time()
    return time.process_time() + worker_cpu_seconds()


def one(folder: Path, sessions: list[str], out: Path, share: bool,
        sample: int | None = None) -> dict[str, Any]:
    tune_table: dict[str, Any] = {"variant": str(folder), "objective": "pareto",
                                  "winner_name": "lean-wide-tuned"}
    if sample is not None:
        tune_table["sample"] = sample
    spec = Experiment.from_dict({
        "name": "bench-tune", "sessions": sessions, "models": ["extractive"],
        "concurrency": 4, "base_dir": str(ROOT), "tune": tune_table})
    model = PricedExtractive()
    started, cpu_started = time.perf_counter(), _cpu()
    result = tune(spec, out, model_factory=lambda cell: model, share_calls=share)
    wall = time.perf_counter() - started
    cpu = _cpu() - cpu_started
    import sqlite3

    db = sqlite3.connect(out / "results.sqlite")
    cost, tokens, cells = db.execute(
        "SELECT SUM(cost), SUM(billed_input_tokens) + SUM(billed_output_tokens), COUNT(*) "
        "FROM cells").fetchone()
    db.close()
    variants = len(result.scores)
    return {"share": share, "variants": variants, "cells": cells, "wall": wall, "cpu": cpu,
            "calls": model.calls, "shared": result.calls_shared, "tokens": tokens, "cost": cost,
            "winner": result.winner, "front": int(result.scores["front"].sum())}


def floor_ms(folder: Path, run_dir: Path) -> tuple[float, int]:
    """CPU ms per cell of parse + sandboxed render + o200k count of the run's summaries."""
    import sqlite3

    from workbench.compaction import StructuredSummary
    from workbench.tokens._estimator import load_tiktoken

    try:  # the sandboxed environment, wherever the tree keeps it
        from workbench.compaction._sandbox_env import _ENV
    except ImportError:
        from workbench.compaction._templates import _ENV  # type: ignore[attr-defined,no-redef]

    encoding = load_tiktoken("o200k_base")
    template = _ENV.from_string((folder / "compaction_summary.md").read_text(encoding="utf-8"))
    db = sqlite3.connect(run_dir / "results.sqlite")
    cells = db.execute("SELECT cell_id, template_params FROM cells WHERE status = 'ok'").fetchall()
    db.close()
    work = []
    db = sqlite3.connect(run_dir / "results.sqlite")
    try:
        kept = dict(db.execute("SELECT cell_id, text FROM cell_texts WHERE name = 'raw.txt'"))
    except sqlite3.OperationalError:  # a tree that keeps the raw replies as files
        kept = {}
    db.close()
    for cell_id, params in cells:
        raw = run_dir / "summaries" / f"{cell_id}.raw.txt"
        text = kept.get(cell_id) or (raw.read_text(encoding="utf-8") if raw.is_file() else None)
        if text is not None:
            work.append((text, json.loads(params or "{}")))
    started = time.process_time()
    for text, params in work:
        summary = StructuredSummary.parse_detailed(text).summary
        if summary is None:
            continue
        rendered = template.render({**summary.to_context(), **params}).strip()
        len(encoding.encode(rendered, allowed_special="all"))
    return 1000 * (time.process_time() - started) / max(len(work), 1), len(work)


def marginal(args: argparse.Namespace) -> dict[str, Any]:
    """The warm per-cell CPU of a render-only tune and its floor (see the module docstring)."""
    names = sorted(read_manifest())[: args.sessions]
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "lean-wide"
        shutil.copytree(ROOT / "prompts" / "lean-facts", folder)
        (folder / "variant.toml").write_text(VARIANT_TOML, encoding="utf-8")
        one(folder, names, Path(tmp) / "warm", True, sample=args.small)
        small = one(folder, names, Path(tmp) / "small", True, sample=args.small)
        large = one(folder, names, Path(tmp) / "large", True, sample=args.large)
        floor, counted = floor_ms(folder, Path(tmp) / "large")
    per_cell = 1000 * (large["cpu"] - small["cpu"]) / (large["cells"] - small["cells"])
    return {"sessions": len(names), "small_cells": small["cells"], "large_cells": large["cells"],
            "cpu_per_cell_ms": per_cell, "floor_ms": floor, "floor_cells": counted,
            "ratio_to_floor": per_cell / floor, "large_cpu_s": large["cpu"],
            "large_wall_s": large["wall"]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=6, help="shipped datasets to use (max 6)")
    parser.add_argument("--repeats", type=int, default=3,
                        help="shared runs whose CPU per cell gives the median")
    parser.add_argument("--skip-unshared", action="store_true",
                        help="only the shared run (the unshared one sends every call)")
    parser.add_argument("--marginal", action="store_true",
                        help="the warm CPU per cell between two grids, and its floor")
    parser.add_argument("--small", type=int, default=8, help="--marginal: the small grid's points")
    parser.add_argument("--large", type=int, default=96, help="--marginal: the large grid's points")
    parser.add_argument("--json", action="store_true", help="--marginal: print one JSON line")
    args = parser.parse_args()
    if args.marginal:
        found = marginal(args)
        if args.json:
            print(json.dumps(found))
        else:
            print(f"render-only tune, {found['sessions']} sessions, {found['small_cells']} and "
                  f"{found['large_cells']} cells: {found['cpu_per_cell_ms']:.2f} ms CPU per extra "
                  f"cell; floor {found['floor_ms']:.3f} ms (parse + sandboxed render + o200k "
                  f"count); ratio {found['ratio_to_floor']:.1f}x (goal <= 5x)")
        return
    names = sorted(read_manifest())[: args.sessions]
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "lean-wide"
        shutil.copytree(ROOT / "prompts" / "lean-facts", folder)
        (folder / "variant.toml").write_text(VARIANT_TOML, encoding="utf-8")
        repeats = [one(folder, names, Path(tmp) / f"shared-{r}", True)
                   for r in range(max(1, args.repeats))]
        rows = [repeats[0]]
        if not args.skip_unshared:
            rows.append(one(folder, names, Path(tmp) / "unshared", False))
    print(f"render-only tune over {len(names)} shipped sessions ({', '.join(names)}), "
          f"priced at ${PRICE_IN}/M in, ${PRICE_OUT}/M out")
    head = (f"{'sharing':<8} {'variants':>8} {'cells':>6} {'wall s':>8} {'cpu s':>7} {'calls':>6} "
            f"{'shared':>7} {'billed tok':>11} {'cost $':>9} {'$/variant':>10} {'ms/variant':>10}")
    print(head)
    for r in rows:
        print(f"{'on' if r['share'] else 'off':<8} {r['variants']:>8} {r['cells']:>6} "
              f"{r['wall']:>8.1f} {r['cpu']:>7.1f} {r['calls']:>6} {r['shared']:>7} {r['tokens']:>11,} "
              f"{r['cost']:>9.4f} {r['cost'] / r['variants']:>10.6f} "
              f"{1000 * r['wall'] / r['variants']:>10.1f}")
    print(f"winner (pareto knee): {rows[0]['winner']}; front size {rows[0]['front']}")
    shared = rows[0]
    per_cell = [1000 * r["cpu"] / r["cells"] for r in repeats]
    print(f"CPU per render-only cell (sharing on): first run {per_cell[0]:.1f} ms (a fresh "
          f"process: the tokenizer's load and every memo's first fill count; {shared['cells']} "
          f"cells, {shared['calls']} of them calling the model; goal <= 5 ms)")
    if len(per_cell) > 1:
        warm = sorted(per_cell[1:])
        print(f"  later runs in the same process: median {statistics.median(warm):.1f} ms "
              f"({warm[0]:.1f}-{warm[-1]:.1f} over {len(warm)})")


if __name__ == "__main__":
    main()
