"""`WindowCap`: simulate a smaller context window in front of any model.

Experiments compare windows (8k, 32k, 128k) on the same provider. The cap counts the prompt
and raises `ContextLengthExceeded` *before* calling the inner model, so the removal ladder behaves
as it would against a real small window and nothing is billed for an over-long prompt.

Which tokenizer counts is decided by the model, never by what happens to be importable
(`window_tokenizer` names it, and the run records it):

- a model that counts in its own tokenizer (``count_prompt_tokens``: the local llama.cpp
  models) is counted that way. A recording (`workbench.models.RecordedCounts`) keeps each
  count, and a replay uses the recorded count first, so a machine without llama.cpp takes the
  same ladder steps; with neither the tokenizer nor a recorded count the cap raises a
  `ConfigError` naming the extra to install. It never switches to another tokenizer;
- any other model by the tokenizer its name belongs to (`workbench.tokens.tokenizer_for_model`:
  tiktoken's encodings, Claude's and DeepSeek's tokenizers, all shipped offline with litellm),
  with Goose's chat overheads; o200k for a model it cannot place, labelled ``o200k (fallback)``.

`context_window` is the effective window: the smaller of the cap and the model's real one.
"""

from __future__ import annotations

from typing import Any

from workbench.compaction._model import CompactionModel, Usage
from workbench.errors import ConfigError, ContextLengthExceeded
from workbench.messages import Message
from workbench.models._counts import PromptCounts, count_key
from workbench.models._identity import format_window, model_identity, model_label, model_name
from workbench.tokens import (
    TokenEstimator,
    WindowTokenizer,
    estimator_for,
    tokenizer_for_model,
)

OVER_WINDOW_MESSAGE = "prompt of {tokens} tokens exceeds the simulated window of {window} tokens (model {model})"
"""Text of the `ContextLengthExceeded` the cap raises."""

MISSING_TOKENIZER_MESSAGE = (
    "missing tokenizer: {model}@{window}: the window counts prompts in {tokenizer}, the model's "
    "own tokenizer, which is not installed here, and no recorded count exists for this prompt; "
    "install it with {hint}, or replay a recording that holds the counts (made with "
    "`workbench record`)"
)
"""Text of the `ConfigError` for a prompt that cannot be counted in the right tokenizer."""
UNRECORDED_MESSAGE = (
    "not recorded: {model}@{window} replays a recording that holds no size for this prompt, so "
    "the prompt was most likely never recorded (a template variant, session or parameter set "
    "the model was not recorded with); record it with `workbench record SPEC`, or leave it out "
    "of the model entry's `templates` or `sessions`. To count it here instead: the window "
    "counts prompts in {tokenizer}, the model's own tokenizer, which is not installed here; "
    "install it with {hint}"
)
"""Text of the `ConfigError` for a replayed prompt whose size is not in the recording and
cannot be counted here: the likely cause (an unrecorded prompt) first, the tokenizer second."""

DEFAULT_INSTALL_HINT = 'pip install -e ".[local]"'
_MEMO = 8


class WindowCap:
    """Reject prompts larger than `window` tokens; delegate the rest to `inner` unchanged.

    Args:
        inner: The wrapped model.
        window: The simulated context window in tokens (a prompt of exactly `window` fits).
        estimator: Count with this estimator instead of the model's tokenizer.
        counts: Recorded prompt sizes for a model that counts in its own tokenizer (the
            recording of the response cache in front of the cap, when there is one).

    Raises:
        ConfigError: `window` is not a positive integer.
    """

    def __init__(self, inner: CompactionModel, window: int,
                 estimator: TokenEstimator | None = None,
                 counts: PromptCounts | None = None) -> None:
        if isinstance(window, bool) or not isinstance(window, int) or window <= 0:
            raise ConfigError(f"window must be a positive number of tokens, got {window!r}")
        self.inner = inner
        self.window = window
        self.counts = counts
        self._estimator = estimator
        self._tokenizer: WindowTokenizer | None = None
        self._identity: Any = None
        # The shared-calls layer, the cache and the cap itself check the same prompt in turn.
        self._memo: dict[tuple[Any, ...], tuple[list[Message], int]] = {}

    @property
    def tokenizer(self) -> WindowTokenizer:
        """The tokenizer this cap counts in (decided by the model, see the module docstring)."""
        if self._tokenizer is None:
            self._tokenizer = _choose_tokenizer(self.inner, self._estimator)
        return self._tokenizer

    @property
    def estimator(self) -> TokenEstimator:
        """The estimator counting prompts for a model without its own counter."""
        return self._estimator or estimator_for(self.tokenizer.name)

    @property
    def model(self) -> str:
        """The inner model's id."""
        return model_name(self.inner)

    def count(self, system: str, messages: list[Message]) -> int:
        """The prompt's size as this window judges it.

        Raises:
            ConfigError: the model's own tokenizer is not installed and no count is recorded.
        """
        memo_key = (system, *map(id, messages))
        found = self._memo.get(memo_key)
        if found is not None:
            return found[1]
        tokens = self._own_count(system, messages)
        if tokens is None:
            tokens = self.estimator.count_chat_tokens(system, messages)
        if len(self._memo) >= _MEMO:
            del self._memo[next(iter(self._memo))]
        self._memo[memo_key] = (list(messages), tokens)  # keeps the ids in the key valid
        return tokens

    def check_window(self, system: str, messages: list[Message]) -> None:
        """Raise `ContextLengthExceeded` when the prompt does not fit the simulated window.

        Wrappers outside the cap (the response cache) call this first, so that a replay
        reproduces a refusal without a recording and a simulated refusal is never recorded.
        """
        tokens = self.count(system, messages)
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
            ConfigError: the prompt cannot be counted in the model's tokenizer here.
        """
        self.check_window(system, messages)
        return await self.inner.complete(system, messages)

    def _own_count(self, system: str, messages: list[Message]) -> int | None:
        """The model's own count (recorded first, then live), or None for a model without one."""
        if self._estimator is not None:  # an explicit estimator always wins
            return None
        counter = getattr(self.inner, "count_prompt_tokens", None)
        if not callable(counter):
            return None
        key = None
        if self.counts is not None:
            if self._identity is None:
                self._identity = model_identity(self.inner)
            key = count_key(self._identity, self.tokenizer.name, system, messages)
            recorded = self.counts.get(key)
            if recorded is not None:
                return recorded
        recording = key is not None and self.counts is not None and self.counts.writable
        try:
            # Recording counts exactly, so one count serves every window.
            tokens = counter(system, messages, limit=None if recording else self.window)
        except TypeError:  # a counter without the `limit` shortcut
            tokens = counter(system, messages)
        if tokens is None:
            hint = getattr(self.inner, "tokenizer_install_hint", None) or DEFAULT_INSTALL_HINT
            replay = self.counts is not None and not self.counts.writable
            text = UNRECORDED_MESSAGE if replay else MISSING_TOKENIZER_MESSAGE
            raise ConfigError(text.format(model=self.model, window=format_window(self.window),
                                          tokenizer=self.tokenizer.label, hint=hint))
        if recording and key is not None and self.counts is not None:
            self.counts.put(key, self.tokenizer.name, tokens)
        return int(tokens)

    def window_tokenizer(self) -> str:
        """What tables show for the tokenizer this cap counts in (``o200k``, ``cl100k``,
        ``claude (approx.)``, ``gemma3-270m``, ``o200k (fallback)``...)."""
        return self.tokenizer.label

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


def _choose_tokenizer(inner: Any, estimator: Any) -> WindowTokenizer:
    if estimator is not None:
        name = str(getattr(estimator, "tokenizer_name", "") or "o200k")
        return WindowTokenizer(name, name)
    own = getattr(inner, "own_tokenizer", None)
    if callable(own):
        found = own()
        if isinstance(found, WindowTokenizer):
            return found
    if callable(getattr(inner, "count_prompt_tokens", None)):
        named = getattr(inner, "tokenizer_name", None)
        name = str(named()) if callable(named) else model_name(inner)
        return WindowTokenizer(name, name)
    return tokenizer_for_model(model_name(inner))


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
