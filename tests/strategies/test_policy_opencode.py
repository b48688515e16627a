"""``opencode``: the overflow trigger, prune (the newest 40,000 tool-output tokens and the last
two turns protected, applied only when more than 20,000 tokens are freed, the ``skill`` tool
never pruned, an earlier summary or prune as the stop), then the summary with a recent tail."""

from __future__ import annotations

from tests.strategies._policy_sessions import call, request, texts
from workbench.messages import Message
from workbench.strategies import get_strategy
from workbench.strategies._opencode import PRUNED_PLACEHOLDER as P
from workbench.strategies._opencode import SUMMARY_LEAD, prune
from workbench.testing import ScriptedModel


def test_opencode_overflows_at_the_window_less_its_output_reserve_and_buffer() -> None:
    assert get_strategy("opencode").trigger_tokens(200_000) == 200_000 - 32_000 - 20_000
    shares = get_strategy("opencode", output_reserve=0.125, buffer=0.1)
    assert shares.trigger_tokens(8192) == 8192 - 1024 - 819


def _history(first_tool: str = "read") -> list[Message]:
    """Four outputs of 1,000 tokens (4,000 bytes) in the first turn, then two later turns."""
    messages = [Message.user("first request")]
    for k in range(1, 5):
        messages += call(f"c{k}", first_tool if k == 2 else "read", {"path": f"f{k}"},
                         str(k) * 4000)
    messages += [Message.user("second request"), *call("c5", "read", {}, "5" * 4000),
                 Message.user("third request"), *call("c6", "read", {}, "6" * 4000)]
    return messages


def _outputs(messages: list[Message]) -> list[str]:
    return [r.text()[:1] if r.text() != P else P for m in messages for r in m.tool_responses()]


def test_prune_keeps_the_newest_protected_tokens_and_the_last_two_turns() -> None:
    # From the second-to-last turn back: f4 (1,000) is within the 1,500 protected, f3, f2, f1
    # are past it: 3,000 tokens marked, more than the 1,000 minimum.
    pruned, freed = prune(_history(), 1500, 1000, ["skill"])
    assert (_outputs(pruned), freed) == (([P, P, P, "4", "5", "6"]), 3000)


def test_prune_applies_only_when_more_than_the_minimum_would_be_freed() -> None:
    assert prune(_history(), 1500, 3000, ["skill"])[1] == 0
    assert _outputs(prune(_history(), 1500, 3000, ["skill"])[0]) == ["1", "2", "3", "4", "5", "6"]
    assert prune(_history(), 1500, 2999, ["skill"])[1] == 3000


def test_a_protected_tool_is_never_pruned_nor_counted() -> None:
    pruned, freed = prune(_history("skill"), 1500, 1000, ["skill"])
    assert (_outputs(pruned), freed) == (([P, "2", P, "4", "5", "6"]), 2000)


def test_prune_stops_at_an_earlier_summary_or_at_outputs_pruned_before() -> None:
    summarised = [Message.user(SUMMARY_LEAD + "earlier"), *_history()[3:]]
    # f1 is behind the summary: f4 protected, f3 and f2 marked
    assert prune(summarised, 1500, 1000, ["skill"])[1] == 2000
    once, _ = prune(_history(), 1500, 1000, ["skill"])
    assert prune(once, 0, 0, ["skill"])[1] == 1000  # f4 only: it stops at f3's placeholder


async def test_pruning_alone_is_enough_when_it_brings_the_context_under_the_trigger() -> None:
    model = ScriptedModel(["## What we did\n- things"])
    strategy = get_strategy("opencode", output_reserve=2000, buffer=1000, prune_protect=1500,
                            prune_minimum=1000)
    out = await strategy.compact(request(_history(), model, window=24_000))  # trigger 21,000
    assert out.compacted and model.call_count == 0 and out.detail == {"pruned_tokens": 3000}


async def test_otherwise_it_summarises_all_but_a_recent_tail_of_whole_turns() -> None:
    model = ScriptedModel(["## What we did\n- things"])
    strategy = get_strategy("opencode", output_reserve=2000, buffer=1000, prune_protect=1500,
                            prune_minimum=1000, tail_min=1500, tail_max=1500)
    out = await strategy.compact(request(_history(), model, window=10_000))  # trigger 7,000
    # the tail budget is 1,500 tokens: the last turn (about 1,010) fits, the one before not
    assert texts(out.context)[0] == "user: " + SUMMARY_LEAD + "## What we did\n- things"
    assert texts(out.context)[1:] == texts(_history()[-3:])
    transcript = model.calls[0][1][0].concat_text()
    assert "1" * 2000 + "\n[truncated]" not in transcript  # f1 was pruned: its placeholder
    assert P in transcript and "5" * 2000 + "\n[truncated]" in transcript
