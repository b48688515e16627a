"""``sliding-window`` (Letta-like): the trigger at the full window, the oldest 30 % evicted (the
cut moved past tool outputs), 10 % more while the rest is still at the trigger, and the
previous summary folded into the new one."""

from __future__ import annotations

from tests.strategies._policy_sessions import call, request, texts
from workbench.messages import Message
from workbench.strategies import get_strategy
from workbench.strategies._sliding_window import SUMMARY_LEAD, eviction_cut
from workbench.testing import ScriptedModel


def _chat(n: int) -> list[Message]:
    return [Message.user(f"m{k}".ljust(100, ".")) if k % 2 == 0 else
            Message.assistant(f"m{k}".ljust(100, ".")) for k in range(n)]


def test_it_summarises_when_the_context_fills_the_window() -> None:
    assert get_strategy("sliding-window").trigger_tokens(8192) == 8192


def test_the_oldest_30_percent_are_evicted_and_the_cut_never_keeps_an_orphan_output() -> None:
    assert eviction_cut(_chat(10), 0.3) == 3
    with_output = _chat(2) + call("c", "ls", {}, "out") + _chat(6)  # the output at index 3
    assert eviction_cut(with_output, 0.3) == 4
    assert eviction_cut(_chat(10), 1.0) == 10


async def test_the_evicted_messages_become_the_summary_at_the_head() -> None:
    model = ScriptedModel(["## Summary so far\n- m0 to m2"])
    out = await get_strategy("sliding-window").compact(request(_chat(10), model, window=1000))
    assert texts(out.context) == ["user: " + SUMMARY_LEAD + "## Summary so far\n- m0 to m2",
                                  *texts(_chat(10)[3:])]
    assert out.detail["evicted"] == 3 and out.detail["evicted_share"] == 0.3


async def test_more_is_evicted_ten_percent_at_a_time_while_the_rest_is_at_the_trigger() -> None:
    # 10 x 100 in a window of 500: keeping 7, 6 or 5 messages is still at 500 or more; 4 fit
    out = await get_strategy("sliding-window").compact(request(_chat(10), ScriptedModel(["s"]),
                                                              window=500))
    assert out.detail["evicted"] == 6 and out.detail["evicted_share"] == 0.6


async def test_the_previous_summary_is_folded_into_the_new_one_and_replaced() -> None:
    model = ScriptedModel(["new summary"])
    history = [Message.user(SUMMARY_LEAD + "old summary"), *_chat(10)]
    out = await get_strategy("sliding-window").compact(request(history, model, window=1000))
    sent = model.calls[0][1][0].concat_text()
    assert "old summary" in sent and "[user]: m0" in sent and "m3" not in sent
    assert texts(out.context)[0] == "user: " + SUMMARY_LEAD + "new summary"
    assert sum(1 for m in out.context if SUMMARY_LEAD in m.concat_text()) == 1
