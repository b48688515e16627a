"""Report benchmark: a 2,000-cell extractive run, then its report, timed and sized.

Run: ``python bench/bench_report.py [--repeats 12] [--out DIR]``. Offline: the extractive model
over the six version-2 shipped datasets x every template variant x six windows x `repeats` (6 x 4 x 6 x 12 =
1,728 cells by default, plus the ladder's failures). Prints the run's wall time, then for
`write_report`: wall time, report.html size, its compressed payload share, and the largest
payload chunk. Asserts nothing.
"""

from __future__ import annotations

import argparse
import re
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from workbench.harness import Experiment, run_experiment, write_report  # noqa: E402

SIX = ["gen-005k-s1", "gen-012k-s2", "gen-025k-s3", "gen-050k-s4", "gen-090k-s5", "gen-150k-s6"]
"""The six version-2 datasets (5k-150k): the figures stay comparable as the corpus grows."""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=14)
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    out = args.out or Path(tempfile.mkdtemp(prefix="bench-report-")) / "run"
    spec = Experiment.from_dict({
        "name": "bench-report", "sessions": SIX, "models": ["extractive"],
        "templates": ["all"], "windows": ["4k", "8k", "16k", "32k", "64k", "none"],
        "repeats": args.repeats, "concurrency": 4})
    started = time.perf_counter()
    results = run_experiment(spec, out=out, progress=False)
    run_s = time.perf_counter() - started
    print(f"run: {len(results.cells)} cells in {run_s:.1f} s ({out})")

    for attempt in ("first", "second"):
        started = time.perf_counter()
        paths = write_report(out)
        took = time.perf_counter() - started
        print(f"write_report ({attempt}): {took:.2f} s")
    html = paths["html"].read_text(encoding="utf-8")
    chunks = re.findall(r'type="application/octet-stream" id="wb-chunk-\d+">([^<]*)<', html)
    packed = sum(len(c) for c in chunks)
    print(f"report.html: {len(html) / 1e6:.2f} MB, of which {packed / 1e6:.2f} MB in "
          f"{len(chunks)} compressed chunks (largest {max(map(len, chunks)) / 1e3:.0f} kB)")
    raw = sum(p.stat().st_size for p in (out / "summaries").glob("*"))
    print(f"summaries folder: {raw / 1e6:.2f} MB uncompressed")


if __name__ == "__main__":
    main()
