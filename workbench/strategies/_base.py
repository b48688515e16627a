"""The `Strategy` interface: given a history, a model, a window and settings, the next context.

A strategy is a small class with a pydantic ``Settings`` model (unknown keys are errors) and one
async method, `Strategy.compact`, which receives a `CompactionRequest` and returns a
`StrategyResult`: the next context, the usage of every model call, the attempt records (one per
call, for the results store), and the text the harness probes score.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, ClassVar

from pydantic import BaseModel, ConfigDict

from workbench.compaction import Attempt, Templates
from workbench.compaction._model import CompactionModel, Usage
from workbench.messages import Message
from workbench.tokens import TokenEstimator, context_tokens, default_estimator

if TYPE_CHECKING:
    from workbench.sessions import Session

__all__ = ["CompactionRequest", "NoSettings", "Strategy", "StrategyResult", "render_context"]


class NoSettings(BaseModel):
    """Settings of a strategy that takes none (any key is an error)."""

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True, frozen=True)


@dataclass
class CompactionRequest:
    """Everything a strategy may use to compact one history.

    Attributes:
        messages: The history as recorded (Goose messages, archived ones included).
        model: The summarizer, or None for strategies that call no model.
        window: The context window in tokens (None = no cap).
        estimator: The `TokenEstimator` (tiktoken o200k by default in the harness).
        templates: Goose `Templates` of the cell's variant (None = the built-ins).
        options: The variant's ``summarize`` options (transcript style, removal, order).
        manual_compact: Compact as a manual ``/compact`` (Goose's flag).
        session: The recorded session, for strategies that read its ``meta`` (the reference).
        boundary: Where in `messages` the compaction happens (None = after the last message).
        score: False when the caller only needs the next context (a replay): strategies
            without a summary may then leave `StrategyResult.summary_text` empty and
            `StrategyResult.retained_tokens` at 0 instead of rendering and counting it all.
    """

    messages: Sequence[Message]
    model: CompactionModel | None = None
    window: int | None = None
    estimator: TokenEstimator = field(default_factory=default_estimator)
    templates: Templates | None = None
    options: dict[str, object] = field(default_factory=dict)
    manual_compact: bool = True
    session: Session | None = None
    boundary: int | None = None
    score: bool = True

    def __post_init__(self) -> None:
        if self.estimator is None:  # passed as None: the default, as when left out
            self.estimator = default_estimator()


@dataclass
class StrategyResult:
    """What a strategy made of one history.

    Attributes:
        context: The next context: the messages the agent continues from (Goose strategies keep
            archived originals, hidden from the agent, as Goose does).
        usages: Usage of every model call, in call order (empty for strategies without calls).
        attempts: One `workbench.compaction.Attempt` per model call.
        summary_text: The text the probes score: the summary, or for strategies without one the
            agent-visible text of the next context.
        retained_tokens: Agent-visible tokens of `context` (Goose's ``retained_context_tokens``).
        compacted: False when the strategy left the history as it was (nothing to do, or a
            summary rejected by a savings rule).
        parse_outcome: The summary's parse outcome (``structured``...), None without a model.
        structured: True when the reply parsed as Goose's structured summary.
        detail: Strategy-specific facts for the record (messages dropped, skip reason...).
    """

    context: list[Message]
    usages: list[Usage] = field(default_factory=list)
    attempts: list[Attempt] = field(default_factory=list)
    summary_text: str = ""
    retained_tokens: int = 0
    compacted: bool = True
    parse_outcome: str | None = None
    structured: bool = False
    detail: dict[str, object] = field(default_factory=dict)


class Strategy(ABC):
    """A way to fit a history into a window; subclasses register with ``@strategy("name")``.

    Class attributes:
        name: The registry name (set by the decorator).
        Settings: The pydantic settings model (``extra="forbid"``).
        uses_model: False when `compact` never calls the model: the harness then runs such a
            strategy once per session and window instead of once per model.
        uses_template: False when the template variant does not matter.
        compacts: False for a strategy that never changes the history (``none``): a replay
            then never fires its trigger.

    Args:
        settings: Validated settings (an instance of `Settings`); defaults when None.
    """

    name: ClassVar[str] = ""
    Settings: ClassVar[type[BaseModel]] = NoSettings
    uses_model: ClassVar[bool] = True
    uses_template: ClassVar[bool] = True
    compacts: ClassVar[bool] = True

    def __init__(self, settings: BaseModel | None = None) -> None:
        # a subclass narrows this to its own Settings (``settings: XSettings``)
        self.settings: BaseModel = settings if settings is not None else self.Settings()

    @classmethod
    def applies_to(cls, session: Session) -> bool:
        """Whether the strategy can run on `session` (the reference needs a recorded summary)."""
        return True

    def trigger_tokens(self, window: int) -> int | None:
        """The prompt size from which this strategy compacts at `window` when it runs at its
        own trigger (a policy's published one), or None when it has none (a replay then uses
        Goose's 0.8 of the window)."""
        return None

    def unavailable(self, model: object, window: int | None = None) -> str | None:
        """Why the strategy cannot run with `model` (a model or a model string) at `window`
        (a provider-side feature offline), or None when it can. A strategy that cannot run is
        reported ``n/a`` with this reason, never simulated."""
        return None

    @abstractmethod
    async def compact(self, request: CompactionRequest) -> StrategyResult:
        """Compact `request.messages` into the next context.

        Raises:
            WorkbenchError: a model call failed (`CompactionError` carries the billed usage).
        """

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self.settings.model_dump().items())
        return f"{type(self).__name__}({args})"


def scored_view(context: Sequence[Message], request: CompactionRequest) -> tuple[str, int]:
    """(`render_context`, `context_tokens`) of `context`, or ("", 0) when the request does not
    score."""
    if not request.score:
        return "", 0
    return render_context(context), context_tokens(context, request.estimator)


def render_context(messages: Sequence[Message]) -> str:
    """The agent-visible text of `messages`: texts, tool calls and tool outputs, one per line.

    This is what the probes read for strategies that keep raw messages instead of a summary.
    """
    parts: list[str] = []
    for message in messages:
        if not message.is_agent_visible:
            continue
        for item in message.agent_projection().content:
            text = getattr(item, "text", None)
            if isinstance(text, str):
                parts.append(text)
            elif callable(text):
                parts.append(text())
            elif getattr(item, "type", None) == "toolRequest":
                name = item.name or ""  # type: ignore[union-attr]
                args = item.arguments or {}  # type: ignore[union-attr]
                parts.append(f"{name} {args}")
    return "\n".join(p for p in parts if p)


