"""awaken's split point, tool-pair adjustment, dangling-call patch and the truncation transform."""

from __future__ import annotations

from tests.strategies.awaken.helpers import assistant, system, texts, tool, user
from workbench.messages import Message
from workbench.strategies.awaken import (
    INTERRUPTED_TOOL_RESULT_TEXT,
    ContextWindowPolicy,
    adjust_split_for_tool_pairs,
    estimate_message_tokens,
    estimate_tokens,
    find_split_point,
    patch_dangling_tool_calls,
    role_of,
    truncate,
)

CALCULATOR = {
    "name": "calculator",
    "description": "Evaluate math expressions",
    "parameters": {"type": "object", "properties": {"expression": {"type": "string"}}},
}


def alternating(n: int, fmt: str = "{i}") -> list[Message]:
    return [user(fmt.format(i=i)) if i % 2 == 0 else assistant(fmt.format(i=i)) for i in range(n)]


def hundred_byte_history(n: int) -> list[Message]:
    """`n` alternating messages of exactly 100 bytes each: 4 + 25 = 29 tokens apiece."""
    return alternating(n, "{i:02d}" + "x" * 98)


# ---- find_split_point -----------------------------------------------------------------------------


def test_find_split_empty_history() -> None:
    assert find_split_point([], 1000, 5) == 0


def test_find_split_all_within_budget() -> None:
    assert find_split_point([user("Hi"), assistant("Hello!")], 100_000, 2) == 0


def test_find_split_drops_oldest_when_tight() -> None:
    history = [user(f"msg {i}") if i % 2 == 0 else assistant(f"reply {i}") for i in range(20)]
    # Newest first: 6 + 5 (the floor), then 6, 5, 6 = 28; the next (5) would make 33 > 30.
    assert find_split_point(history, 30, 2) == 15


def test_find_split_respects_min_recent_even_beyond_budget() -> None:
    history = [user(f"message {i} with padding") for i in range(10)]
    assert find_split_point(history, 1, 5) == 5


def test_find_split_min_recent_exceeds_history_len() -> None:
    assert find_split_point([user("a"), assistant("b")], 1, 100) == 0


def test_find_split_with_various_history_lengths() -> None:
    for n in range(1, 31):
        assert find_split_point(alternating(n), 100_000, 2) == 0, n
        assert find_split_point(alternating(n), 0, 2) == max(n - 2, 0), n


def test_find_split_edge_single_message() -> None:
    history = [user("only one")]
    assert find_split_point(history, 100_000, 1) == 0
    assert find_split_point(history, 1, 1) == 0
    assert find_split_point(history, 1, 0) == 1


def test_find_split_stops_at_the_first_message_that_does_not_fit() -> None:
    # The walk never skips a big message to take smaller, older ones: the kept part is a suffix.
    history = [user("a"), user("b" * 400), user("c"), user("d")]
    assert find_split_point(history, 20, 1) == 2


def test_context_window_policy_threshold_triggers_truncation() -> None:
    history = [user(f"message number {i} with some padding text") for i in range(50)]
    total = estimate_tokens(history)
    assert total == 10 * 13 + 40 * 14
    split = find_split_point(history, total // 2, 2)
    assert split == 26
    assert estimate_tokens(history[split:]) == 24 * 14 <= total // 2


def test_truncation_preserves_recent_n_messages_exactly() -> None:
    assert find_split_point(alternating(10), 1, 6) == 4


def test_very_large_message_handling() -> None:
    history = [user("x" * 100_000), assistant("small reply"), user("another"), assistant("end")]
    assert estimate_message_tokens(history[0]) == 25_004
    assert find_split_point(history, 100, 2) == 1


def test_mixed_message_types_truncation() -> None:
    history = [user("old user msg"), assistant("old assistant msg"), user("mid user msg"),
               assistant("mid tool call", ["c1"]), tool("c1", "mid tool result"),
               user("recent user"), assistant("recent assistant"), user("latest user"),
               assistant("latest reply")]
    # The walk stops with the tool result first (index 4); the split moves back to its assistant.
    assert find_split_point(history, 40, 2) == 3


def test_find_split_tool_pair_not_broken() -> None:
    history = [user("old1"), assistant("old_reply"), user("Do something"),
               assistant("Using tool", ["c1"]), tool("c1", "found it"),
               assistant("Here is the answer."), user("Thanks"), assistant("Welcome!")]
    assert find_split_point(history, 60, 2) == 0
    assert find_split_point(history, 30, 2) == 3


# ---- adjust_split_for_tool_pairs --------------------------------------------------------------------


def test_adjust_split_moves_back_for_orphaned_tool_result() -> None:
    history = [user("a"), assistant("b", ["c1"]), tool("c1", "result"), user("c")]
    assert adjust_split_for_tool_pairs(history, 2) == 1


def test_adjust_split_drops_orphaned_results_after_dropped_assistant() -> None:
    history = [user("a"), assistant("b", ["c1"]), tool("c1", "result"), user("c"),
               assistant("answer")]
    assert adjust_split_for_tool_pairs(history, 3) == 3


def test_adjust_split_handles_multiple_consecutive_tool_results() -> None:
    history = [user("start"), assistant("calling two", ["c1", "c2"]), tool("c1", "r1"),
               tool("c2", "r2"), user("continue")]
    assert adjust_split_for_tool_pairs(history, 2) == 1
    assert adjust_split_for_tool_pairs(history, 3) == 1
    assert adjust_split_for_tool_pairs(history, 2) == adjust_split_for_tool_pairs(history, 3)


def test_adjust_split_boundary_cases() -> None:
    history = [user("a"), assistant("b")]
    assert adjust_split_for_tool_pairs(history, 0) == 0
    assert adjust_split_for_tool_pairs(history, 1) == 1
    assert adjust_split_for_tool_pairs(history, 2) == 2
    assert adjust_split_for_tool_pairs([], 0) == 0


def test_adjust_split_backward_then_no_forward() -> None:
    history = [user("start"), assistant("calling", ["c1"]), tool("c1", "result"), user("next")]
    assert adjust_split_for_tool_pairs(history, 2) == 1


def test_adjust_split_moves_forward_past_results_of_a_dropped_assistant() -> None:
    # Only reachable when the backward step stops on the assistant's own results: a Tool run
    # that starts at index 0 of the history leaves the split at 0 (nothing to move back to).
    history = [tool("c0", "stray"), assistant("calls", ["c1"]), tool("c1", "r1"), user("go")]
    assert adjust_split_for_tool_pairs(history, 2) == 1
    assert adjust_split_for_tool_pairs(history, 1) == 1


def test_tool_pair_preserved_across_truncation_boundary() -> None:
    history = [user("old stuff"), assistant("old reply"), user("trigger"),
               assistant("calling tools", ["c1", "c2", "c3"]), tool("c1", "result1"),
               tool("c2", "result2"), tool("c3", "result3"), user("final")]
    adjusted = [adjust_split_for_tool_pairs(history, c) for c in range(len(history))]
    assert adjusted == [0, 1, 2, 3, 3, 3, 3, 7]


# ---- patch_dangling_tool_calls ----------------------------------------------------------------------


def test_patch_dangling_adds_synthetic_results() -> None:
    messages = [user("go"), assistant("let me search", ["c1", "c2"]), tool("c1", "found it")]
    patched = patch_dangling_tool_calls(messages)
    assert len(patched) == 4 and len(messages) == 3
    assert role_of(patched[3]) == "tool"
    assert patched[3].tool_responses()[0].id == "c2"
    assert texts(patched)[3] == INTERRUPTED_TOOL_RESULT_TEXT
    assert "interrupted" in INTERRUPTED_TOOL_RESULT_TEXT


def test_patch_dangling_no_change_when_complete_or_no_calls() -> None:
    complete = [user("go"), assistant("", ["c1"]), tool("c1", "done")]
    assert patch_dangling_tool_calls(complete) == complete
    plain = [user("hello"), assistant("hi")]
    assert patch_dangling_tool_calls(plain) == plain


def test_patch_dangling_multiple_missing() -> None:
    messages = [user("go"), assistant("", ["c1", "c2", "c3"])]
    patched = patch_dangling_tool_calls(messages)
    assert [m.tool_responses()[0].id for m in patched[2:]] == ["c1", "c2", "c3"]
    assert texts(patched)[2:] == [INTERRUPTED_TOOL_RESULT_TEXT] * 3


def test_patch_dangling_inserts_after_existing_results_not_at_the_end() -> None:
    messages = [assistant("", ["a1", "a2"]), tool("a1", "r"), user("next"), assistant("done")]
    patched = patch_dangling_tool_calls(messages)
    assert texts(patched) == ["", "r", INTERRUPTED_TOOL_RESULT_TEXT, "next", "done"]


# ---- truncate: the request transform -----------------------------------------------------------------


def policy(context: int, output: int = 0, min_recent: int = 2) -> ContextWindowPolicy:
    return ContextWindowPolicy(max_context_tokens=context, max_output_tokens=output,
                               min_recent_messages=min_recent)


def test_truncation_preserves_all_when_under_budget() -> None:
    messages = [system("sys"), *alternating(6)]
    result = truncate(messages, ContextWindowPolicy())
    assert result.messages == messages and not result.truncated and result.dropped == 0
    assert result.available == 200_000 - 16_384


def test_truncation_keeps_system_and_recent() -> None:
    prompt = system("You are a helpful assistant.")
    history = hundred_byte_history(20)
    result = truncate([prompt, *history], policy(200, 50))
    # available 150; history budget 150 - 11 = 139 = room for four 29-token messages.
    assert (result.available, result.history_budget, result.dropped) == (150, 139, 16)
    assert result.messages == [prompt, *history[16:]]


def test_truncation_with_tool_descriptors_reduces_budget() -> None:
    prompt = system("You are a helpful assistant.")
    history = hundred_byte_history(20)
    result = truncate([prompt, *history], policy(200, 50), tools=[CALCULATOR])
    assert (result.available, result.history_budget, result.dropped) == (90, 79, 18)


def test_truncation_drops_oldest_history() -> None:
    history = hundred_byte_history(6)
    result = truncate(history, policy(100, min_recent=1))
    assert result.messages == history[-3:]


def test_min_recent_always_preserved_even_past_the_window() -> None:
    history = hundred_byte_history(10)
    result = truncate(history, policy(20, min_recent=4))
    assert result.messages == history[-4:]
    assert estimate_tokens(result.messages) == 116 > result.available == 20


def test_system_messages_never_truncated_but_a_later_system_message_is_history() -> None:
    leading = [system("one"), system("two"), system("three")]
    late = system("late system note " + "z" * 200)
    history = [user("u" * 200), late, *hundred_byte_history(4)]
    result = truncate([*leading, *history], policy(150, min_recent=2))
    assert result.system_prefix == 3
    assert result.messages[:3] == leading
    assert late not in result.messages


def test_truncation_empty_messages_and_system_only() -> None:
    assert truncate([], policy(10)).messages == []
    only = [system("s" * 400), system("t" * 400)]
    result = truncate(only, policy(10))
    assert result.truncated and result.messages == only and result.history_budget == 0


def test_truncation_with_only_tool_messages_keeps_them_all() -> None:
    history = [tool(f"c{i}", "r" * 100) for i in range(5)]
    result = truncate(history, policy(60, min_recent=1))
    assert result.truncated and result.dropped == 0 and result.messages == history


def test_truncation_repairs_dangling_tool_calls() -> None:
    history = [*hundred_byte_history(6), user("run it"), assistant("running", ["c9"])]
    result = truncate(history, policy(30, min_recent=2))
    assert texts(result.messages) == ["run it", "running", INTERRUPTED_TOOL_RESULT_TEXT]


def test_truncation_tool_pair_not_broken() -> None:
    history = [*hundred_byte_history(4), assistant("call", ["c1"]), tool("c1", "r" * 100),
               user("thanks")]
    result = truncate(history, policy(40, min_recent=2))
    assert texts(result.messages) == ["call", "r" * 100, "thanks"]


def test_quirk_truncation_under_budget_skips_the_dangling_call_patch() -> None:
    messages = [user("go"), assistant("running", ["c1"])]
    faithful = truncate(messages, ContextWindowPolicy())
    assert faithful.messages == messages
    fixed = truncate(messages, ContextWindowPolicy(), patch_under_budget=True)
    assert texts(fixed.messages) == ["go", "running", INTERRUPTED_TOOL_RESULT_TEXT]


def test_truncation_previews_big_tool_results_even_under_budget() -> None:
    big = tool("c1", "a" * 10_000)
    messages = [user("go"), assistant("", ["c1"]), big]
    result = truncate(messages, ContextWindowPolicy())
    assert not result.truncated
    assert len(texts(result.messages)[2]) < 10_000 and texts([big]) == ["a" * 10_000]
    assert truncate(messages, ContextWindowPolicy(), artifacts=None).messages == messages


def test_truncation_does_not_modify_its_input() -> None:
    history = hundred_byte_history(10)
    before = [m.to_goose() for m in history]
    truncate(history, policy(50))
    assert [m.to_goose() for m in history] == before
