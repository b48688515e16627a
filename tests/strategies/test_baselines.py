"""Truncation only, no compaction, and the awaken adapter: exact results on hand-built histories."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

import pytest

from workbench.compaction import Usage
from workbench.errors import ModelCallError
from workbench.messages import Message
from workbench.strategies import CompactionRequest, get_strategy, truncate_history
from workbench.testing import ScriptedModel


class CharEstimator:
    """One token per character of a message's text and tool output."""

    def count_chat_tokens(self, system: str, messages: Sequence[Message],
                          tools: object = None) -> int:
        return sum(len(m.concat_text()) + sum(len(r.text()) for r in m.tool_responses())
                   for m in messages)


def _history(assistant_text: str = "look") -> list[Message]:
    return [Message.user("u" * 100),
            Message.assistant(assistant_text).with_tool_request("t1", "read", {"path": "a"}),
            Message.user().with_tool_response("t1", "r" * 200),
            Message.assistant("d" * 50)]


def test_truncation_keeps_the_longest_suffix_that_fits() -> None:
    history = _history()
    kept = truncate_history(history, 260, CharEstimator())  # 50 + 200 + 4 = 254; +100 > 260
    assert kept == history[1:]


def test_truncation_never_keeps_a_tool_output_without_its_call() -> None:
    history = _history("looking")
    kept = truncate_history(history, 255, CharEstimator())  # 257 > 255: the call is cut off
    assert kept == history[3:]


def test_truncation_keeps_the_newest_messages_even_past_the_budget() -> None:
    history = _history()
    assert truncate_history(history, 10, CharEstimator(), min_messages=2) == history[2:]
    assert truncate_history(history, 10, CharEstimator(), min_messages=0) == []


def test_the_truncate_strategy_fits_a_share_of_the_window() -> None:
    history = _history()
    strategy = get_strategy("truncate", target_ratio=0.5)
    result = asyncio.run(strategy.compact(CompactionRequest(
        messages=history, window=520, estimator=CharEstimator())))
    assert result.context == history[1:]
    assert result.detail == {"messages_dropped": 1}
    assert result.compacted is True and result.retained_tokens == 254
    uncapped = asyncio.run(strategy.compact(CompactionRequest(
        messages=history, window=None, estimator=CharEstimator())))
    assert uncapped.context == history and uncapped.compacted is False


def test_no_compaction_returns_the_history_and_bills_nothing() -> None:
    history = _history()
    result = asyncio.run(get_strategy("none").compact(CompactionRequest(
        messages=history, estimator=CharEstimator())))
    assert result.context == history
    assert (result.compacted, result.usages, result.attempts) == (False, [], [])
    assert result.retained_tokens == 354
    assert result.summary_text == "u" * 100 + "\nlook\nread {'path': 'a'}\n" + "r" * 200 + "\n" + "d" * 50


def _long_history() -> list[Message]:
    messages = [Message.user("set up the project")]
    for k in range(6):
        messages += [Message.assistant(f"step {k} " + "a" * 2000),
                     Message.user(f"note {k} " + "n" * 2000)]
    messages += [Message.user("now the latest request"), Message.assistant("on it")]
    return messages


def test_the_awaken_adapter_folds_the_prefix_into_a_cumulative_summary() -> None:
    from workbench.strategies.awaken import summary_message

    history = _long_history()
    model = ScriptedModel(["SUMMARY TEXT"], usage=Usage(input_tokens=900, output_tokens=5))
    result = asyncio.run(get_strategy("awaken").compact(CompactionRequest(
        messages=history, model=model, window=100_000)))
    assert result.detail["status"] == "applied"
    assert result.summary_text == "SUMMARY TEXT"
    assert result.context[0].concat_text() == summary_message("SUMMARY TEXT").concat_text()
    # awaken never summarizes the latest user message or what follows it: both stay, as the
    # very objects of the history (ids were given to copies, mapped back).
    assert result.context[-2:] == history[-2:]
    assert all(a is b for a, b in zip(result.context[1:], history[-len(result.context) + 1:],
                                      strict=True))
    assert len(model.calls) == 1
    assert [(u.input_tokens, u.output_tokens) for u in result.usages] == [(900, 5)]
    assert [(a.number, a.outcome) for a in result.attempts] == [(1, "ok")]
    assert result.parse_outcome == "text" and result.structured is False


def test_the_awaken_adapter_raises_a_failed_summary_with_its_attempts() -> None:
    from workbench.strategies.awaken import SummarizationError

    model = ScriptedModel(always_raise=ModelCallError("down", "scripted"))
    with pytest.raises(SummarizationError) as err:
        asyncio.run(get_strategy("awaken").compact(CompactionRequest(
            messages=_long_history(), model=model, window=100_000)))
    assert [(a.number, a.outcome) for a in err.value.attempts] == []
    assert "down" in str(err.value)


def test_an_awaken_summary_below_min_savings_is_not_applied() -> None:
    model = ScriptedModel(["x" * 30_000])
    result = asyncio.run(get_strategy("awaken", truncate=False).compact(CompactionRequest(
        messages=_long_history(), model=model, window=100_000)))
    assert result.detail["status"] == "skipped"
    assert result.compacted is False
    assert len(result.usages) == 1
