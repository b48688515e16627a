"""Default-run benchmark: `workbench run` on the shipped default experiment, timed, offline.

Run: ``python bench/bench_default_run.py`` (``--json``: the default run alone, as one JSON line
of wall time, CPU seconds and peak memory, for `bench/compare.py`). Runs the default experiment (every shipped session
for the extractive baseline, the six recorded ones for the local models) in a fresh process
where llama.cpp cannot be imported, as a new user's first command does, then, as the peer, the
same experiment on the six version-2 sessions alone (the corpus before it grew). Prints for
each: cells, wall time, the child's peak resident memory, and the sessions the verdict compares
per model x window. Asserts nothing.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(os.environ.get("WORKBENCH_TREE") or Path(__file__).resolve().parents[1]).resolve()
"""The tree measured: this one, or another checkout (`bench/compare.py` sets WORKBENCH_TREE)."""
sys.path.insert(0, str(ROOT))

SIX = ["gen-005k-s1", "gen-012k-s2", "gen-025k-s3", "gen-050k-s4", "gen-090k-s5", "gen-150k-s6"]
WITHOUT_LLAMA_CPP = (
    "import runpy, sys\n"
    "sys.modules['llama_cpp'] = None\n"
    "sys.argv = ['workbench', *sys.argv[1:]]\n"
    "runpy.run_module('workbench', run_name='__main__')\n")


MEASURE = (
    "import resource, subprocess, sys\n"
    "subprocess.run(sys.argv[1:], check=True, capture_output=True)\n"
    "use = resource.getrusage(resource.RUSAGE_CHILDREN)\n"
    "print(use.ru_utime + use.ru_stime, use.ru_maxrss)\n")
"""``python -c`` program: run the command given, print its CPU seconds (user + system, every
thread) and its peak resident memory (KB)."""


def _run(spec: Path | None, out: Path) -> tuple[float, float, float]:
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    env["WORKBENCH_USER_PATH"] = str(out.parent / "user")
    env["PYTHONPATH"] = str(ROOT)
    args = [sys.executable, "-c", WITHOUT_LLAMA_CPP, "run"]
    args += [str(spec)] if spec is not None else []
    started = time.perf_counter()
    done = subprocess.run([sys.executable, "-c", MEASURE, *args, "--out", str(out),
                           "--no-progress"], cwd=ROOT, env=env, check=True,
                          capture_output=True, text=True)
    wall = time.perf_counter() - started
    cpu, peak = done.stdout.split()[-2:]
    return wall, float(cpu), int(peak) / 1024


def _describe(label: str, out: Path, wall: float, peak_mb: float) -> float:
    from workbench.harness import Results

    results = Results.load(out)
    table = results.table()
    print(f"{label}: {len(results.cells)} cells in {wall:.1f} s, peak memory {peak_mb:.0f} MB")
    for (model, window), rows in table.groupby(["model", "window"], sort=True):
        print(f"  {model} @ {window // 1024}k: compared over {int(rows['n'].iloc[0])} sessions, "
              f"failures over {int(rows['cells'].iloc[0])}")
    return wall


def main() -> None:
    from workbench.harness import Experiment

    folder = Path(tempfile.mkdtemp(prefix="bench-default-"))
    wall, cpu, peak = _run(None, folder / "default")
    if "--json" in sys.argv[1:]:  # bench/compare.py: the default run alone
        print(json.dumps({"wall_s": wall, "cpu_s": cpu, "peak_mb": peak}))
        shutil.rmtree(folder, ignore_errors=True)
        return
    full = _describe("default run", folder / "default", wall, peak)
    base = Experiment.default()
    # the spec moves to a temp folder: its recording paths become absolute
    models = [m.model_copy(update={"cache_path": str(base.resolve_path(m.cache_path))})
              if m.cache_path else m for m in base.models]
    cache = base.cache.model_copy(update={"path": str(base.cache_file())})
    six = base.model_copy(update={
        "sessions": [base.sessions[0].model_copy(update={"path": n}) for n in SIX],
        "models": models, "cache": cache})
    spec = folder / "six.toml"
    spec.write_text(six.to_toml(), encoding="utf-8")
    wall, _, peak = _run(spec, folder / "six")
    peer = _describe("peer: the same experiment on the six version-2 sessions", folder / "six",
                     wall, peak)
    print(f"ratio: the default run takes {full / peer:.2f}x the six-session run")


if __name__ == "__main__":
    main()
