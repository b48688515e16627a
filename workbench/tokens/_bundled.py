"""The tokenizers litellm ships offline, and which one each model's window counts in.

litellm carries, in ``litellm_core_utils/tokenizers/``: tiktoken's ``cl100k_base``,
``o200k_base`` and ``p50k_base`` (named by the sha1 of their download URL, which is how
tiktoken's cache finds them), Claude's older tokenizer (``anthropic_tokenizer.json``) and
DeepSeek's (``deepseek_tokenizer.json``), both in Hugging Face ``tokenizers`` format. Nothing
is ever downloaded: an encoding whose file is not there is a `ConfigError`.

`tokenizer_for_model` decides from the model string alone (never from what happens to be
importable), so a run counts the same way on every machine:

- OpenAI models by their tiktoken encoding (tiktoken's own model table: ``cl100k`` for gpt-4 and
  gpt-3.5-turbo, ``o200k`` for gpt-4o, gpt-4.1, gpt-5 and the o-series);
- Claude models by the bundled Claude tokenizer, an older one: exact for Claude 1 and 2, an
  approximation for Claude 3 and later (``claude (approx.)``);
- DeepSeek models by the bundled DeepSeek tokenizer;
- anything else by o200k, labelled ``o200k (fallback)``.

Each estimator loads once per process, when first asked for.
"""

from __future__ import annotations

import re
import threading
from dataclasses import dataclass

from workbench._offline import ensure_offline, litellm_tokenizer_dir
from workbench.errors import ConfigError
from workbench.tokens._estimator import GooseCounter, HFTokenizerEstimator, TiktokenEstimator

__all__ = ["BUNDLED_TOKENIZERS", "FALLBACK", "WindowTokenizer", "default_estimator",
           "estimator_for", "tokenizer_for_model"]

BUNDLED_TOKENIZERS: dict[str, tuple[str, str]] = {
    "o200k": ("tiktoken", "o200k_base"),
    "cl100k": ("tiktoken", "cl100k_base"),
    "p50k": ("tiktoken", "p50k_base"),
    "claude": ("hf", "anthropic_tokenizer.json"),
    "deepseek": ("hf", "deepseek_tokenizer.json"),
}
"""Short name -> (kind, tiktoken encoding or file name in litellm's tokenizer folder)."""

_EXACT_CLAUDE = re.compile(r"claude-(?:instant|v?[12])(?:[.\-:@]|$)")


@dataclass(frozen=True)
class WindowTokenizer:
    """The tokenizer a model's simulated window counts prompts in.

    Attributes:
        name: A key of `BUNDLED_TOKENIZERS`, or a local model's own tokenizer name.
        label: What tables show (``claude (approx.)``, ``o200k (fallback)``).
    """

    name: str
    label: str


FALLBACK = WindowTokenizer("o200k", "o200k (fallback)")
"""For models the workbench cannot place."""


def _base_name(model: str) -> str:
    """The model's own name without routing prefixes: ``openrouter/anthropic/claude-3.5`` ->
    ``claude-3.5``, ``bedrock/anthropic.claude-v2`` -> ``anthropic.claude-v2``."""
    return model.rsplit("/", 1)[-1].lower()


def tokenizer_for_model(model: str) -> WindowTokenizer:
    """The tokenizer `model`'s window counts in, decided from its name alone.

    Args:
        model: A litellm model string (``openai/gpt-4o-mini``, ``anthropic/claude-3-5-haiku``),
            or ``extractive``.

    Returns:
        The choice; `FALLBACK` for a model no bundled tokenizer belongs to.
    """
    if model == "extractive":  # a stand-in for Goose's summarizer: Goose's own count
        return WindowTokenizer("o200k", "o200k")
    base = _base_name(model)
    if "claude" in base:
        exact = _EXACT_CLAUDE.search(base) is not None
        return WindowTokenizer("claude", "claude" if exact else "claude (approx.)")
    if "deepseek" in base:
        return WindowTokenizer("deepseek", "deepseek")
    encoding = _tiktoken_encoding(base.removeprefix("ft:"))
    for name, (kind, value) in BUNDLED_TOKENIZERS.items():
        if kind == "tiktoken" and value == encoding:
            return WindowTokenizer(name, name)
    return FALLBACK


def _tiktoken_encoding(name: str) -> str | None:
    ensure_offline()
    try:
        from tiktoken.model import encoding_name_for_model  # after ensure_offline, never before
    except ImportError:  # pragma: no cover - tiktoken is a dependency
        return None
    try:
        return encoding_name_for_model(name)
    except KeyError:
        return None


_ESTIMATORS: dict[str, GooseCounter] = {}
_LOCK = threading.Lock()


def estimator_for(name: str) -> GooseCounter:
    """The process-wide estimator (Goose's overheads) for a bundled tokenizer, loaded once.

    Args:
        name: A key of `BUNDLED_TOKENIZERS` (``o200k``, ``cl100k``, ``claude``, ``deepseek``).

    Raises:
        ConfigError: an unknown name, or its file is missing.
    """
    found = _ESTIMATORS.get(name)
    if found is not None:
        return found
    if name not in BUNDLED_TOKENIZERS:
        raise ConfigError(f"unknown tokenizer {name!r}; bundled: {', '.join(BUNDLED_TOKENIZERS)}")
    with _LOCK:
        found = _ESTIMATORS.get(name)
        if found is None:
            kind, value = BUNDLED_TOKENIZERS[name]
            if kind == "tiktoken":
                found = TiktokenEstimator(value)
            else:
                folder = litellm_tokenizer_dir()
                path = folder / value if folder is not None else None
                if path is None or not path.is_file():
                    raise ConfigError(f"the {name} tokenizer ships with litellm ({value} in "
                                      "litellm_core_utils/tokenizers/) but was not found there; "
                                      "reinstall litellm")
                found = HFTokenizerEstimator(name, str(path))
            _ESTIMATORS[name] = found
    return found


def default_estimator() -> TiktokenEstimator:
    """The process-wide `TiktokenEstimator` (o200k_base, Goose's count), built on first use."""
    estimator = estimator_for("o200k")
    assert isinstance(estimator, TiktokenEstimator)
    return estimator
