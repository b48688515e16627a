"""Counting many texts in one pass of the tokenizer gives each text's own count, and counting a
session's messages ahead leaves counts `content_tokens` reads without tokenizing again."""

from __future__ import annotations

import pytest

from workbench._memo import run_memo
from workbench.harness.experiment._cells import read_manifest
from workbench.messages import Message
from workbench.sessions import load_session
from workbench.tokens import GooseCounter, countable_texts, default_estimator, estimator_for
from workbench.tokens._estimator import REMEMBERED_TEXT_CHARS


def _shipped_texts() -> list[str]:
    session = load_session(read_manifest()["gen-005k-s1"][0])
    return [t for m in session.messages for t in countable_texts(m)]


@pytest.mark.parametrize("name", ["o200k", "cl100k"])
def test_one_pass_counts_each_text_as_it_counts_alone(name: str) -> None:
    counter = estimator_for(name)
    assert isinstance(counter, GooseCounter)
    texts = _shipped_texts()
    assert len(texts) > 20
    texts += ["", "a", "a", "  trailing spaces  ", "\n\n", "ends<|endo", "ftext|> starts",
              "holds <|endoftext|> itself", "and <|endofprompt|> too", "", "x" * 5000]
    assert counter.count_many(texts) == [counter.count_exactly(t) for t in texts]
    assert counter.count_many([]) == [] and counter.count_many([""]) == [0]
    assert counter.count_many(["hello world"]) == [counter.count_exactly("hello world")]


def test_texts_holding_the_separator_count_it_as_one_token_as_alone() -> None:
    counter = default_estimator()
    texts = ["<|endoftext|>", "a<|endoftext|>b", "plain"]
    assert counter.count_many(texts) == [1, counter.count_exactly("a<|endoftext|>b"),
                                         counter.count_exactly("plain")]
    assert counter.count_many(texts)[1] == 3


def test_counting_ahead_fills_what_content_tokens_reads(monkeypatch: pytest.MonkeyPatch) -> None:
    counter = default_estimator()
    session = load_session(read_manifest()["gen-005k-s1"][0])
    long = Message.user("word " * (REMEMBERED_TEXT_CHARS // 4))  # past the text memo's limit
    messages = [*session.messages, long]
    expected = [counter._content_tokens(m) for m in messages]
    first_texts = [t for t in countable_texts(messages[1]) if t]
    each = [counter.count_exactly(t) for t in first_texts]
    with run_memo():
        counter.count_contents(messages)

        def no_tokenizing(text: str) -> int:
            raise AssertionError(f"tokenized again: {text[:40]!r}")

        monkeypatch.setattr(counter, "_count", no_tokenizing)
        assert [counter.content_tokens(m) for m in messages] == expected
        assert [counter.count_text_tokens(t) for t in first_texts] == each
    monkeypatch.undo()
    assert sum(expected) > 1000


def test_counting_ahead_counts_only_what_the_run_does_not_know(
        monkeypatch: pytest.MonkeyPatch) -> None:
    counter = default_estimator()
    known, new = Message.user("counted before"), Message.user("not counted yet")
    asked: list[list[str]] = []
    original = counter.count_many

    def spy(texts: list[str]) -> list[int]:
        asked.append(list(texts))
        return original(texts)

    with run_memo():
        counter.content_tokens(known)
        monkeypatch.setattr(counter, "count_many", spy)
        counter.count_contents([known, new, new])
    assert asked == [["not counted yet"]]
