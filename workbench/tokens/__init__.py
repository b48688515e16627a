"""Token counting: the `TokenEstimator` protocol, Goose's overheads over tiktoken and the other
tokenizers litellm ships offline, which tokenizer a model's window counts in, and `PromptText`
(a rendered prompt counted from its parts)."""

from workbench.tokens._bundled import (
    BUNDLED_TOKENIZERS,
    FALLBACK,
    WindowTokenizer,
    default_estimator,
    estimator_for,
    tokenizer_for_model,
)
from workbench.tokens._estimator import (
    ENCODING,
    GooseCounter,
    HFTokenizerEstimator,
    TiktokenEstimator,
    TokenEstimator,
    compact_json,
    context_tokens,
    countable_texts,
)
from workbench.tokens._prompt import PromptText

__all__ = ["BUNDLED_TOKENIZERS", "ENCODING", "FALLBACK", "GooseCounter", "HFTokenizerEstimator",
           "PromptText", "TiktokenEstimator", "TokenEstimator", "WindowTokenizer", "compact_json",
           "context_tokens", "countable_texts", "default_estimator", "estimator_for",
           "tokenizer_for_model"]
