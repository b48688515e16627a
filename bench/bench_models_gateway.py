"""Overhead of the litellm gateway per call, against an instant OpenAI-compatible stub on 127.0.0.1.

Measures what the workbench adds on top of the provider's own latency: message conversion,
litellm's request building and response parsing, error mapping and retry bookkeeping.

Usage: ``python bench/bench_models_gateway.py [--calls 50] [--concurrency 8]``
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from workbench.messages import Message
from workbench.models._errors_map import load_litellm
from workbench.models._litellm import LiteLLMModel

ANSWER = json.dumps({
    "id": "x", "object": "chat.completion", "created": 0, "model": "stub",
    "choices": [{"index": 0, "finish_reason": "stop",
                 "message": {"role": "assistant", "content": "summary " * 50}}],
    "usage": {"prompt_tokens": 1000, "completion_tokens": 50, "total_tokens": 1050},
}).encode()


class _Stub(BaseHTTPRequestHandler):
    def do_POST(self) -> None:  # noqa: N802
        self.rfile.read(int(self.headers.get("content-length") or 0))
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(ANSWER)))
        self.end_headers()
        self.wfile.write(ANSWER)

    def log_message(self, *args: object) -> None:
        pass


async def _run(calls: int, concurrency: int, port: int) -> None:
    model = LiteLLMModel("openai/stub", api_base=f"http://127.0.0.1:{port}/v1", api_key="sk-bench")
    convo = [Message.user("word " * 2000)]
    await model.complete("system", convo)  # warm-up: first call builds litellm's clients

    latencies = []
    for _ in range(calls):
        started = time.perf_counter()
        await model.complete("system", convo)
        latencies.append((time.perf_counter() - started) * 1000)
    print(f"sequential: {calls} calls, median {statistics.median(latencies):.1f} ms, "
          f"p90 {sorted(latencies)[int(calls * 0.9) - 1]:.1f} ms per call")

    limit = asyncio.Semaphore(concurrency)

    async def one() -> None:
        async with limit:
            await model.complete("system", convo)

    started = time.perf_counter()
    await asyncio.gather(*(one() for _ in range(calls)))
    elapsed = time.perf_counter() - started
    print(f"concurrent ({concurrency}): {calls} calls in {elapsed:.2f} s "
          f"= {calls / elapsed:.0f} calls/s")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=50)
    parser.add_argument("--concurrency", type=int, default=8)
    args = parser.parse_args()

    started = time.perf_counter()
    load_litellm()
    print(f"litellm import: {time.perf_counter() - started:.2f} s")
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Stub)
    httpd.daemon_threads = True
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    try:
        asyncio.run(_run(args.calls, args.concurrency, httpd.server_address[1]))
    finally:
        httpd.shutdown()


if __name__ == "__main__":
    main()
