"""Observation masking: which tool outputs stay verbatim and what the others become."""

from __future__ import annotations

import asyncio

from workbench.messages import Message
from workbench.strategies import (
    MASK_PLACEHOLDER,
    CompactionRequest,
    get_strategy,
    mask_observations,
)


def _history() -> list[Message]:
    return [
        Message.user("fix the parser"),
        Message.assistant().with_tool_request("t1", "read", {"path": "a.py"}),
        Message.user().with_tool_response("t1", "A" * 200),
        Message.assistant("looking").with_tool_request("t2", "shell", {"command": "pytest"}),
        Message.user().with_tool_response("t2", "FAILED test_x " + "B" * 200, is_error=True),
        Message.assistant().with_tool_request("t3", "read", {"path": "b.py"})
        .with_tool_request("t4", "read", {"path": "c.py"}),
        Message.user().with_tool_response("t3", "C" * 200).with_tool_response("t4", "ok"),
        Message.assistant("done"),
    ]


def _outputs(messages: list[Message]) -> dict[str, str]:
    return {r.id: r.text() for m in messages for r in m.tool_responses()}


def test_masking_keeps_the_newest_tool_turns_and_replaces_older_outputs() -> None:
    history = _history()
    context, masked = mask_observations(history, keep_last=2)
    assert masked == 1
    assert _outputs(context) == {"t1": MASK_PLACEHOLDER, "t2": "FAILED test_x " + "B" * 200,
                                 "t3": "C" * 200, "t4": "ok"}
    # Untouched messages are the same objects; the masked one is a copy.
    assert [a is b for a, b in zip(context, history, strict=True)] == [
        True, True, False, True, True, True, True, True]
    assert _outputs(history)["t1"] == "A" * 200


def test_masking_with_one_kept_turn_masks_errors_too_and_keeps_their_error_flag() -> None:
    context, masked = mask_observations(_history(), keep_last=1)
    assert masked == 2
    assert _outputs(context) == {"t1": MASK_PLACEHOLDER, "t2": MASK_PLACEHOLDER,
                                 "t3": "C" * 200, "t4": "ok"}
    response = context[4].tool_responses()[0]
    assert response.tool_result.is_error is True


def test_masking_everything_leaves_outputs_shorter_than_the_placeholder() -> None:
    context, masked = mask_observations(_history(), keep_last=0, placeholder="[gone]")
    assert masked == 3
    assert _outputs(context) == {"t1": "[gone]", "t2": "[gone]", "t3": "[gone]", "t4": "ok"}


def test_masking_a_parallel_batch_follows_the_turn_that_requested_it() -> None:
    context, masked = mask_observations(_history(), keep_last=3)
    assert masked == 0
    assert _outputs(context) == _outputs(_history())


def test_the_mask_strategy_reports_masked_outputs_and_scores_the_visible_text() -> None:
    strategy = get_strategy("mask", keep_last=1)
    result = asyncio.run(strategy.compact(CompactionRequest(messages=_history())))
    assert result.compacted is True
    assert result.usages == [] and result.attempts == []
    assert result.detail == {"masked_outputs": 2}
    assert "A" * 200 not in result.summary_text
    assert "C" * 200 in result.summary_text
    assert result.summary_text.startswith("fix the parser\nread {'path': 'a.py'}\n"
                                          f"{MASK_PLACEHOLDER}\nlooking\n")
    from workbench.tokens import default_estimator

    full = default_estimator().count_context_tokens(_history())
    assert result.retained_tokens == default_estimator().count_context_tokens(result.context)
    assert result.retained_tokens < full


def test_masking_nothing_reports_no_compaction() -> None:
    result = asyncio.run(get_strategy("mask", keep_last=5).compact(
        CompactionRequest(messages=_history())))
    assert result.compacted is False
    assert result.detail == {"masked_outputs": 0}
