"""Load time and peak memory of the session importers on the largest inputs we have.

Run: ``python bench/bench_sessions.py`` (from the project root; needs ../shared for the real file).
Prints one line per case: seconds to load and tracemalloc peak in MB (a second load).
"""

from __future__ import annotations

import json
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

import workbench.sessions.importers  # noqa: F401  (register importers before timing)
from workbench.sessions import load_session

ROOT = Path(__file__).resolve().parents[1]
CLAUDE = (ROOT.parent / "shared" / "sessions" / "claude-code" / "test" / "fixtures"
          / "transcripts" / "4d5611e5-241a-462a-8d15-5122611a9569.jsonl")
BIG = 8 * 1024 * 1024


def measure(label: str, path: Path, **kw: object) -> None:
    # Time without tracemalloc (it slows allocation several-fold), then a second run for memory.
    start = time.perf_counter()
    session = load_session(path, **kw)
    elapsed = time.perf_counter() - start
    tracemalloc.start()
    load_session(path, **kw)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    size = path.stat().st_size / 1e6
    print(f"{label:<36} {size:5.1f} MB file  {elapsed:6.3f} s  peak {peak / 1e6:6.1f} MB  "
          f"{len(session.messages)} messages")


def synthetic(folder: Path) -> dict[str, Path]:
    out = folder / "big-claude.jsonl"
    call = {"type": "assistant", "uuid": "a", "sessionId": "s", "message": {
        "id": "msg_1", "role": "assistant", "content": [
            {"type": "tool_use", "id": "t1", "name": "Bash", "input": {"command": "cat log"}}]}}
    result = {"type": "user", "uuid": "u", "sessionId": "s", "message": {"role": "user", "content": [
        {"type": "tool_result", "tool_use_id": "t1", "content": "x" * BIG}]}}
    out.write_text(json.dumps(call) + "\n" + json.dumps(result) + "\n", encoding="utf-8")
    codex = folder / "big-codex.jsonl"
    lines = [{"timestamp": "2025-10-01T00:00:00Z", "type": "response_item", "payload": p} for p in (
        {"type": "function_call", "name": "shell", "call_id": "c", "arguments": "{}"},
        {"type": "function_call_output", "call_id": "c", "output": "y" * BIG})]
    codex.write_text("".join(json.dumps(x) + "\n" for x in lines), encoding="utf-8")
    return {"synthetic 8 MB tool_result (claude)": out, "synthetic 8 MB output (codex)": codex}


def main() -> int:
    if CLAUDE.exists():
        measure("claude-code 4d5611e5 (largest)", CLAUDE)
    else:
        print(f"skipped: {CLAUDE} not found")
    with tempfile.TemporaryDirectory() as tmp:
        for label, path in synthetic(Path(tmp)).items():
            measure(label, path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
