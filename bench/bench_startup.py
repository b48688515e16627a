"""Start-up benchmark: ``workbench --help`` (and ``workbench run --help``) against a bare
``python -c pass``, measured in this run on this machine.

Run: ``python bench/bench_startup.py [--repeats 21]``. Prints the median wall time of each
command and its ratio to the bare interpreter (goal: under 10x); also the wall time of
importing the harness, which every run pays before its first cell. Asserts nothing.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time


def median_ms(cmd: list[str], repeats: int) -> float:
    times = []
    for _ in range(repeats):
        started = time.perf_counter()
        subprocess.run(cmd, capture_output=True, check=True)
        times.append((time.perf_counter() - started) * 1000)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeats", type=int, default=21)
    args = parser.parse_args()
    py = sys.executable
    bare = median_ms([py, "-c", "pass"], args.repeats)
    rows = [
        ("python -c pass", bare),
        ("workbench --help", median_ms([py, "-m", "workbench", "--help"], args.repeats)),
        ("workbench run --help", median_ms([py, "-m", "workbench", "run", "--help"], args.repeats)),
        ("import workbench.harness", median_ms([py, "-c", "import workbench.harness"],
                                               max(5, args.repeats // 3))),
    ]
    print(f"{'command':28} {'median ms':>10} {'x bare':>8}")
    for name, ms in rows:
        print(f"{name:28} {ms:10.0f} {ms / bare:8.1f}")


if __name__ == "__main__":
    main()
