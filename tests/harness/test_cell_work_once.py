"""A cell's fixed inputs are worked out once per session (its context tokens), and its files
are written byte for byte."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from workbench.harness.results._writer import write_file
from workbench.harness.run._cell_score import session_tokens
from workbench.messages import Message
from workbench.sessions import Session
from workbench.tokens import default_estimator


class _Counting:
    """An estimator that counts how often the whole context was counted."""

    def __init__(self) -> None:
        self.inner = default_estimator()
        self.calls = 0

    def count_context_tokens(self, messages: Any) -> int:
        self.calls += 1
        return int(self.inner.count_context_tokens(messages))


def test_a_sessions_context_tokens_are_counted_once_per_estimator() -> None:
    session = Session("s", "goose-json", "s.json", [Message.user("refactor the parser"),
                                                    Message.assistant("on it")])
    expected = default_estimator().count_context_tokens(session.messages)
    counting = _Counting()
    assert [session_tokens(session, counting) for _ in range(3)] == [expected] * 3
    assert counting.calls == 1
    other = _Counting()
    assert session_tokens(session, other) == expected and other.calls == 1


def test_a_grown_or_replaced_message_list_is_counted_again() -> None:
    session = Session("s", "goose-json", "s.json", [Message.user("one")])
    counting = _Counting()
    first = session_tokens(session, counting)
    session.messages.append(Message.assistant("two more words"))
    grown = session_tokens(session, counting)
    session.messages = [Message.user("one")]
    assert (session_tokens(session, counting), counting.calls) == (first, 3)
    assert grown == default_estimator().count_context_tokens(
        [Message.user("one"), Message.assistant("two more words")])


def test_write_file_writes_utf8_as_given_and_replaces_a_longer_file(tmp_path: Path) -> None:
    path = tmp_path / "c1.md"
    path.write_text("x" * 1000, encoding="utf-8")
    text = "line one\r\nline two\n— ünïcode ✓\n"
    write_file(path, text)
    assert path.read_bytes() == text.encode("utf-8")
    big = "y" * 3_000_000
    write_file(path, big)
    assert path.read_bytes() == big.encode()
