"""Load time and peak memory of the aider and mini-swe-agent importers on the shared recordings.

Run from the project root: ``python bench/bench_importers_extra.py`` (needs ../shared/sessions).
Peak memory is tracemalloc's peak of Python allocations during the load, not the process RSS.
"""

from __future__ import annotations

import gc
import sys
import time
import tracemalloc
from pathlib import Path

from workbench.sessions import load_sessions

SHARED = Path(__file__).resolve().parents[1].parent / "shared" / "sessions"


def measure(label: str, path: Path, fmt: str) -> None:
    """Print wall and CPU time (best of 3, untraced) and tracemalloc peak of one `load_sessions` call."""
    load_sessions(path, format=fmt)  # warm imports and the tokenizer-free code paths
    best = cpu = float("inf")
    for _ in range(3):
        gc.collect()
        start, start_cpu = time.perf_counter(), time.process_time()
        sessions = load_sessions(path, format=fmt)
        best = min(best, time.perf_counter() - start)
        cpu = min(cpu, time.process_time() - start_cpu)
    gc.collect()
    tracemalloc.start()
    load_sessions(path, format=fmt)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    messages = sum(len(s.messages) for s in sessions)
    size = path.stat().st_size
    print(f"{label}: {size / 1e6:.2f} MB, {len(sessions)} sessions, {messages} messages; "
          f"load {best * 1000:.0f} ms wall, {cpu * 1000:.0f} ms CPU "
          f"({size / 1e6 / cpu:.1f} MB/s), "
          f"peak {peak / 1e6:.1f} MB traced")


def main() -> int:
    """Run both measurements; returns a process exit code."""
    if not SHARED.is_dir():
        print(f"needs the shared sessions at {SHARED}", file=sys.stderr)
        return 1
    measure("aider (all sessions)", SHARED / "aider/tests/fixtures/chat-history.md", "aider")
    trajs = sorted((SHARED / "mini-swe-agent").rglob("*.traj.json"),
                   key=lambda p: p.stat().st_size)
    measure(f"mini-swe-agent ({trajs[-1].parent.name})", trajs[-1], "mini-swe-agent")
    return 0


if __name__ == "__main__":
    sys.exit(main())
