"""`CompactionModel` implementations and the wrappers that compose around them.

Layers, smallest first: `_identity` (labels and secret-free identities), `_extractive` (the
no-LLM baseline; `_sections`: its answers to prompts that ask for sections, the agents'
policies'), `_counts` (prompt sizes in a model's own tokenizer, kept in recordings),
`_cap` (`WindowCap`, a simulated context window), `_cache` (`ResponseCache`
and `CachedModel`, record/replay), `_shared` (`SharedCalls`, one call per distinct prompt in a
run), `_spec` (model strings and `load_model`), `_provider_compact` (the providers' own
compaction endpoints, through litellm, imported on first use). The litellm gateway
(`LiteLLMModel`, `RetryPolicy`) and the embedded llama.cpp model (`LocalModel`; with
`_packaged`: the GGUFs pip packages ship, `_local_prompt`: plain text or the GGUF's chat
template, `_grammar`: the JSON schema its decoding follows) import heavy dependencies, so they
load on first access.

Wrappers compose: ``CachedModel(WindowCap(LiteLLMModel(...), 8192), cache)`` is still a
`CompactionModel`; ``load_model("cached:openai/gpt-4o-mini@8k")`` builds exactly that.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from workbench._lazy import lazy_exports
from workbench.models import _sections  # noqa: F401 - registers the sections answerer
from workbench.models._cache import CACHE_MISS_MESSAGE, CachedModel, ResponseCache, cache_key
from workbench.models._cap import MISSING_TOKENIZER_MESSAGE, OVER_WINDOW_MESSAGE, WindowCap
from workbench.models._counts import PromptCounts, RecordedCounts, SnapshotCounts, count_key
from workbench.models._extractive import ExtractiveModel
from workbench.models._shared import SharedCalls, SharedModel
from workbench.models._spec import ModelSpec, load_model, parse_model_spec

_LAZY = {
    "LiteLLMModel": "workbench.models._litellm",
    "RetryPolicy": "workbench.models._retry",
    "LocalModel": "workbench.models._local",
}

__all__ = [
    "CACHE_MISS_MESSAGE",
    "CachedModel",
    "ExtractiveModel",
    "LiteLLMModel",
    "LocalModel",
    "MISSING_TOKENIZER_MESSAGE",
    "ModelSpec",
    "OVER_WINDOW_MESSAGE",
    "PromptCounts",
    "RecordedCounts",
    "ResponseCache",
    "RetryPolicy",
    "SharedCalls",
    "SharedModel",
    "SnapshotCounts",
    "WindowCap",
    "cache_key",
    "count_key",
    "load_model",
    "parse_model_spec",
]


__getattr__, __dir__ = lazy_exports("workbench.models", _LAZY, globals())


if TYPE_CHECKING:  # pragma: no cover
    from workbench.models._litellm import LiteLLMModel
    from workbench.models._local import LocalModel
    from workbench.models._retry import RetryPolicy
