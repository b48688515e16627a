"""The trait-shaped entry point (the crate's ``compact`` with ``CompactionInput``/``Output``).

`compact` reads messages and templates from an input, summarizes, and hands the summary and its
usage to an output. A plain ``list[Message]`` is accepted as input, as ``Vec<Message>`` is in Rust.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol, Unpack, runtime_checkable

from workbench.compaction._model import CompactionModel, Usage
from workbench.compaction._summarize import SummarizeOptions, summarize
from workbench.compaction._templates import Templates
from workbench.messages import Message
from workbench.tokens import TokenEstimator

__all__ = [
    "CollectedOutput",
    "CompactionInput",
    "CompactionOutput",
    "MessagesInput",
    "as_compaction_input",
    "compact",
]


@runtime_checkable
class CompactionInput(Protocol):
    """Where `compact` reads the conversation and the templates from."""

    def messages(self) -> list[Message]:
        """The conversation to summarize."""
        ...

    def templates(self) -> Templates:
        """The templates to use; the default is the built-in pair."""
        return Templates.default()


@runtime_checkable
class CompactionOutput(Protocol):
    """Where `compact` puts its result."""

    def set_summary(self, summary: Message) -> None:
        """Receive the summary message (role user)."""
        ...

    def set_usage(self, usage: Usage) -> None:
        """Receive the billable usage of the summarization call."""
        ...


@dataclass
class MessagesInput(CompactionInput):
    """A list of messages (and optionally templates) as a `CompactionInput`."""

    items: list[Message]
    template_set: Templates | None = None

    def messages(self) -> list[Message]:
        """A copy of the list (Rust's ``Vec<Message>`` returns a clone)."""
        return list(self.items)

    def templates(self) -> Templates:
        """The given templates, else the built-in pair."""
        return self.template_set if self.template_set is not None else Templates.default()


@dataclass
class CollectedOutput(CompactionOutput):
    """A `CompactionOutput` that simply keeps what it is given."""

    summary: Message | None = None
    usage: Usage | None = None

    def set_summary(self, summary: Message) -> None:
        """Keep the summary."""
        self.summary = summary

    def set_usage(self, usage: Usage) -> None:
        """Keep the usage."""
        self.usage = usage


def as_compaction_input(source: CompactionInput | Sequence[Message]) -> CompactionInput:
    """Adapt a plain message list to `CompactionInput`; other inputs pass through.

    Args:
        source: A `CompactionInput`, or a list/tuple of `Message`.

    Returns:
        An object with ``messages()`` and ``templates()``.
    """
    if isinstance(source, (list, tuple)):
        return MessagesInput(list(source))
    return source  # type: ignore[return-value]


async def compact(model: CompactionModel, estimator: TokenEstimator | None,
                  input: CompactionInput | Sequence[Message], output: CompactionOutput,
                  **summarize_options: Unpack[SummarizeOptions]) -> None:
    """Summarize the input's messages and give the summary and usage to `output`.

    Args:
        model: The summarizer.
        estimator: A `TokenEstimator` for missing usage, or None.
        input: A `CompactionInput` or a plain list of messages.
        output: Receives ``set_summary(message)`` then ``set_usage(usage)``.
        **summarize_options: Passed on to `summarize` (transcript style, removal, order).

    Raises:
        Whatever `summarize` raises; `output` is then left untouched.
    """
    source = as_compaction_input(input)
    templates_fn = getattr(source, "templates", None)
    templates = templates_fn() if callable(templates_fn) else Templates.default()
    summary = await summarize(model, estimator, templates, source.messages(), **summarize_options)
    output.set_summary(summary.message)
    output.set_usage(summary.usage)
