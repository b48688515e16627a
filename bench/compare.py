"""Side-by-side benchmark: this tree against another revision, interleaved, on this machine now.

Run: ``python bench/compare.py REV [--runs 5] [--only tune,harness,default]``. REV is any git
revision (``main``, a commit); it is checked out into a temporary worktree, removed at the end.
The measuring scripts are this tree's (``bench_tune.py --marginal``, ``bench_harness.py
--json``, ``bench_default_run.py --json``); each run points them at one tree or the other
(``WORKBENCH_TREE``), so both sides are measured by the same instrument. The trees alternate
within each round (this tree first in even rounds, REV first in odd ones), so a shared
machine's load falls on both sides alike; the table gives medians and ranges over the rounds.

Figures and the goals they are held to (issue "One model pipeline"):

- render-only tune: warm CPU per extra cell, and its ratio to the floor (parse + sandboxed render
  + o200k count of the same summaries, measured in the same process): goal <= 5x;
- harness overhead per cell against inspect_ai's (``bench_harness.py``, each round's figure the
  median of 3 interleaved pairs, each harness in a process of its own): goal <= 0.05;
- concurrency efficiency at 200 ms (``bench_harness.py``): goal >= 98 %;
- the default run's CPU time (user + system, all threads): goal <= 60 % of REV's;
- the default run's peak resident memory: goal <= 250 MB and <= 65 % of REV's.

Asserts nothing; prints the table (and, with ``--json``, the raw figures as one JSON line).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parents[1]

BENCHES: dict[str, list[str]] = {
    "tune": ["bench_tune.py", "--marginal", "--json"],
    "harness": ["bench_harness.py", "--json", "--repeats", "3", "--skip-sweep"],
    "default": ["bench_default_run.py", "--json"],
}
"""Bench name -> this tree's script and its arguments (each prints one JSON line)."""

Goal = Callable[[float, float], bool]

FIGURES: list[tuple[str, str, str, str, Goal | None]] = [
    # (bench, key, label, goal text, goal(this, rev) -> met)
    ("tune", "cpu_per_cell_ms", "render-only tune: CPU ms per cell", "", None),
    ("tune", "floor_ms", "  its floor (parse + render + count), ms", "", None),
    ("tune", "ratio_to_floor", "  ratio to the floor", "<= 5x", lambda a, b: a <= 5.0),
    ("harness", "overhead_ms", "harness overhead, ms per cell", "", None),
    ("harness", "inspect_ms", "  inspect_ai's, ms per sample", "", None),
    ("harness", "overhead_ratio", "  overhead / inspect_ai's", "<= 0.05", lambda a, b: a <= 0.05),
    ("harness", "efficiency", "concurrency efficiency", ">= 98 %", lambda a, b: a >= 0.98),
    ("harness", "inspect_efficiency", "  inspect_ai's", "", None),
    ("default", "cpu_s", "default run: CPU s", "<= 60 % of REV",
     lambda a, b: a <= 0.6 * b),
    ("default", "wall_s", "  wall s", "", None),
    ("default", "peak_mb", "  peak RSS, MB", "<= 250 and <= 65 % of REV",
     lambda a, b: a <= 250 and a <= 0.65 * b),
]


def _worktree(rev: str, where: Path) -> Path:
    path = where / "rev"
    subprocess.run(["git", "-C", str(HERE), "worktree", "add", "--detach", "--quiet", str(path),
                    rev], check=True)
    return path


def _drop_worktree(path: Path) -> None:
    subprocess.run(["git", "-C", str(HERE), "worktree", "remove", "--force", str(path)],
                   check=False, capture_output=True)


def _measure(bench: str, tree: Path, scratch: Path) -> dict[str, Any]:
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    env["WORKBENCH_TREE"] = str(tree)
    env["PYTHONPATH"] = str(tree)
    env["WORKBENCH_USER_PATH"] = str(scratch / "user")
    script, *args = BENCHES[bench]
    done = subprocess.run([sys.executable, str(HERE / "bench" / script), *args], cwd=tree,
                          env=env, capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"{script} on {tree} failed ({done.returncode}):\n{done.stderr[-3000:]}")
    lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
    return dict(json.loads(lines[-1]))


def _cell(values: list[float], scale: float, fmt: str) -> str:
    if not values:
        return "-"
    med = statistics.median(values) * scale
    return f"{med:{fmt}} ({min(values) * scale:{fmt}}-{max(values) * scale:{fmt}})"


def _table(found: dict[str, dict[str, list[dict[str, Any]]]], rev: str, runs: int) -> None:
    print(f"this tree ({HERE.name}) against {rev}: medians (ranges) over {runs} interleaved "
          "rounds; a shared machine")
    print(f"{'figure':42} {'this tree':>22} {rev:>22} {'ratio':>7}  goal")
    for bench, key, label, goal_text, goal in FIGURES:
        mine = [r[key] for r in found["this"].get(bench, []) if r.get(key) is not None]
        theirs = [r[key] for r in found["rev"].get(bench, []) if r.get(key) is not None]
        if not mine and not theirs:
            continue
        pct = key in ("efficiency", "inspect_efficiency")
        scale, fmt = (100.0, ".1f") if pct else (1.0, ".3f" if key.endswith("ratio") else ".2f")
        ratio = (f"{statistics.median(mine) / statistics.median(theirs):.2f}"
                 if mine and theirs and statistics.median(theirs) else "-")
        verdict = ""
        if goal is not None and mine:
            met = goal(statistics.median(mine), statistics.median(theirs) if theirs else 0.0)
            verdict = f"{goal_text}: {'met' if met else 'NOT met'}"
        print(f"{label:42} {_cell(mine, scale, fmt):>22} {_cell(theirs, scale, fmt):>22} "
              f"{ratio:>7}  {verdict}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("rev", help="the git revision to compare with (e.g. main)")
    parser.add_argument("--runs", type=int, default=5, help="interleaved rounds (at least 5)")
    parser.add_argument("--only", default=",".join(BENCHES),
                        help="comma-separated benches: " + ", ".join(BENCHES))
    parser.add_argument("--json", action="store_true", help="also print the raw figures")
    args = parser.parse_args()
    benches = [b for b in args.only.split(",") if b]
    unknown = sorted(set(benches) - set(BENCHES))
    if unknown:
        parser.error(f"unknown bench: {', '.join(unknown)}")
    found: dict[str, dict[str, list[dict[str, Any]]]] = {"this": {}, "rev": {}}
    with tempfile.TemporaryDirectory(prefix="bench-compare-") as tmp:
        scratch = Path(tmp)
        rev_tree = _worktree(args.rev, scratch)
        trees = {"this": HERE, "rev": rev_tree}
        try:
            for run in range(args.runs):
                order = ("this", "rev") if run % 2 == 0 else ("rev", "this")
                for bench in benches:
                    for side in order:
                        figures = _measure(bench, trees[side], scratch)
                        found[side].setdefault(bench, []).append(figures)
                        print(f"round {run + 1}/{args.runs} {bench} {side}: {json.dumps(figures)}",
                              file=sys.stderr, flush=True)
        finally:
            _drop_worktree(rev_tree)
    _table(found, args.rev, args.runs)
    if args.json:
        print(json.dumps(found))


if __name__ == "__main__":
    main()
