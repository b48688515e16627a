"""`WindowCap`: simulate a smaller context window in front of any model.

Experiments compare windows (8k, 32k, 128k) on the same provider. The cap counts the prompt
and raises `ContextLengthExceeded` *before* calling the inner model, so the removal ladder behaves
as it would against a real small window and nothing is billed for an over-long prompt.

It counts in the model's own tokenizer when the model offers one offline
(``count_prompt_tokens``, e.g. the local llama.cpp model when llama.cpp is installed), otherwise
with the workbench's `TokenEstimator` (Goose's o200k count); `window_tokenizer` says which, and
`context_window` is the effective window: the smaller of the cap and the model's real one.
"""

from __future__ import annotations

from typing import Any

from workbench.compaction._model import CompactionModel, Usage
from workbench.errors import ConfigError, ContextLengthExceeded
from workbench.messages import Message
from workbench.models._identity import format_window, model_identity, model_label, model_name
from workbench.tokens import TokenEstimator, default_estimator

OVER_WINDOW_MESSAGE = "prompt of {tokens} tokens exceeds the simulated window of {window} tokens (model {model})"
"""Text of the `ContextLengthExceeded` the cap raises."""

ESTIMATOR_TOKENIZER = "o200k"
"""What `WindowCap.window_tokenizer` reports when it counts with the workbench's estimator."""


class WindowCap:
    """Reject prompts larger than `window` tokens; delegate the rest to `inner` unchanged.

    Args:
        inner: The wrapped model.
        window: The simulated context window in tokens (a prompt of exactly `window` fits).
        estimator: Token estimator; the process-wide tiktoken estimator by default.

    Raises:
        ConfigError: `window` is not a positive integer.
    """

    def __init__(self, inner: CompactionModel, window: int,
                 estimator: TokenEstimator | None = None) -> None:
        if isinstance(window, bool) or not isinstance(window, int) or window <= 0:
            raise ConfigError(f"window must be a positive number of tokens, got {window!r}")
        self.inner = inner
        self.window = window
        self._estimator = estimator

    @property
    def estimator(self) -> TokenEstimator:
        """The estimator used to count prompts. (the process-wide estimator unless one was given)."""
        return self._estimator or default_estimator()

    @property
    def model(self) -> str:
        """The inner model's id."""
        return model_name(self.inner)

    def check_window(self, system: str, messages: list[Message]) -> None:
        """Raise `ContextLengthExceeded` when the prompt does not fit the simulated window.

        Wrappers outside the cap (the response cache) call this first, so that a replay
        reproduces a refusal without a recording and a simulated refusal is never recorded.
        """
        tokens = self._own_count(system, messages)
        if tokens is None:
            tokens = self.estimator.count_chat_tokens(system, messages)
        if tokens > self.window:
            raise ContextLengthExceeded(
                OVER_WINDOW_MESSAGE.format(tokens=tokens, window=self.window, model=self.model),
                model=self.model,
            )
        check = getattr(self.inner, "check_window", None)
        if check is not None:
            check(system, messages)

    async def complete(self, system: str, messages: list[Message]) -> tuple[Message, Usage]:
        """Count the prompt; raise when it exceeds the window, else call the inner model.

        Raises:
            ContextLengthExceeded: the prompt is larger than the simulated window (the inner
                model is not called).
        """
        self.check_window(system, messages)
        return await self.inner.complete(system, messages)

    def _own_count(self, system: str, messages: list[Message]) -> int | None:
        if self._estimator is not None:  # an explicit estimator always wins
            return None
        counter = getattr(self.inner, "count_prompt_tokens", None)
        if not callable(counter):
            return None
        try:
            return counter(system, messages, limit=self.window)
        except TypeError:  # a counter without the `limit` shortcut
            return counter(system, messages)

    def window_tokenizer(self) -> str:
        """The tokenizer the cap counts with: the model's own (its name) or ``"o200k"``.

        Probing costs one count of an empty prompt (loads the vocabulary once per process).
        """
        if self._estimator is None:
            counter = getattr(self.inner, "count_prompt_tokens", None)
            if callable(counter) and counter("", []) is not None:
                name = getattr(self.inner, "tokenizer_name", None)
                return str(name()) if callable(name) else model_name(self.inner)
        return ESTIMATOR_TOKENIZER

    def cache_identity(self) -> Any:
        """The inner model's identity: a call that fits gets the same answer at any window."""
        return model_identity(self.inner)

    def context_window(self) -> int:
        """The simulated window, or the inner model's real one when that is smaller."""
        inner_window = _inner_window(self.inner)
        if inner_window is not None and inner_window < self.window:
            return inner_window
        return self.window

    def describe(self) -> str:
        """Label for tables, e.g. ``openai/gpt-4o-mini@8k``."""
        return f"{model_label(self.inner)}@{format_window(self.window)}"

    def __repr__(self) -> str:
        return f"WindowCap({self.inner!r}, window={self.window})"


def _inner_window(model: Any) -> int | None:
    fn = getattr(model, "context_window", None)
    if not callable(fn):
        return None
    try:
        value = fn()
    except Exception:  # an unknown window is not an error here
        return None
    return value if isinstance(value, int) and value > 0 else None


def window_facts(model: Any) -> tuple[int | None, str | None]:
    """The effective window and the tokenizer of the first `WindowCap` in a wrapper chain.

    Args:
        model: A model as `load_model` builds it (``cache(window_cap(model))``) or any wrapper
            chain linked by ``.inner``.

    Returns:
        ``(effective window, tokenizer)``; without a cap, the model's own window (None when it
        reports none) and None.
    """
    current, depth = model, 0
    while current is not None and depth < 16:
        if isinstance(current, WindowCap):
            return current.context_window(), current.window_tokenizer()
        current, depth = getattr(current, "inner", None), depth + 1
    return _inner_window(model), None
