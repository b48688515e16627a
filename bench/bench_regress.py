"""Regression-gate benchmark: wall time of ``workbench regress`` on the project's own gate.

Run: ``python bench/bench_regress.py [--repeats 3]``. Offline: replays the committed recording
against the committed baseline in ``regress/regress/`` (a temporary copy, so nothing changes).
Prints per repeat the wall time of the whole gate (spec, replay run, snapshot, comparison) and
of its parts: the replayed run alone, and the snapshot plus comparison.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from workbench.harness import Experiment, Results, run_experiment  # noqa: E402
from workbench.regress import Snapshot, run_regress  # noqa: E402
from workbench.regress._compare import compare_metrics, compare_summaries  # noqa: E402
from workbench.regress._replay import force_cache_mode  # noqa: E402

SPEC = ROOT / "experiments" / "regress.toml"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    experiment = Experiment.from_toml(SPEC)
    with tempfile.TemporaryDirectory() as tmp:
        baseline = Path(shutil.copytree(ROOT / "regress" / experiment.name, Path(tmp) / "base"))
        for i in range(args.repeats):
            started = time.perf_counter()
            report = run_regress(SPEC, baseline)
            whole = time.perf_counter() - started

            started = time.perf_counter()
            results = run_experiment(force_cache_mode(experiment, "replay"),
                                     Path(tmp) / f"run{i}", progress=False)
            replay = time.perf_counter() - started
            assert isinstance(results, Results)
            started = time.perf_counter()
            current = Snapshot.from_results(results, experiment.regress, experiment.name)
            base = Snapshot.read(baseline)
            findings = (compare_metrics(base, current, experiment.regress)
                        + compare_summaries(base, current))
            compare = time.perf_counter() - started
            print(f"repeat {i + 1}: gate {whole:.2f} s (exit {report.exit_code}, {report.cells} "
                  f"cells) | replayed run {replay:.2f} s | snapshot + compare "
                  f"{compare * 1000:.0f} ms ({len(findings)} findings)")


if __name__ == "__main__":
    main()
