"""`CompactionModel` implementations and the one pipeline every call passes.

Layers, smallest first: `_identity` (labels and secret-free identities), `_billing` (who paid
for a call: usage attributed in one place), `_pipeline` (`ModelPipeline`, `compose`: the ordered
steps record, window, share, cache, slot, budget, then the call), `_extractive` (the no-LLM
baseline; `_sections`: its answers to prompts that ask for sections, the agents' policies'),
`_counts` (prompt sizes in a model's own tokenizer, kept in recordings), `_window` (the window
step and `WindowCap`, a simulated context window), `_cache_keys` and `_recording` (cache keys
and `ResponseCache`, the recordings), `_cache` (the cache step and `CachedModel`,
record/replay), `_shared` (the share step and `SharedCalls`, one call per distinct prompt in a
run), `_spec` (model strings and `load_model`), `_provider_compact` (the providers' own
compaction endpoints, through litellm, imported on first use). The litellm gateway
(`LiteLLMModel`, `RetryPolicy`) and the embedded llama.cpp model (`LocalModel`; with
`_packaged`: the GGUFs pip packages ship, `_local_prompt`: plain text or the GGUF's chat
template, `_grammar`: the JSON schema its decoding follows) import heavy dependencies, so they
load on first access.

``load_model("cached:openai/gpt-4o-mini@8k")`` is the model behind a window step and a cache
step; ``CachedModel(WindowCap(model, 8192), cache)`` builds the same pipeline by hand.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from workbench._lazy import lazy_exports
from workbench.models import _sections  # noqa: F401 - registers the sections answerer
from workbench.models._cache import CACHE_MISS_MESSAGE, CachedModel, CacheStep, cache_key
from workbench.models._counts import PromptCounts, RecordedCounts, SnapshotCounts, count_key
from workbench.models._extractive import ExtractiveModel
from workbench.models._pipeline import Call, ModelPipeline, compose
from workbench.models._recording import ResponseCache
from workbench.models._shared import SharedCalls, SharedModel, ShareStep
from workbench.models._spec import ModelSpec, load_model, parse_model_spec
from workbench.models._window import (
    MISSING_TOKENIZER_MESSAGE,
    OVER_WINDOW_MESSAGE,
    WindowCap,
    WindowStep,
)

_LAZY = {
    "LiteLLMModel": "workbench.models._litellm",
    "RetryPolicy": "workbench.models._retry",
    "LocalModel": "workbench.models._local",
}

__all__ = [
    "CACHE_MISS_MESSAGE",
    "CacheStep",
    "CachedModel",
    "Call",
    "ExtractiveModel",
    "LiteLLMModel",
    "LocalModel",
    "MISSING_TOKENIZER_MESSAGE",
    "ModelPipeline",
    "ModelSpec",
    "OVER_WINDOW_MESSAGE",
    "PromptCounts",
    "RecordedCounts",
    "ResponseCache",
    "RetryPolicy",
    "SharedCalls",
    "ShareStep",
    "SharedModel",
    "SnapshotCounts",
    "WindowCap",
    "WindowStep",
    "cache_key",
    "compose",
    "count_key",
    "load_model",
    "parse_model_spec",
]


__getattr__, __dir__ = lazy_exports("workbench.models", _LAZY, globals())


if TYPE_CHECKING:  # pragma: no cover
    from workbench.models._litellm import LiteLLMModel
    from workbench.models._local import LocalModel
    from workbench.models._retry import RetryPolicy
