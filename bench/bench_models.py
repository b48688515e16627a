"""Overhead of the model wrappers around a zero-latency fake model.

Prints, per call: the bare fake, `WindowCap` (prompt counted with tiktoken; the same prompt again,
which the estimator's LRU serves, and a fresh prompt each call), `CachedModel` hits (read-write,
which also bumps the hit counter, and replay-only), and a miss that calls the fake and stores the
answer. Ratios are against the bare fake. Run: ``python bench/bench_models.py [--calls N]``.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import tempfile
import time
from pathlib import Path

from workbench.compaction._model import Usage
from workbench.messages import Message
from workbench.models import CachedModel, ResponseCache, WindowCap
from workbench.tokens import default_estimator

PARAGRAPH = ("The assistant ran pytest, read src/app.py, found that add() subtracted, edited it "
             "and re-ran the suite; two tests in tests/test_io.py still fail with a KeyError. ")
REPLY = Message.assistant("<analysis>x</analysis>\n```json\n{\"user_intent\": [\"fix\"]}\n```")


class ZeroLatencyModel:
    """Answers instantly with the same message; the baseline every wrapper is compared to."""

    model = "bench/zero"

    async def complete(self, system: str, messages: list[Message]) -> tuple[Message, Usage]:
        return REPLY, Usage(model=self.model, input_tokens=1000, output_tokens=50, cost=0.001)

    def cache_identity(self) -> dict:
        return {"model": self.model}


async def per_call(model, prompts: list[str], request: list[Message]) -> float:
    """Mean seconds per call over `prompts`."""
    started = time.perf_counter()
    for system in prompts:
        await model.complete(system, request)
    return (time.perf_counter() - started) / len(prompts)


async def main(calls: int) -> None:
    base_prompt = "# Conversation History\n" + PARAGRAPH * 60
    tokens = default_estimator().count_text_tokens(base_prompt)
    same = [base_prompt] * calls
    fresh = [f"{base_prompt}\n[user]: request {i}" for i in range(calls)]
    request = [Message.user("Summarize the conversation above.")]
    fake = ZeroLatencyModel()

    with tempfile.TemporaryDirectory() as tmp:
        os.environ["WORKBENCH_USER_PATH"] = tmp
        cache = ResponseCache(Path(tmp) / "bench.db")
        rw, replay = CachedModel(fake, cache, "rw"), CachedModel(fake, cache, "replay")
        cap = WindowCap(fake, 1_000_000)

        await per_call(fake, same[:100], request)  # warm the loop
        rows = [("bare fake", await per_call(fake, same, request))]
        await per_call(cap, same[:1], request)  # warm the estimator
        rows.append(("WindowCap, same prompt (LRU)", await per_call(cap, same, request)))
        rows.append(("WindowCap, fresh prompt", await per_call(cap, fresh, request)))
        rows.append(("CachedModel miss + store", await per_call(rw, fresh, request)))
        rows.append(("CachedModel hit (rw)", await per_call(rw, fresh, request)))
        rows.append(("CachedModel hit (replay)", await per_call(replay, fresh, request)))
        entries, size = cache.stats()["entries"], cache.stats()["bytes"]
        cache.close()

    bare = rows[0][1]
    print(f"{calls} calls per row; prompt {tokens} tokens ({len(base_prompt)} chars); "
          f"cache: {entries} rows, {size / 1e6:.1f} MB")
    print(f"{'':32} {'per call':>12} {'x bare':>10}")
    for name, seconds in rows:
        print(f"{name:32} {seconds * 1e6:9.1f} us {seconds / bare:10.1f}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=2000)
    asyncio.run(main(parser.parse_args().calls))
