"""awaken's byte/4 estimate, its tool-descriptor figure, and the tiktoken option."""

from __future__ import annotations

from tests.strategies.awaken.helpers import assistant, system, tool, user
from workbench.messages import ImageContent, Message, ThinkingContent
from workbench.strategies.awaken import (
    estimate_message_tokens,
    estimate_tokens,
    estimate_tool_tokens,
    memo_counter,
    tiktoken_counter,
)

CALCULATOR = {
    "name": "calculator",
    "description": "Evaluate math expressions",
    "parameters": {"type": "object", "properties": {"expression": {"type": "string"}}},
}


def test_estimate_tokens_ascii_is_four_overhead_plus_bytes_over_four() -> None:
    assert estimate_message_tokens(user("abcdefghijklmnop")) == 8


def test_estimate_tokens_for_text_message() -> None:
    # "Hello, world!" is 13 bytes: 13 // 4 = 3, plus 4.
    assert estimate_message_tokens(user("Hello, world!")) == 7


def test_estimate_tokens_empty_messages() -> None:
    assert estimate_tokens([]) == 0


def test_estimate_tokens_counts_cjk_in_utf8_bytes_not_characters() -> None:
    # Six CJK characters are 18 UTF-8 bytes: 4 + 18 // 4 = 8 (counting characters would give 5).
    assert estimate_message_tokens(user("你好世界测试")) == 8


def test_estimate_tokens_with_tool_calls_ignores_the_call_arguments() -> None:
    plain = assistant("calling tools")
    with_call = assistant("calling tools")
    with_call.with_tool_request("c1", "search", {"query": "rust async " * 50})
    assert estimate_message_tokens(plain) == estimate_message_tokens(with_call) == 7


def test_an_assistant_with_only_tool_calls_estimates_to_the_overhead() -> None:
    assert estimate_message_tokens(assistant("", ["c1", "c2"])) == 4


def test_estimate_multiple_messages_is_the_sum_of_the_parts() -> None:
    messages = [system("you are helpful"), user("hello"), assistant("hi there")]
    assert estimate_tokens(messages) == sum(estimate_message_tokens(m) for m in messages) == 7 + 5 + 6


def test_token_count_estimation_for_various_content_types() -> None:
    assert estimate_message_tokens(Message.user()) == 4
    assert estimate_message_tokens(user("x" * 4000)) == 1004
    assert estimate_message_tokens(user("x" * 400)) == 104


def test_a_non_text_block_counts_as_fifty_characters() -> None:
    msg = Message(role="user", content=[ImageContent(data="A" * 10_000, mimeType="image/png")])
    assert estimate_message_tokens(msg) == 4 + 50 // 4


def test_thinking_and_tool_result_text_count_their_bytes() -> None:
    thinking = Message(role="assistant", content=[ThinkingContent(thinking="t" * 40)])
    assert estimate_message_tokens(thinking) == 14
    assert estimate_message_tokens(tool("c1", "r" * 80)) == 24
    failed = Message.user().with_tool_response("c1", error="e" * 20)
    assert estimate_message_tokens(failed) == 9


def test_estimate_tool_tokens_counts_name_and_description_raw_and_schema_over_four() -> None:
    # 10 (name) + 25 (description) + 63 // 4 (compact schema JSON) + 10.
    assert estimate_tool_tokens([CALCULATOR]) == 60
    assert estimate_tool_tokens([CALCULATOR, CALCULATOR]) == 120
    assert estimate_tool_tokens(None) == 0


def test_the_tiktoken_option_sees_call_arguments_the_heuristic_ignores() -> None:
    count = tiktoken_counter()
    short = assistant("calling")
    short.with_tool_request("c1", "search", {"q": "x"})
    long = assistant("calling")
    long.with_tool_request("c1", "search", {"q": "word " * 200})
    assert estimate_message_tokens(short) == estimate_message_tokens(long)
    assert count(long) - count(short) == 199
    assert estimate_tokens([short, long], count) == count(short) + count(long)
    assert count(Message.user()) == 4


def test_memo_counter_counts_each_message_object_once() -> None:
    calls: list[Message] = []

    def counting(msg: Message) -> int:
        calls.append(msg)
        return estimate_message_tokens(msg)

    count = memo_counter(counting)
    a, b = user("abcdefgh"), user("abcdefgh")
    assert [count(a), count(a), count(b), count(a)] == [6, 6, 6, 6]
    assert calls == [a, b] and calls[0] is a and calls[1] is b
    assert memo_counter()(user("x" * 40)) == 14
