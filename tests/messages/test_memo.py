"""Values derived from a message are computed once per message object and never leak to
another message: a copy, a message with the same Goose id, or one whose content was replaced."""

from __future__ import annotations

import gc
from collections.abc import Callable

from workbench._memo import ConversationValues
from workbench.compaction._format import format_message_for_compacting, format_transcript
from workbench.messages import Message, MessageMemo, TextContent
from workbench.tokens import default_estimator


def _counting(memo: MessageMemo, message: Message, key: str = "k") -> tuple[str, list[int]]:
    calls: list[int] = []

    def compute() -> str:
        calls.append(1)
        return message.concat_text()
    return memo.get(message, key, compute), calls


def test_a_value_is_computed_once_per_message_and_key() -> None:
    memo = MessageMemo("t")
    m = Message.user("hello")

    assert _counting(memo, m) == ("hello", [1])
    assert _counting(memo, m) == ("hello", [])
    assert _counting(memo, m, "other") == ("hello", [1])


def test_equal_ids_copies_and_replaced_content_compute_their_own() -> None:
    memo = MessageMemo("t")
    a = Message.user("first", id="same")
    b = Message.user("second", id="same")
    assert _counting(memo, a)[0] == "first"
    assert _counting(memo, b) == ("second", [1])

    copy = a.copy_with(content=[TextContent(text="copied")])
    assert _counting(memo, copy) == ("copied", [1])
    a.content = [TextContent(text="replaced")]
    assert _counting(memo, a) == ("replaced", [1])
    a.content.append(TextContent(text=" more"))
    assert _counting(memo, a) == ("replaced\n more", [1])
    a.role = "assistant"
    assert _counting(memo, a)[1] == [1]


def test_an_entry_goes_with_its_message() -> None:
    memo = MessageMemo("t")
    m = Message.user("bye")
    memo.get(m, "k", m.concat_text)
    assert len(memo) == 1
    del m
    gc.collect()
    assert len(memo) == 0


def test_the_memoised_transcript_and_counts_are_the_plain_ones() -> None:
    messages = [Message.user("fix it"),
                Message.assistant("ok").with_tool_request("t1", "shell", {"command": "ls é"}),
                Message.user().with_tool_response("t1", "a.py\nb.py")]
    plain = "\n".join(format_message_for_compacting(m, "jsonl") for m in messages)
    estimator = default_estimator()
    counts = [estimator._content_tokens(m) for m in messages]

    for _ in range(2):
        assert format_transcript(messages, "jsonl") == plain
        assert [estimator.content_tokens(m) for m in messages] == counts
    messages[2].content = [TextContent(text="changed")]
    assert format_transcript(messages, "goose").endswith("[user]: changed")
    assert estimator.content_tokens(messages[2]) == estimator.count_text_tokens("changed")


def _joining(calls: list[int], roles: bool = False) -> Callable[[list[Message]], str]:
    """A value of a list of messages (their texts joined, with their roles), counting calls."""
    def joined(messages: list[Message]) -> str:
        calls.append(1)
        return "|".join(f"{m.role}:{m.concat_text()}" if roles else m.concat_text()
                        for m in messages)
    return joined


def test_a_list_of_messages_is_looked_up_once_until_a_message_changes() -> None:
    table = ConversationValues("lists", 2)
    a, b = Message.user("one"), Message.user("two")
    calls: list[int] = []
    joined = _joining(calls)
    assert table.get([a, b], "joined", joined, [a, b]) == "one|two"
    assert table.get([a, b], "joined", joined, [a, b]) == "one|two"  # a new list, same messages
    assert calls == [1]
    assert table.get([b, a], "joined", joined, [b, a]) == "two|one"  # another order, another list
    a.content = [TextContent(text="changed")]
    assert table.get([a, b], "joined", joined, [a, b]) == "changed|two"
    assert calls == [1, 1, 1]
    table.get([a], "joined", joined, [a])
    assert len(table) == 2  # the least recently used list went


def test_a_list_of_messages_is_looked_up_again_when_an_item_or_metadata_is_replaced() -> None:
    table = ConversationValues("lists", 4)
    a, b = Message.user("one"), Message.user("two")
    calls: list[int] = []
    joined = _joining(calls, roles=True)
    assert table.get([a, b], "joined", joined, [a, b]) == "user:one|user:two"
    b.content[0] = TextContent(text="other")  # the same list, another item
    assert table.get([a, b], "joined", joined, [a, b]) == "user:one|user:other"
    b.content.append(TextContent(text="more"))
    assert table.get([a, b], "joined", joined, [a, b]) == "user:one|user:other\nmore"
    a.metadata = a.metadata.model_copy()
    table.get([a, b], "joined", joined, [a, b])
    b.role = "assistant"
    assert table.get([a, b], "joined", joined, [a, b]) == "user:one|assistant:other\nmore"
    assert len(calls) == 5
    assert table.get([a, b], "joined", joined, [a, b]) == "user:one|assistant:other\nmore"
    assert len(calls) == 5

