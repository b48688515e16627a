"""Questions from real sessions: how many each recording gets, and how many are answerable.

Run: ``python bench/bench_questions.py [SPEC]`` (default ``experiments/shared-sessions.toml``,
which reads the real recorded sessions of ``../shared/sessions``). Offline, no model.

For every session of the spec, the transcript question builder runs as a run's ``[qa]`` step
runs it (its defaults: one question per 2k tokens, at least 15, at most 40), and the offline
``lookup`` answerer answers every question from the session's full history. Printed:

- per kind of fact (the extractor: files, failures, commands, identifiers, constraints,
  requests, updates) and per Factory kind: the questions found, dropped by the evidence check,
  asked, and the share of the asked ones answered right from the full history (grade 1);
- per session: its tokens (o200k, agent-visible), the questions asked and answered;
- the minimum over sessions above 5k tokens and the median;
- CPU time: building the questions against loading the session, and answering them from the
  full history, per session (medians), measured in this run.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from workbench.errors import ConfigError  # noqa: E402
from workbench.harness.experiment._cells import load_experiment_sessions  # noqa: E402
from workbench.harness.experiment._spec import Experiment  # noqa: E402
from workbench.probes import LookupAnswerer, build_questions, grade_answer  # noqa: E402
from workbench.probes._from_transcript import transcript_candidates  # noqa: E402
from workbench.tokens import context_tokens, default_estimator  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
SPEC = ROOT / "experiments" / "shared-sessions.toml"
LARGE = 5000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("spec", nargs="?", default=str(SPEC))
    parser.add_argument("--failures", action="store_true",
                        help="Also print every question the full history does not answer.")
    args = parser.parse_args()
    experiment = Experiment.from_toml(args.spec)
    try:
        started = time.process_time()
        sessions = load_experiment_sessions(experiment)
        load_time = time.process_time() - started
    except ConfigError as exc:
        print(f"cannot load the sessions: {exc}")
        raise SystemExit(2) from None
    qa = experiment.qa
    estimator = default_estimator()
    found: Counter[str] = Counter()
    dropped: Counter[str] = Counter()
    asked: Counter[str] = Counter()
    right: Counter[str] = Counter()
    kind_asked: Counter[str] = Counter()
    kind_right: Counter[str] = Counter()
    rows = []
    build_times, answer_times = [], []
    misses = []
    for session in sessions:
        tokens = context_tokens(session.messages, estimator)
        all_found, all_dropped = transcript_candidates(session)
        found.update(q.source for q in all_found)
        dropped.update(all_dropped)
        started = time.process_time()
        questions = build_questions(session, **({} if qa is None else qa.build_options())
                                    ).questions
        build_times.append(time.process_time() - started)
        started = time.process_time()
        answerer = LookupAnswerer(session.messages)
        answers = [(q, answerer.answer(q)) for q in questions]
        answer_times.append(time.process_time() - started)
        good = 0
        for q, answer in answers:
            ok = grade_answer(q, answer) >= 1.0
            good += ok
            asked[q.source] += 1
            right[q.source] += ok
            kind_asked[q.kind] += 1
            kind_right[q.kind] += ok
            if not ok:
                misses.append((session.id, q, answer))
        rows.append((session.id, tokens, len(questions), good))

    print(f"{len(sessions)} sessions from {args.spec}; questions answered by lookup from the "
          "full history:")
    print(f"  {'kind of fact':26s} {'found':>6s} {'dropped':>8s} {'asked':>6s} {'answered':>9s}")
    for source in sorted(set(found) | set(dropped) | set(asked)):
        share = right[source] / asked[source] if asked[source] else float("nan")
        print(f"  {source:26s} {found[source]:6d} {dropped[source]:8d} {asked[source]:6d} "
              f"{share:8.1%}")
    total, good = sum(asked.values()), sum(right.values())
    print(f"  {'all':26s} {sum(found.values()):6d} {sum(dropped.values()):8d} {total:6d} "
          f"{good / max(total, 1):8.1%}")
    print("  per Factory kind: " + ", ".join(
        f"{k} {kind_right[k]}/{kind_asked[k]} ({kind_right[k] / kind_asked[k]:.0%})"
        for k in sorted(kind_asked)))
    print("\nper session (tokens: o200k, agent-visible):")
    for sid, tokens, n, ok in rows:
        print(f"  {sid[:52]:52s} {tokens:8,d} tokens {n:3d} questions {ok:3d} answered")
    large = [n for _, tokens, n, _ in rows if tokens > LARGE]
    print(f"\nquestions per session: minimum over the {len(large)} sessions above {LARGE:,} "
          f"tokens {min(large) if large else 0}, median over all "
          f"{statistics.median(n for _, _, n, _ in rows):g}")
    load = load_time / len(sessions)
    build, answer = statistics.median(build_times), statistics.median(answer_times)
    print(f"CPU per session: building the questions {build * 1000:.0f} ms (median; range "
          f"{min(build_times) * 1000:.0f}-{max(build_times) * 1000:.0f}), answering them by "
          f"lookup from the full history {answer * 1000:.0f} ms (median), against loading a "
          f"session {load * 1000:.0f} ms (mean): {build / load:.2f}x and {answer / load:.2f}x "
          "a load")
    if args.failures:
        print("\nnot answered from the full history:")
        for sid, q, answer in misses:
            print(f"  {sid[:30]} {q.id} [{q.answer_type}] {q.text[:150]!r}\n"
                  f"      expected {q.expected_text()[:100]!r}\n      got      {answer[:100]!r}")


if __name__ == "__main__":
    main()
