"""Hardening benchmark: what redaction, the run-folder lock and budget reservation cost per cell,
printed next to the latency of a model call.

Run: ``python bench/bench_hardening.py [--rounds 200]``. Offline: the model call is a litellm
call to an OpenAI-compatible server on 127.0.0.1 that answers at once (a floor: real providers
take 0.5-30 s), plus a zero-latency `ScriptedModel` for the wrapper overhead.

1. Redaction per cell: masking one realistic cell row (a 4 KB chained traceback holding an
   echoed key, error message, labels) and its attempt rows, as ``ResultsStore.record_cell`` does,
   plus the summary file text; with several secret-looking environment variables set.
   Then the cost of redaction by position: the same cell with and without the values a gateway
   registers for three headers and two ``api_base`` query values (each with its base64 forms),
   measured in alternating rounds (median of each), so both sides share the machine's load.
   Then the cost of the escaped forms: the same cell whose traceback holds a provider's JSON
   body with the key JSON-escaped (``\\u002d``, ``\\/``) and URL-encoded (``%2F``), which
   redaction searches in an unescaped view of the text.
2. Locking per run: acquire + release of `RunLock` (one per run, so per cell it is this divided
   by the cell count), and marking interrupted runs.
3. Budget reservation per call: `BudgetedModel` (prompt token estimate, price lookup, reserve,
   settle) around a zero-latency scripted model, minus the bare model.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from workbench._redact import (  # noqa: E402
    _secrets,  # noqa: E402
    redact,
    redactor,
    register_secret,
    register_secrets_in,
)
from workbench.compaction import Usage  # noqa: E402
from workbench.harness.results._store import ResultsStore  # noqa: E402
from workbench.harness.run._budget import BudgetedModel, RunBudget  # noqa: E402
from workbench.harness.run._lock import RunLock  # noqa: E402
from workbench.messages import Message  # noqa: E402
from workbench.testing import ScriptedModel  # noqa: E402

KEY = "sk-bench-" + "0123456789abcdef" * 2


def cell_row() -> tuple[dict[str, Any], list[dict[str, Any]], str]:
    frames = "".join(f'  File "/site-packages/litellm/module_{i}.py", line {i * 7}, in call_{i}\n'
                     f"    response = await self.client.post(url, json=payload)\n"
                     for i in range(30))
    traceback = ("Traceback (most recent call last):\n" + frames
                 + f"litellm.AuthenticationError: Incorrect API key provided: Bearer {KEY}\n")
    row = {"cell_id": "0123456789abcdef", "run_id": "01HZX", "session_id": "gen-005k-s1",
           "session_path": "/work/datasets/gen-005k-s1.json", "session_format": "goose-json",
           "strategy": "goose", "model": "openai/gpt-4o-mini[api_base=http://h/v1,temperature=0]",
           "template": "default", "window": 8192, "repeat": 0, "status": "error",
           "error_type": "CompactionCallFailed",
           "error_message": f"openai/gpt-4o-mini: credentials were rejected: {KEY}",
           "traceback": traceback, "metrics_json": json.dumps({"probe_recall": 0.5} | {
               f"metric_{i}": i / 7 for i in range(20)})}
    attempts = [{"attempt_no": i + 1, "outcome": "error", "model": "openai/gpt-4o-mini",
                 "error": f"rejected {KEY}", "prompt_hash": "ab" * 32} for i in range(2)]
    summary = ("# Conversation Summary\n\n## User Intent\n- fix the failing login test\n"
               + "## Files\n" + "".join(f"- src/module_{i}.py: edited the parser\n"
                                        for i in range(40)))
    return row, attempts, summary


def per_call_us(fn: Any, rounds: int) -> float:
    fn()
    started = time.perf_counter()
    for _ in range(rounds):
        fn()
    return (time.perf_counter() - started) / rounds * 1e6


def _one_cell(row: dict[str, Any], attempts: list[dict[str, Any]], summary: str) -> Any:
    def one_cell() -> None:
        clean = redactor().text
        for item in [row, *attempts]:
            for value in item.values():
                if isinstance(value, str):
                    clean(value)
        redact(summary)
    return one_cell


def bench_redaction(rounds: int) -> float:
    row, attempts, summary = cell_row()
    one_cell = _one_cell(row, attempts, summary)
    us = per_call_us(one_cell, rounds)
    masked = redactor().text(row["traceback"])
    assert KEY not in masked
    print(f"redaction per cell        {us:10.1f} us   ({sum(isinstance(v, str) for v in row.values())}"
          f" row strings + {len(attempts)} attempts + summary; traceback "
          f"{len(row['traceback'])} chars)")
    return us


POSITIONAL = {
    "api_base": "https://gateway.example/v1beta?key=AIzaSyBench0123456789abcdef&project=p-4711",
    "extra_headers": {"X-Custom-Auth": "custom-auth-0123456789abcdef", "X-Tenant": "tenant-42",
                      "Accept": "application/json"},
}


def bench_positional_redaction(rounds: int, repeats: int = 7) -> float:
    """Median per-cell redaction time with and without the gateway's positional values."""
    row, attempts, summary = cell_row()
    row = dict(row, traceback=row["traceback"] + "echo: X-Custom-Auth: custom-auth-0123456789abcdef")
    one_cell = _one_cell(row, attempts, summary)
    without = set(_secrets._registered)
    register_secrets_in(POSITIONAL)
    with_them = set(_secrets._registered)

    def use(values: set[str]) -> None:
        with _secrets._registered_lock:
            _secrets._registered.clear()
            _secrets._registered.update(values)
            _secrets._registry_version[0] += 1

    before, after = [], []
    for _ in range(repeats):
        use(without)
        before.append(per_call_us(one_cell, rounds))
        use(with_them)
        after.append(per_call_us(one_cell, rounds))
    masked = redactor().text(row["traceback"])
    assert "custom-auth-0123456789abcdef" not in masked
    b, a = sorted(before)[repeats // 2], sorted(after)[repeats // 2]
    added = len(with_them) - len(without)
    print(f"redaction by position     {a - b:+10.1f} us   per cell ({a:.1f} us with, {b:.1f} us "
          f"without; {added} exact values added for 3 headers and 2 query values, base64 "
          f"forms included; medians of {repeats} alternating rounds)")
    return a - b


def bench_escaped_redaction(rounds: int, repeats: int = 7) -> tuple[float, float]:
    """Median per-cell redaction time of a plain cell and of one whose traceback holds the key
    JSON-escaped and URL-encoded, in alternating rounds."""
    row, attempts, summary = cell_row()
    escaped_key = KEY.replace("-", "\\u002d")
    body = json.dumps({"error": {"message": f"Incorrect API key provided: {escaped_key}",
                                 "url": "https:\\/\\/gw.example\\/v1?key=" + KEY.replace("-", "%2D")}})
    escaped = dict(row, traceback=row["traceback"] + "Provider said: " + body)
    plain, echoed = _one_cell(row, attempts, summary), _one_cell(escaped, attempts, summary)
    before, after = [], []
    for _ in range(repeats):
        before.append(per_call_us(plain, rounds))
        after.append(per_call_us(echoed, rounds))
    assert "bench" not in redactor().text(escaped["traceback"]).split("Provider said:")[1]
    b, a = sorted(before)[repeats // 2], sorted(after)[repeats // 2]
    print(f"redaction, escaped echo   {a - b:+10.1f} us   per cell ({a:.1f} us with the key "
          f"JSON-escaped and URL-encoded in the traceback, {b:.1f} us without; medians of "
          f"{repeats} alternating rounds)")
    return b, a


def bench_lock(rounds: int) -> float:
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "run"
        store = ResultsStore(Path(tmp) / "results.sqlite")

        def one_run() -> None:
            with RunLock(folder):
                store.mark_interrupted()

        us = per_call_us(one_run, rounds)
        store.close()
    print(f"lock + mark per run       {us:10.1f} us   (per cell: this / cells in the run)")
    return us


def bench_budget(rounds: int) -> tuple[float, float]:
    messages = [Message.user("Summarize the conversation above.")]
    system = "You summarize.\n" + "transcript line\n" * 400
    usage = Usage(model="scripted", input_tokens=100, output_tokens=50, cost=0.001)
    bare = ScriptedModel(["summary"], usage=usage)
    budget = RunBudget(max_cost=1e9)
    wrapped = BudgetedModel(ScriptedModel(["summary"], usage=usage), budget,
                            "openai/gpt-4o-mini", output_tokens=1000)

    async def calls(model: Any) -> float:
        await model.complete(system, messages)
        started = time.perf_counter()
        for _ in range(rounds):
            await model.complete(system, messages)
        return (time.perf_counter() - started) / rounds * 1e6

    bare_us = asyncio.run(calls(bare))
    wrapped_us = asyncio.run(calls(wrapped))
    print(f"budget reservation / call {wrapped_us - bare_us:10.1f} us   (wrapped {wrapped_us:.1f}"
          f" us vs bare scripted model {bare_us:.1f} us; 6 KB prompt)")
    return bare_us, wrapped_us


class _Instant(BaseHTTPRequestHandler):
    def do_POST(self) -> None:  # noqa: N802 - http.server's naming
        self.rfile.read(int(self.headers.get("content-length") or 0))
        data = json.dumps({
            "id": "c", "object": "chat.completion", "created": 0, "model": "m",
            "choices": [{"index": 0, "finish_reason": "stop",
                         "message": {"role": "assistant", "content": "summary"}}],
            "usage": {"prompt_tokens": 10, "completion_tokens": 2, "total_tokens": 12}}).encode()
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, format: str, *args: Any) -> None:
        pass


def bench_model_call(rounds: int) -> float:
    from workbench.models._litellm import LiteLLMModel

    server = ThreadingHTTPServer(("127.0.0.1", 0), _Instant)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    model = LiteLLMModel("openai/bench", api_base=f"http://127.0.0.1:{server.server_address[1]}/v1",
                         api_key=KEY)

    async def calls() -> float:
        await model.complete("s", [Message.user("u")])
        started = time.perf_counter()
        for _ in range(rounds):
            await model.complete("s", [Message.user("u")])
        return (time.perf_counter() - started) / rounds * 1e6

    try:
        us = asyncio.run(calls())
    finally:
        server.shutdown()
        server.server_close()
    print(f"model call (local, 0 ms)  {us:10.1f} us   (litellm to 127.0.0.1; real providers "
          "take 0.5-30 s)")
    return us


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=200)
    args = parser.parse_args()
    for name in ("BENCH_A_API_KEY", "BENCH_B_TOKEN", "BENCH_C_SECRET", "BENCH_D_PASSWORD"):
        os.environ.setdefault(name, name.lower() + "-value-0123456789")
    register_secret(KEY)
    print(f"python {sys.version.split()[0]}, {args.rounds} rounds each, "
          f"{len(os.environ)} environment variables")
    redaction = bench_redaction(args.rounds)
    positional = bench_positional_redaction(max(args.rounds // 4, 20))
    bench_escaped_redaction(max(args.rounds // 4, 20))
    lock = bench_lock(max(args.rounds // 4, 10))
    _, _ = bench_budget(args.rounds)
    call = bench_model_call(max(args.rounds // 10, 10))
    print(f"\nredaction is {redaction / call * 100:.2f} % of a 0 ms local model call (by "
          f"position: {positional / call * 100:+.2f} %); lock {lock / call * 100:.2f} % once "
          "per run.")


if __name__ == "__main__":
    main()
