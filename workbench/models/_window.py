"""A simulated context window in front of any model: the pipeline's window step, and `WindowCap`.

Experiments compare windows (8k, 32k, 128k) on the same provider. The window step counts the
prompt and raises `ContextLengthExceeded` *before* anything answers it, so the removal ladder
behaves as it would against a real small window and nothing is billed for an over-long prompt.
It is checked once per call, first after the record step (`workbench.models._pipeline`).

Which tokenizer counts is decided by the model, never by what happens to be importable
(`WindowCounter.tokenizer` names it, and the run records it):

- a model that counts in its own tokenizer (``count_prompt_tokens``: the local llama.cpp
  models) is counted that way. A recording (`workbench.models.RecordedCounts`) keeps each
  count, and a replay uses the recorded count first, so a machine without llama.cpp takes the
  same ladder steps; with neither the tokenizer nor a recorded count the window raises a
  `ConfigError` naming the extra to install. It never switches to another tokenizer;
- any other model by the tokenizer its name belongs to (`workbench.tokens.tokenizer_for_model`:
  tiktoken's encodings, Claude's and DeepSeek's tokenizers, all shipped offline with litellm),
  with Goose's chat overheads; o200k for a model it cannot place, labelled ``o200k (fallback)``.

A rendered prompt (`workbench.tokens.PromptText`) is counted from its parts: the template's
fixed text once per prompt, each transcript line once while its message lives. Where the parts
add up exactly (tiktoken's o200k and cl100k) that is the count; a prompt within `NEAR_LIMIT`
tokens of the window is counted whole once more, so the decision at the limit never rests on
anything but a full count. A prompt remembers its counts while it lives.
"""

from __future__ import annotations

from typing import ClassVar

from workbench.compaction._model import CompactionModel
from workbench.errors import ConfigError, ContextLengthExceeded
from workbench.messages import Message
from workbench.models._cache_keys import canonical_json, messages_json
from workbench.models._counts import PromptCounts, count_key
from workbench.models._identity import format_window, model_identity, model_name
from workbench.models._pipeline import Call, ModelPipeline, Proceed, Reply, inner_model
from workbench.tokens import (
    PromptText,
    TokenEstimator,
    WindowTokenizer,
    estimator_for,
    tokenizer_for_model,
)

__all__ = ["MISSING_TOKENIZER_MESSAGE", "NEAR_LIMIT", "OVER_WINDOW_MESSAGE",
           "UNRECORDED_MESSAGE", "WindowCap",
           "WindowCounter", "WindowStep", "check_window", "window_facts"]

OVER_WINDOW_MESSAGE = "prompt of {tokens} tokens exceeds the simulated window of {window} tokens (model {model})"
"""Text of the `ContextLengthExceeded` the window raises."""

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
NEAR_LIMIT = 64
"""A prompt counted from its parts this close to the window is counted whole as well."""


class WindowCounter:
    """How one window counts prompts for one model (see the module docstring).

    Args:
        model: The model behind the window (its tokenizer decides the count).
        estimator: Count with this estimator instead of the model's tokenizer.
        counts: Recorded prompt sizes for a model that counts in its own tokenizer.
    """

    def __init__(self, model: CompactionModel, estimator: TokenEstimator | None = None,
                 counts: PromptCounts | None = None) -> None:
        self.model = model
        self.counts = counts
        self._estimator = estimator
        self._tokenizer: WindowTokenizer | None = None
        self._identity: object = None
        self._identity_json = ""

    @property
    def tokenizer(self) -> WindowTokenizer:
        """The tokenizer this window counts in (decided by the model)."""
        if self._tokenizer is None:
            self._tokenizer = _choose_tokenizer(self.model, self._estimator)
        return self._tokenizer

    @property
    def estimator(self) -> TokenEstimator:
        """The estimator counting prompts for a model without its own counter."""
        return self._estimator or estimator_for(self.tokenizer.name)

    def count(self, system: str, messages: list[Message], window: int | None = None) -> int:
        """The prompt's size as this window judges it.

        Raises:
            ConfigError: the model's own tokenizer is not installed and no count is recorded.
        """
        tokens = self._own_count(system, messages, window)
        if tokens is not None:
            return tokens
        estimator = self.estimator
        tokens = estimator.count_chat_tokens(system, messages)
        if (window is not None and abs(tokens - window) <= NEAR_LIMIT
                and type(system) is PromptText and hasattr(estimator, "count_exactly")):
            # counted from its parts, close to the limit: the whole text decides
            tokens += estimator.count_exactly(system) - estimator.count_text_tokens(system)
        return int(tokens)

    def _own_count(self, system: str, messages: list[Message], window: int | None) -> int | None:
        """The model's own count (recorded first, then live), or None for a model without one."""
        if self._estimator is not None:  # an explicit estimator always wins
            return None
        counter = getattr(self.model, "count_prompt_tokens", None)
        if not callable(counter):
            return None
        if self._identity is None:
            self._identity = model_identity(self.model)
            self._identity_json = canonical_json(self._identity)
        known = getattr(system, "known", None)  # a PromptText: its counts live with it
        memo_key = ("own count", self.tokenizer.name, self._identity_json,
                    messages_json(messages)) if known is not None else None
        if known is not None and memo_key in known:
            return int(known[memo_key])
        key = None
        if self.counts is not None:
            key = count_key(self._identity, self.tokenizer.name, system, messages)
            recorded = self.counts.get(key)
            if recorded is not None:
                return int(recorded)
        recording = key is not None and self.counts is not None and self.counts.writable
        try:
            # Recording counts exactly, so one count serves every window.
            tokens = counter(system, messages, limit=None if recording else window)
        except TypeError:  # a counter without the `limit` shortcut
            tokens = counter(system, messages)
        if tokens is None:
            hint = getattr(self.model, "tokenizer_install_hint", None) or DEFAULT_INSTALL_HINT
            replay = self.counts is not None and not self.counts.writable
            text = UNRECORDED_MESSAGE if replay else MISSING_TOKENIZER_MESSAGE
            raise ConfigError(text.format(model=model_name(self.model),
                                          window=format_window(window or 0),
                                          tokenizer=self.tokenizer.label, hint=hint))
        if recording and key is not None and self.counts is not None:
            self.counts.put(key, self.tokenizer.name, tokens)
        if known is not None and (recording or window is None):
            known[memo_key] = int(tokens)  # exact: good for every window
        return int(tokens)


class WindowStep:
    """The pipeline's window step: refuse a prompt larger than `window` tokens.

    Args:
        window: The simulated window in tokens (a prompt of exactly `window` fits).
        counter: How this window counts (`WindowCounter`).

    Raises:
        ConfigError: `window` is not a positive integer.
    """

    kind: ClassVar[str] = "window"

    def __init__(self, window: int, counter: WindowCounter) -> None:
        if isinstance(window, bool) or not isinstance(window, int) or window <= 0:
            raise ConfigError(f"window must be a positive number of tokens, got {window!r}")
        self.window = window
        self.counter = counter

    async def run(self, call: Call, proceed: Proceed) -> Reply:
        """Count the prompt; raise when it exceeds the window, else let it through.

        Raises:
            ContextLengthExceeded: the prompt is larger than the simulated window.
            ConfigError: the prompt cannot be counted in the model's tokenizer here.
        """
        call.tokens = _refuse_over(self, call.system, call.messages, call.model)
        return await proceed(call)


def _refuse_over(step: WindowStep, system: str, messages: list[Message], model: str) -> int:
    """The prompt's size; `ContextLengthExceeded` when it does not fit `step`'s window."""
    tokens = step.counter.count(system, messages, step.window)
    if tokens > step.window:
        raise ContextLengthExceeded(
            OVER_WINDOW_MESSAGE.format(tokens=tokens, window=step.window, model=model),
            model=model)
    return tokens


def check_window(model: CompactionModel, system: str, messages: list[Message]) -> None:
    """Raise `ContextLengthExceeded` when the prompt does not fit `model`'s simulated windows
    (a model without one takes every prompt).

    Raises:
        ContextLengthExceeded: as the window step would.
        ConfigError: the prompt cannot be counted in the model's tokenizer here.
    """
    if isinstance(model, ModelPipeline):
        for step in model.steps:
            if isinstance(step, WindowStep):
                _refuse_over(step, system, messages, model.model)


class WindowCap(ModelPipeline):
    """Reject prompts larger than `window` tokens; delegate the rest to `inner` unchanged (a
    pipeline of one window step, merged into any pipeline it is composed with).

    Args:
        inner: The wrapped model.
        window: The simulated context window in tokens (a prompt of exactly `window` fits).
        estimator: Count with this estimator instead of the model's tokenizer.
        counts: Recorded prompt sizes for a model that counts in its own tokenizer (the
            recording of the response cache, when there is one).

    Raises:
        ConfigError: `window` is not a positive integer.
    """

    def __init__(self, inner: CompactionModel, window: int,
                 estimator: TokenEstimator | None = None,
                 counts: PromptCounts | None = None) -> None:
        counter = WindowCounter(inner_model(inner), estimator, counts)
        super().__init__(inner, [WindowStep(window, counter)])
        self.window = window
        self.counts = counts
        self.window_counter = counter

    @property
    def tokenizer(self) -> WindowTokenizer:
        """The tokenizer this window counts in."""
        return self.window_counter.tokenizer

    @property
    def estimator(self) -> TokenEstimator:
        """The estimator counting prompts for a model without its own counter."""
        return self.window_counter.estimator

    def count(self, system: str, messages: list[Message]) -> int:
        """The prompt's size as this window judges it (see `WindowCounter.count`)."""
        return self.window_counter.count(system, messages, self.window)

    def check_window(self, system: str, messages: list[Message]) -> None:
        """Raise `ContextLengthExceeded` when the prompt does not fit (`check_window`)."""
        check_window(self, system, messages)

    def window_tokenizer(self) -> str:
        """What tables show for the tokenizer this window counts in."""
        return self.tokenizer.label


def _choose_tokenizer(inner: CompactionModel, estimator: TokenEstimator | None) -> WindowTokenizer:
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


def window_facts(model: CompactionModel) -> tuple[int | None, str | None]:
    """The effective window and the tokenizer label of a model's first window step.

    Args:
        model: A model as `load_model` builds it, or any pipeline.

    Returns:
        ``(effective window, tokenizer)``; without a window, the model's own window (None when
        it reports none) and None.
    """
    if isinstance(model, ModelPipeline):
        step = model.step("window")
        if isinstance(step, WindowStep):
            return model.context_window(), step.counter.tokenizer.label
    fn = getattr(model, "context_window", None)
    try:
        value = fn() if callable(fn) else None
    except Exception:  # an unknown window is not an error here
        value = None
    ok = isinstance(value, int) and not isinstance(value, bool) and value > 0
    return (value if ok else None), None
