"""compact() with input/output protocols, the threshold switch and CompactingProvider."""

from __future__ import annotations

import pytest

from workbench.compaction._compact import CollectedOutput, CompactionInput, compact
from workbench.compaction._model import Usage
from workbench.compaction._provider import CompactingProvider
from workbench.compaction._summarize import EXHAUSTED_REMOVAL_ERROR, SUMMARY_REQUEST
from workbench.compaction._templates import Templates
from workbench.compaction._threshold import DEFAULT_COMPACTION_THRESHOLD, auto_compact_enabled
from workbench.errors import ContextLengthExceeded, ModelCallError, RateLimited
from workbench.messages import Message
from workbench.testing import ScriptedModel

PLAIN = Templates(compaction="HISTORY:\n{{ messages }}", summary="", name="plain")


def overflow() -> ContextLengthExceeded:
    return ContextLengthExceeded("prompt is too long", "inner")


# ---- lib.rs -----------------------------------------------------------------------------------


def test_auto_compact_enabled_rejects_off_and_full_window_values() -> None:
    for off in (0.0, -0.1, 1.0, 1.5):
        assert auto_compact_enabled(off) is False, off
    for on in (0.8, 0.01, 0.99):
        assert auto_compact_enabled(on) is True, on


def test_default_compaction_threshold_is_0_8() -> None:
    assert DEFAULT_COMPACTION_THRESHOLD == 0.8


async def test_compact_accepts_a_plain_message_list_and_fills_the_output() -> None:
    output = CollectedOutput()
    model = ScriptedModel(["the summary"], usage=Usage(model="m", input_tokens=3, output_tokens=2))
    await compact(model, None, [Message.user("hello")], output)
    assert output.summary is not None and output.summary.concat_text() == "the summary"
    assert output.summary.role == "user"
    assert output.usage == Usage(model="m", input_tokens=3, output_tokens=2)


async def test_compact_uses_the_templates_the_input_provides() -> None:
    class Source(CompactionInput):
        def messages(self) -> list[Message]:
            return [Message.user("hello")]

        def templates(self) -> Templates:
            return PLAIN

    model = ScriptedModel(["s"])
    await compact(model, None, Source(), CollectedOutput())
    assert model.calls[0][0] == "HISTORY:\n[user]: hello"


def test_compaction_input_defaults_to_the_built_in_templates() -> None:
    class Source(CompactionInput):
        def messages(self) -> list[Message]:
            return []

    assert Source().templates() == Templates.default()


# ---- provider.rs ------------------------------------------------------------------------------


class InnerProvider(ScriptedModel):
    """A scripted provider that also takes tools and may state builtin-tool support."""

    def __init__(self, *args, builtin: bool | None = None, **kw) -> None:  # type: ignore[no-untyped-def]
        super().__init__(*args, **kw)
        self.tools_seen: list[object] = []
        if builtin is not None:
            self.supports_builtin_tools = lambda: builtin  # type: ignore[method-assign]

    async def complete(self, system, messages, tools=None):  # type: ignore[no-untyped-def,override]
        self.tools_seen.append(tools)
        return await super().complete(system, messages)


def test_builtin_tool_support_is_delegated_to_inner_provider() -> None:
    assert CompactingProvider(ScriptedModel()).manages_own_context() is True
    assert CompactingProvider(ScriptedModel()).supports_builtin_tools() is True
    assert CompactingProvider(InnerProvider(builtin=False)).supports_builtin_tools() is False
    assert CompactingProvider(InnerProvider(builtin=True)).supports_builtin_tools() is True


async def test_compacting_provider_passes_calls_through_when_they_fit() -> None:
    inner = InnerProvider(["answer"])
    provider = CompactingProvider(inner, PLAIN)
    reply, _ = await provider.complete("sys", [Message.user("q")], tools=[{"name": "t"}])
    assert reply.concat_text() == "answer"
    assert inner.tools_seen == [[{"name": "t"}]]
    assert provider.last_compaction is None


async def test_overflow_summarizes_without_tools_and_retries_once_with_the_summary() -> None:
    inner = InnerProvider([overflow(), "short summary", "answer"],
                          usage=Usage(model="inner", input_tokens=1))
    provider = CompactingProvider(inner, PLAIN)
    reply, usage = await provider.complete("sys", [Message.user("q")], tools=[{"name": "t"}])
    assert reply.concat_text() == "answer"
    assert inner.call_count == 3
    assert inner.calls[1] == ("HISTORY:\n[user]: q", inner.calls[1][1])
    assert [m.concat_text() for m in inner.calls[1][1]] == [SUMMARY_REQUEST]
    assert inner.tools_seen == [[{"name": "t"}], [], [{"name": "t"}]]
    retry_system, retry_messages = inner.calls[2]
    assert retry_system == "sys"
    assert [(m.role, m.concat_text()) for m in retry_messages] == [("user", "short summary")]
    assert usage == Usage(model="inner", input_tokens=1)
    assert provider.last_compaction is not None


async def test_a_second_overflow_after_compaction_propagates() -> None:
    inner = InnerProvider([overflow(), "summary", overflow()])
    with pytest.raises(ContextLengthExceeded):
        await CompactingProvider(inner, PLAIN).complete("sys", [Message.user("q")])
    assert inner.call_count == 3


async def test_a_summarize_failure_becomes_a_model_call_error_with_its_text() -> None:
    inner = InnerProvider(always_raise=overflow())
    messages = [Message.user("q"), Message.user().with_tool_response("t", "out")]
    with pytest.raises(ModelCallError) as info:
        await CompactingProvider(inner, PLAIN).complete("sys", messages)
    assert type(info.value) is ModelCallError
    assert str(info.value) == EXHAUSTED_REMOVAL_ERROR
    assert inner.call_count == 1 + 5


async def test_errors_other_than_overflow_are_not_compacted() -> None:
    inner = InnerProvider(always_raise=RateLimited("429", "inner"))
    with pytest.raises(RateLimited):
        await CompactingProvider(inner, PLAIN).complete("sys", [Message.user("q")])
    assert inner.call_count == 1


async def test_with_templates_returns_a_wrapper_using_them() -> None:
    inner = InnerProvider([overflow(), "s", "a"])
    provider = CompactingProvider(inner).with_templates(PLAIN)
    await provider.complete("sys", [Message.user("q")])
    assert inner.calls[1][0] == "HISTORY:\n[user]: q"


async def test_compacting_provider_works_with_a_bare_compaction_model() -> None:
    inner = ScriptedModel([overflow(), "s", "a"])
    reply, _ = await CompactingProvider(inner, PLAIN).complete("sys", [Message.user("q")],
                                                               tools=[{"name": "t"}])
    assert reply.concat_text() == "a"
