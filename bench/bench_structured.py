"""Timings for the structured-summary parser on hostile responses and for transcript counting.

Prints, does not assert. Run: ``python bench/bench_structured.py``.

Hostile responses mix the three shapes that make the direct algorithm quadratic: many ```json
fences (each a candidate start), deep unclosed braces (each scan runs to the end), and many
``</analysis>`` terminators (each a cut whose tail is re-counted).
"""

from __future__ import annotations

import multiprocessing
import time

from workbench._offline import ensure_offline

ensure_offline()

from workbench.compaction import StructuredSummary, format_transcript  # noqa: E402
from workbench.compaction._candidates import json_candidates, naive_json_candidates  # noqa: E402
from workbench.messages import Message  # noqa: E402
from workbench.tokens import TiktokenEstimator  # noqa: E402

BLOCK = (
    "<analysis>step</analysis>\n"
    "```json\n{\"user_intent\": [\"x\"], \"note\": \"```json {\"\n"
    + "{" * 40
    + "\n```json\n{ \"k\": \"v\" }\n"
    + '"quoted </analysis> text"\n'
)


NESTED = '```json\n{"k": 1, '


def hostile(size: int) -> str:
    """About `size` characters: half terminators, fences and deep unclosed braces, then a tail
    of nested fenced objects after the last terminator (every one a candidate that fails)."""
    head = (BLOCK * (size // 2 // len(BLOCK) + 1))[: size // 2]
    nested = (size - len(head)) // (len(NESTED) + 1)
    return head + "</analysis>" + NESTED * nested + "}" * nested


def timed(fn, *args) -> tuple[float, object]:  # type: ignore[no-untyped-def]
    started = time.perf_counter()
    result = fn(*args)
    return time.perf_counter() - started, result


NAIVE_BUDGET_S = 60


def _naive_child(text: str, queue: multiprocessing.Queue) -> None:  # type: ignore[type-arg]
    seconds, found = timed(naive_json_candidates, text)
    queue.put((seconds, found))


def naive_seconds(text: str, expected: list[str], budget: float) -> float | None:
    """Time the direct algorithm in a child process; None when it exceeds `budget` seconds."""
    queue: multiprocessing.Queue = multiprocessing.Queue()  # type: ignore[type-arg]
    child = multiprocessing.Process(target=_naive_child, args=(text, queue))
    child.start()
    try:
        seconds, found = queue.get(timeout=budget)
    except Exception:  # queue.Empty: out of budget
        child.terminate()
        child.join()
        return None
    child.join()
    assert found == expected, "fast and naive candidate lists differ"
    return seconds


def transcript(tokens_wanted: int) -> list[Message]:
    """A synthetic session of user turns, tool calls and tool output of roughly that size."""
    messages: list[Message] = []
    i = 0
    chunk = "line {i}: compiled module_{i}.rs with 3 warnings and 0 errors\n" * 40
    while len(messages) * 255 < tokens_wanted:
        messages.append(Message.user(f"please look at file {i} and fix the failing test"))
        messages.append(
            Message.assistant(f"Checking file {i}").with_tool_request(
                f"c{i}", "developer__shell", {"command": f"cargo test -p crate_{i}"}
            )
        )
        messages.append(Message.user().with_tool_response(f"c{i}", chunk.format(i=i)))
        i += 1
    return messages


def main() -> None:
    print("StructuredSummary.parse on hostile responses")
    for label, size in (("100 KB", 100_000), ("1 MB", 1_000_000), ("4 MB", 4_000_000)):
        text = hostile(size)
        seconds, outcome = timed(StructuredSummary.parse_detailed, text)
        print(
            f"  {label:>6}: {seconds:7.3f} s  reason={outcome.reason}"  # type: ignore[attr-defined]
            f" after {outcome.candidates} candidates"  # type: ignore[attr-defined]
        )

    text = hostile(100_000)
    fast, got = timed(json_candidates, text)
    naive = naive_seconds(text, got, NAIVE_BUDGET_S)
    if naive is None:
        print(
            f"json_candidates on 100 KB: fast {fast:.3f} s ({len(got)} candidates); naive did not "
            f"finish within {NAIVE_BUDGET_S} s, so naive/fast > {NAIVE_BUDGET_S / fast:.0f}x"
        )
    else:
        print(
            f"json_candidates on 100 KB: fast {fast:.3f} s, naive {naive:.3f} s, "
            f"naive/fast = {naive / max(fast, 1e-9):.0f}x ({len(got)} candidates, identical)"
        )

    estimator = TiktokenEstimator()
    messages = transcript(250_000)
    seconds_fmt, rendered = timed(format_transcript, messages)
    seconds_count, total = timed(estimator.count_text_tokens, rendered)
    # the cache would make a second count free; a fresh estimator measures real work
    fresh = TiktokenEstimator()
    seconds_ctx, ctx_total = timed(fresh.count_context_tokens, messages)
    print(
        f"transcript of {len(messages)} messages: format {seconds_fmt:.3f} s, "
        f"count_text_tokens {seconds_count:.3f} s ({total} tokens), "
        f"count_context_tokens {seconds_ctx:.3f} s ({ctx_total} tokens)"
    )


if __name__ == "__main__":
    main()
