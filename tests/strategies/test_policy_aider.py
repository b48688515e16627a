"""``aider``: the history budget (a sixteenth of the window, 1,024 to 8,192 tokens), the split
(a tail under half the budget, a head ending on an assistant message), the recursion, the
4-message minimum and the closing ``Ok.``."""

from __future__ import annotations

from tests.strategies._policy_sessions import request, texts
from workbench.messages import Message
from workbench.strategies import get_strategy
from workbench.strategies._aider import SUMMARY_LEAD, AiderSettings, history_budget
from workbench.testing import ScriptedModel


def test_the_budget_is_a_sixteenth_of_the_window_between_1024_and_8192_tokens() -> None:
    s = AiderSettings()
    assert [history_budget(w, s) for w in (1000, 8192, 32_768, 128_000, 200_000)] == [
        1024, 1024, 2048, 8000, 8192]
    assert get_strategy("aider").trigger_tokens(32_768) == 2048


def _chat() -> list[Message]:
    """Eight messages of 100 characters, then 50, 50 and 60."""
    out = []
    for k in range(4):
        out += [Message.user(f"u{k}".ljust(100, ".")), Message.assistant(f"a{k}".ljust(100, "."))]
    return out + [Message.user("u4".ljust(50, ".")), Message.assistant("a4".ljust(50, ".")),
                  Message.user("u5".ljust(60, "."))]


def _aider(**settings: int) -> object:
    # budget = the window (400 here): half is 200
    return get_strategy("aider", divisor=1, budget_min=1, **settings)


async def test_the_head_before_a_tail_under_half_the_budget_becomes_one_summary() -> None:
    model = ScriptedModel(["short"])
    out = await _aider().compact(request(_chat(), model, window=400))
    # tail: 60 + 50 + 50 = 160 < 200; with a3 it would be 260
    assert texts(out.context) == ["user: " + SUMMARY_LEAD + "short", *texts(_chat()[8:]),
                                  "assistant: Ok."]
    sent = model.calls[0][1][0].concat_text()
    assert "[assistant]: a3" in sent and "u4" not in sent


async def test_the_head_is_moved_back_until_it_ends_with_an_assistant_message() -> None:
    chat = _chat()[:7] + [Message.user("u3b".ljust(100, ".")), Message.assistant("a4".ljust(50, ".")),
                          Message.user("u5".ljust(60, "."))]
    out = await _aider().compact(request(chat, ScriptedModel(["short"]), window=400))
    # the tail would start at a4 (110 < 200, with u3b 210); the head would then end on u3b
    # and u3, so it moves back to end on a2: u3 and u3b join the tail
    assert texts(out.context)[1:-1] == texts(chat[6:])


async def test_a_result_still_over_the_budget_is_summarised_again_one_level_deeper() -> None:
    model = ScriptedModel(["x" * 400, "second"])
    out = await _aider().compact(request(_chat(), model, window=400))
    # [summary (about 440), u4, a4, u5] is over 400 and has 4 messages: summarised at once
    assert texts(out.context) == ["user: " + SUMMARY_LEAD + "second", "assistant: Ok."]
    assert model.call_count == 2
    assert model.calls[1][1][0].concat_text().count("[user]: " + SUMMARY_LEAD.strip()) == 1


async def test_four_messages_or_fewer_are_summarised_at_once() -> None:
    chat = [Message.user("u".ljust(300, ".")), Message.assistant("a".ljust(300, "."))]
    out = await _aider().compact(request(chat, ScriptedModel(["all of it"]), window=400))
    assert texts(out.context) == ["user: " + SUMMARY_LEAD + "all of it", "assistant: Ok."]


async def test_a_history_within_its_budget_is_left_alone() -> None:
    out = await _aider().compact(request(_chat(), ScriptedModel(["x"]), window=1000))
    assert not out.compacted and out.detail == {"reason": "within budget"}
