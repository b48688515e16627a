"""``anthropic-clear-tool-uses``: the 100,000-token trigger, the newest 3 tool uses kept, the
older results cleared to a placeholder, ``clear_at_least`` at its boundary, excluded tools,
cleared inputs, and no result cleared twice."""

from __future__ import annotations

from tests.strategies._policy_sessions import Chars, call, request, session, texts
from workbench.messages import Message
from workbench.strategies import get_strategy, replay_session
from workbench.strategies._clear_tool_uses import CLEARED_PLACEHOLDER as P


def _uses(n: int = 5) -> list[Message]:
    messages = [Message.user("investigate")]
    for k in range(1, n + 1):
        messages += call(f"c{k}", "grep" if k == 2 else "read", {"path": f"f{k}"}, "o" * (100 * k))
    return messages


def test_the_trigger_is_100000_input_tokens_or_the_share_given() -> None:
    assert get_strategy("anthropic-clear-tool-uses").trigger_tokens(8192) == 100_000
    assert get_strategy("anthropic-clear-tool-uses", trigger=0.5).trigger_tokens(8192) == 4096


async def test_every_result_but_the_newest_three_tool_uses_becomes_the_placeholder() -> None:
    out = await get_strategy("anthropic-clear-tool-uses").compact(request(_uses()))
    outputs = [r.text() for m in out.context for r in m.tool_responses()]
    assert outputs == [P, P, "o" * 300, "o" * 400, "o" * 500]
    assert out.detail == {"cleared_uses": 2, "tokens_freed": 100 + 200 - 2 * len(P)}
    assert out.compacted and out.usages == []
    calls = [r.arguments for m in out.context for r in m.tool_requests()]
    assert calls == [{"path": f"f{k}"} for k in range(1, 6)]  # inputs stay by default


async def test_clear_at_least_is_met_at_its_boundary_and_not_one_token_above() -> None:
    freed = 100 + 200 - 2 * len(P)
    met = await get_strategy("anthropic-clear-tool-uses",
                             clear_at_least=freed).compact(request(_uses()))
    assert met.compacted and met.detail["tokens_freed"] == freed
    short = await get_strategy("anthropic-clear-tool-uses",
                               clear_at_least=freed + 1).compact(request(_uses()))
    assert not short.compacted and short.detail == {"cleared_uses": 0, "tokens_freed": 0}
    assert texts(short.context) == texts(_uses())


async def test_excluded_tools_keep_their_results() -> None:
    out = await get_strategy("anthropic-clear-tool-uses",
                             exclude_tools=["grep"]).compact(request(_uses()))
    assert [r.text() for m in out.context for r in m.tool_responses()] == [
        P, "o" * 200, "o" * 300, "o" * 400, "o" * 500]


async def test_clear_tool_inputs_empties_the_arguments_of_the_cleared_calls_only() -> None:
    out = await get_strategy("anthropic-clear-tool-uses", keep=4,
                             clear_tool_inputs=True).compact(request(_uses()))
    assert [r.arguments for m in out.context for r in m.tool_requests()] == [
        {}, {"path": "f2"}, {"path": "f3"}, {"path": "f4"}, {"path": "f5"}]


async def test_a_result_already_cleared_is_not_cleared_or_counted_again() -> None:
    strategy = get_strategy("anthropic-clear-tool-uses")
    first = await strategy.compact(request(_uses()))
    again = await strategy.compact(request(first.context))
    assert not again.compacted and again.detail["cleared_uses"] == 0


def test_in_a_replay_it_clears_when_the_prompt_reaches_the_trigger() -> None:
    messages = _uses(5) + [Message.assistant("done")]
    result = replay_session(session(messages), "anthropic-clear-tool-uses",
                            settings={"trigger": 1000}, window=2000, threshold=None,
                            estimator=Chars(), probes="none")
    # Before turn 4 (the call of f5) the prompt is 11 + 4 x 14 (arguments) + 100 + ... + 400 =
    # 1067: the newest three uses (f2-f4) stay, f1's 100 become the placeholder (46): 1013.
    # Before the last turn f5's call and 500 are in: 1527, and f2's result goes.
    assert result.trigger_tokens == 1000
    assert [(r.turn, r.tokens_before, r.tokens_after) for r in result.rounds] == [
        (4, 1067, 1067 - 100 + len(P)), (5, 1527, 1527 - 200 + len(P))]
