"""Dry-run estimates: how many cells, tokens and dollars a run would take, without calling models."""

from __future__ import annotations

import importlib.util
import json
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Literal

from workbench._json_types import JSONObject
from workbench._offline import ensure_offline
from workbench.compaction._format import format_transcript
from workbench.context_mgmt import summarizer_input
from workbench.harness.experiment._cells import Cell
from workbench.harness.experiment._spec import Experiment
from workbench.harness.experiment._variants import Variant
from workbench.harness.run._qa_bank import QuestionBank
from workbench.harness.run._qa_estimate import estimate_qa
from workbench.sessions import Session
from workbench.tokens import default_estimator

OUTPUT_TOKENS_ESTIMATE = 1000
"""Assumed summary length per cell (tokens billed as output)."""
FREE_MODELS = ("extractive", "local")
PRICE_FILE = "model_prices_and_context_window_backup.json"


@dataclass
class DryRunEstimate:
    """What a run would cost.

    Attributes:
        cells: Cells in the experiment.
        to_run: Cells not yet stored in the run folder (what a run would execute).
        estimated_tokens: Input (transcript) plus assumed output tokens of the cells to run.
        estimated_cost: US dollars, or None when a model's price is unknown.
        shared_cells: Cells to run that would share another cell's call (same session, model,
            window, repeat and compaction prompt; only the summary template differs): they
            add no tokens and no cost.
        problems: One line per session file that cannot be read and per variant that does
            not compile: their cells would be error rows (counted in `to_run`, not estimated).
        qa_calls: Answerer, judge and author calls of the ``[qa]`` step (after sharing).
        qa_tokens: Their tokens (included in `estimated_tokens`).
        qa_cost: Their dollars (included in `estimated_cost`), or None when unknown.
    """

    cells: int
    to_run: int
    estimated_tokens: int
    estimated_cost: float | None
    shared_cells: int = 0
    problems: list[str] = field(default_factory=list)
    qa_calls: int = 0
    qa_tokens: int = 0
    qa_cost: float | None = 0.0

    def __str__(self) -> str:
        cost = "unknown" if self.estimated_cost is None else f"${self.estimated_cost:.4f}"
        shared = f" ({self.shared_cells} sharing a call)" if self.shared_cells else ""
        text = (f"dry run: {self.cells} cells, {self.to_run} to run{shared}, "
                f"~{self.estimated_tokens} tokens, estimated cost {cost}")
        if self.qa_calls:
            qa_cost = "unknown" if self.qa_cost is None else f"${self.qa_cost:.4f}"
            text += (f"; of which QA: {self.qa_calls} calls, ~{self.qa_tokens} tokens, "
                     f"{qa_cost}")
        return "\n".join([text] + [f"  {p}" for p in self.problems])


def _base_model(model_string: str) -> str:
    for prefix in ("cached:", "replay:"):
        if model_string.startswith(prefix):
            model_string = model_string[len(prefix):]
    head, at, tail = model_string.rpartition("@")
    return head if at and tail[:1].isdigit() else model_string


@lru_cache(maxsize=1)
def _price_map() -> JSONObject:
    # litellm's bundled price table, read without importing litellm (a slow import); names it
    # does not list directly still go through litellm.cost_per_token below.
    spec = importlib.util.find_spec("litellm")
    if spec is None or not spec.submodule_search_locations:
        return {}
    path = Path(list(spec.submodule_search_locations)[0]) / PRICE_FILE
    if not path.is_file():
        return {}
    data = json.loads(path.read_text(encoding="utf-8"))
    return data if isinstance(data, dict) else {}


def cell_cost(model_string: str, input_tokens: int, output_tokens: int) -> float | None:
    """Estimated dollars of one call; 0 for free or replayed models, None when unknown."""
    if model_string.startswith("replay:"):
        return 0.0
    model = _base_model(model_string)
    if model == "extractive" or model.split("/", 1)[0] in FREE_MODELS:
        return 0.0
    prices = _price_map()
    for name in (model, model.split("/", 1)[-1]):
        entry = prices.get(name)
        if not isinstance(entry, dict):  # every entry of litellm's table is an object
            continue
        per_in, per_out = entry.get("input_cost_per_token"), entry.get("output_cost_per_token")
        if isinstance(per_in, (int, float)) and isinstance(per_out, (int, float)):
            return per_in * input_tokens + per_out * output_tokens
    ensure_offline()
    import litellm  # a slow import (seconds), needed only for a model the table above lacks

    try:
        prompt, completion = litellm.cost_per_token(model=model, prompt_tokens=input_tokens,
                                                    completion_tokens=output_tokens)
    except Exception:  # litellm raises a bare Exception for unmapped models
        return None
    return float(prompt + completion)


def estimate_cells(experiment: Experiment, cells: list[Cell], todo: list[Cell],
                   sessions: list[Session], variants: dict[str, Variant],
                   qa_bank: QuestionBank | None = None) -> DryRunEstimate:
    """Estimate the cells in `todo` (transcript tokens + `OUTPUT_TOKENS_ESTIMATE` each, plus
    the ``[qa]`` step's calls: `estimate_qa`)."""
    estimator = default_estimator()
    by_id = {s.id: s for s in sessions}
    transcript_tokens: dict[tuple[str, str], int] = {}
    total_tokens = 0
    total_cost: float | None = 0.0
    calls: set[tuple[object, ...]] = set()
    shared = 0
    for cell in todo:
        if not cell.uses_model:  # masking, truncation...: no call to estimate
            continue
        variant = variants[cell.template]
        call = (cell.session_id, cell.model, cell.window, cell.repeat,
                variant.templates.baked().compaction, json.dumps(variant.options, sort_keys=True))
        if call in calls:  # the run shares this call (SharedCalls): no extra tokens or cost
            shared += 1
            continue
        calls.add(call)
        style: Literal["goose", "jsonl"] = \
            "jsonl" if variant.options.get("transcript_style") == "jsonl" else "goose"  # validated
        key = (cell.session_id, style)
        if key not in transcript_tokens:
            messages = summarizer_input(by_id[cell.session_id].messages)
            transcript_tokens[key] = estimator.count_text_tokens(format_transcript(messages, style))
        tokens_in = transcript_tokens[key]
        total_tokens += tokens_in + OUTPUT_TOKENS_ESTIMATE
        cost = cell_cost(cell.model_string, tokens_in, OUTPUT_TOKENS_ESTIMATE)
        total_cost = None if cost is None or total_cost is None else total_cost + cost
    qa = estimate_qa(experiment, todo, by_id, qa_bank, price=cell_cost,
                     summary_tokens=OUTPUT_TOKENS_ESTIMATE)
    total_cost = None if total_cost is None or qa.cost is None else total_cost + qa.cost
    return DryRunEstimate(len(cells), len(todo), total_tokens + qa.tokens, total_cost, shared,
                          qa_calls=qa.calls, qa_tokens=qa.tokens, qa_cost=qa.cost)
