"""Analysis benchmark: the comparison table, the cluster bootstrap and the verdict on a large run.

Run: ``python bench/bench_verdict.py [--sessions 100] [--templates 4] [--models 3]``. Builds a
synthetic cells frame (sessions x templates x models x 2 windows, 10 % compaction failures,
1 % infrastructure errors; the defaults make 2,400 cells) and prints wall times; it asserts
nothing. The verdict compares every template with the best on each headline metric (paired
cluster bootstrap, 2,000 resamples, Holm) and recommends a template per stratum and for the
run; its goal is under 2 s on 2,400 cells.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from workbench.harness import comparison_table, paired_comparison, verdict  # noqa: E402


def synthetic(sessions: int, templates: int, models: int, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    rows = []
    for s in range(sessions):
        base = rng.uniform(0.2, 0.9)
        for m in range(models):
            for window in (8192, 32768):
                for t in range(templates):
                    u = rng.uniform()
                    kind = "error" if u < 0.01 else "failed" if u < 0.11 else "ok"
                    ok = kind == "ok"
                    rows.append({
                        "session_id": f"s{s}", "strategy": "goose", "model": f"m{m}",
                        "template": f"t{t}", "window": window, "repeat": 0,
                        "status": "ok" if ok else "error", "outcome_kind": kind,
                        "error_class": {"ok": None, "failed": "ContextLengthExceeded",
                                        "error": "CacheMiss"}[kind],
                        "parse_outcome": "structured" if ok else None,
                        "retained_tokens": rng.normal(600 + 20 * t, 50) if ok else None,
                        "summary_tokens": rng.normal(500, 40) if ok else None,
                        "billed_input_tokens": 7000, "billed_output_tokens": 400,
                        "cost": 0.0, "attempts": 1, "retries": int(rng.integers(0, 5)),
                        "probe_recall": min(1.0, base + 0.02 * t + rng.normal(0, 0.05))
                        if ok else None,
                        "template_echo": 0.0 if ok else None, "fill_rate": 0.6 if ok else None})
    return pd.DataFrame(rows)


def timed(label: str, fn, repeat: int = 3) -> None:  # type: ignore[no-untyped-def]
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    print(f"{label:<48} {best * 1000:9.1f} ms")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sessions", type=int, default=100)
    parser.add_argument("--templates", type=int, default=4)
    parser.add_argument("--models", type=int, default=3)
    args = parser.parse_args()
    cells = synthetic(args.sessions, args.templates, args.models)
    print(f"{len(cells):,} cells ({args.sessions} sessions x {args.templates} templates x "
          f"{args.models} models x 2 windows)")
    timed("comparison_table (common sessions)", lambda: comparison_table(cells))
    timed("comparison_table (survivors)", lambda: comparison_table(cells, survivors=True))
    timed("paired_comparison t0 vs t1 (2000 resamples)",
          lambda: paired_comparison(cells, "t0", "t1"))
    timed("paired_comparison, cell-level resampling",
          lambda: paired_comparison(cells, "t0", "t1", cluster=None))
    timed(f"verdict on {len(cells):,} cells (goal < 2,000 ms)", lambda: verdict(cells))
    found = verdict(cells)
    comparisons = sum(len(m.comparisons) for s in found.strata for m in s.metrics)
    print(f"  {len(found.strata)} strata, {comparisons} comparisons with the best; "
          f"{found.recommendation.to_text()[:100] if found.recommendation else ''}...")


if __name__ == "__main__":
    main()
