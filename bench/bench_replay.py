"""Replay benchmark: wall time of a whole-session replay of the largest shipped dataset under
each strategy, whole session against its first half (linear growth -> a ratio near 2).

Run: ``python bench/bench_replay.py [--window 8192] [--threshold 0.8] [--repeats 3]``. Offline:
the summarizer is the extractive baseline; probes score planted facts after every round (the
replay's default). Each figure is the best of ``--repeats`` runs after one warm-up, each with a
cold token-count cache.

Token counting is incremental (each message counted once when it enters the context; a
compaction recounts only the messages it made), so strategies whose context stays bounded by
the window grow linearly. ``mask`` does not bound the context (masked outputs leave the text
of every turn), fires on nearly every turn once over the trigger, and re-walks the whole
context each time: its time grows faster than linearly by the nature of the policy.
"""

from __future__ import annotations

import argparse
import sys
import time
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from workbench.harness.experiment._cells import read_manifest  # noqa: E402
from workbench.models import load_model  # noqa: E402
from workbench.sessions import Session, load_session  # noqa: E402
from workbench.strategies import replay_session  # noqa: E402
from workbench.tokens import TiktokenEstimator, default_estimator  # noqa: E402

STRATEGIES: list[tuple[str, dict[str, object]]] = [
    ("none", {}), ("truncate", {}), ("mask", {"keep_last": 3}), ("goose", {}), ("awaken", {})]


def largest_dataset() -> Session:
    manifest = read_manifest()
    path = max((p for p, _ in manifest.values()), key=lambda p: p.stat().st_size)
    return load_session(path)


def first_half(session: Session) -> Session:
    return replace(session, id=f"{session.id}[:half]",
                   messages=session.messages[:len(session.messages) // 2])


def timed(session: Session, name: str, settings: dict[str, object], args: argparse.Namespace,
          model: object) -> tuple[float, int, int]:
    best = float("inf")
    result = None
    for _ in range(args.repeats):
        estimator = TiktokenEstimator()  # a cold token cache each run: no help from the last
        started = time.perf_counter()
        result = replay_session(session, name, settings=settings, window=args.window,
                                threshold=args.threshold, model=model, probes=args.probes,
                                estimator=estimator)
        best = min(best, time.perf_counter() - started)
    assert result is not None
    return best, len(result.turns), result.compactions


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--window", type=int, default=8192)
    parser.add_argument("--threshold", type=float, default=0.8)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--probes", default="facts", choices=("facts", "all", "none"))
    args = parser.parse_args()

    session = largest_dataset()
    half = first_half(session)
    model = load_model("extractive")
    tokens = default_estimator().count_context_tokens(session.messages)
    print(f"session {session.id}: {len(session.messages)} messages, {tokens:,} tokens; "
          f"window {args.window}, threshold {args.threshold}, probes {args.probes}, "
          f"best of {args.repeats}")
    replay_session(half, "none", window=args.window)  # warm-up: tokenizer and imports
    print(f"{'strategy':<10} {'half s':>8} {'whole s':>8} {'ratio':>6} {'turns':>11} "
          f"{'compactions':>12}")
    for name, settings in STRATEGIES:
        t_half, turns_half, comp_half = timed(half, name, settings, args, model)
        t_whole, turns_whole, comp_whole = timed(session, name, settings, args, model)
        print(f"{name:<10} {t_half:8.3f} {t_whole:8.3f} {t_whole / t_half:6.2f} "
              f"{turns_half:>5}/{turns_whole:<5} {comp_half:>5}/{comp_whole:<6}")


if __name__ == "__main__":
    main()
