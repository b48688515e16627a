"""Token counting: the `TokenEstimator` protocol and Goose's tiktoken-based estimator."""

from workbench.tokens._estimator import (
    ENCODING,
    TiktokenEstimator,
    TokenEstimator,
    compact_json,
    context_tokens,
    default_estimator,
)

__all__ = ["ENCODING", "TiktokenEstimator", "TokenEstimator", "compact_json", "context_tokens",
           "default_estimator"]
