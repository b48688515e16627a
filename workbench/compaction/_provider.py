"""A provider wrapper that compacts on overflow (the crate's ``provider.rs``).

`CompactingProvider` passes calls through to the inner provider. When the inner provider says
the prompt is too long, it summarizes the messages with that same provider (no token estimator,
so usage stays as reported) and retries **once** with only the summary message; the system
prompt and tools are unchanged.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Sequence

from workbench._json_types import JSONValue
from workbench.compaction._model import CompactionModel, Usage
from workbench.compaction._summarize import Summary, summarize
from workbench.compaction._templates import Templates
from workbench.errors import ContextLengthExceeded, ModelCallError, WorkbenchError
from workbench.messages import Message

__all__ = ["CompactingProvider"]


def _accepts_tools(fn: Callable[..., object]) -> bool:
    try:
        params = inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return False
    return "tools" in params or any(p.kind is p.VAR_KEYWORD for p in params.values())


def _complete(inner: CompactionModel) -> Callable[..., Awaitable[tuple[Message, Usage]]]:
    """`inner`'s ``complete``, which may also take ``tools=`` (`_accepts_tools` says)."""
    return inner.complete


class _InnerModel:
    """The inner provider seen as a `CompactionModel` (Goose's ``ProviderModel``: no tools)."""

    def __init__(self, inner: CompactionModel) -> None:
        self.inner = inner

    async def complete(self, system: str, messages: list[Message]) -> tuple[Message, Usage]:
        complete = _complete(self.inner)
        if _accepts_tools(complete):
            return await complete(system, messages, tools=[])
        return await complete(system, messages)


class CompactingProvider:
    """Wrap a provider so a context overflow triggers one summarize-and-retry.

    Args:
        inner: A provider with ``async complete(system, messages)`` (optionally taking
            ``tools=``), such as any `CompactionModel`.
        templates: Templates for the summarizer (default: the built-in pair).

    Attributes:
        last_compaction: The `Summary` of the most recent compaction, or None. Not in Goose
            (whose retry returns only the retry's usage); kept so callers can bill it.
    """

    def __init__(self, inner: CompactionModel, templates: Templates | None = None) -> None:
        self.inner = inner
        self.templates = templates if templates is not None else Templates.default()
        self.last_compaction: Summary | None = None

    def with_templates(self, templates: Templates) -> CompactingProvider:
        """A copy of this wrapper that summarizes with `templates`."""
        return CompactingProvider(self.inner, templates)

    async def complete(self, system: str, messages: list[Message],
                       tools: Sequence[dict[str, JSONValue]] | None = None) -> tuple[Message, Usage]:
        """Call the inner provider; on `ContextLengthExceeded`, summarize and retry once.

        Args:
            system: The system prompt (sent unchanged on the retry).
            messages: The conversation.
            tools: Tool schemas, passed through when the inner provider takes them.

        Returns:
            The reply and usage of the call that answered (the retry's after a compaction).

        Raises:
            ModelCallError: the summarization failed (its text is kept); errors of the first
                call other than overflow, and every error of the retry, propagate unchanged.
        """
        try:
            return await self._call(system, messages, tools)
        except ContextLengthExceeded:
            pass
        try:
            summary = await summarize(_InnerModel(self.inner), None, self.templates, messages)
        except WorkbenchError as err:
            raise ModelCallError(str(err), self.get_name()) from err
        self.last_compaction = summary
        return await self._call(system, [summary.message], tools)

    async def _call(self, system: str, messages: list[Message],
                    tools: Sequence[dict[str, JSONValue]] | None) -> tuple[Message, Usage]:
        complete = _complete(self.inner)
        if tools is not None and _accepts_tools(complete):
            return await complete(system, messages, tools=list(tools))
        return await complete(system, messages)

    def manages_own_context(self) -> bool:
        """Always True: callers must not run their own threshold compaction on top."""
        return True

    def supports_builtin_tools(self) -> bool:
        """Whatever the inner provider says (True when it does not say)."""
        fn = getattr(self.inner, "supports_builtin_tools", None)
        return bool(fn()) if callable(fn) else True

    def get_name(self) -> str:
        """The inner provider's name (``get_name()`` or ``name``), or ""."""
        fn = getattr(self.inner, "get_name", None)
        if callable(fn):
            return str(fn())
        return str(getattr(self.inner, "name", "") or "")

    def get_context_limit(self) -> int | None:
        """The inner provider's context limit, or None when it does not report one."""
        fn = getattr(self.inner, "get_context_limit", None) or getattr(
            self.inner, "context_limit", None)
        return fn() if callable(fn) else None
