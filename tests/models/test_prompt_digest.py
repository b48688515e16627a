"""The prompt digest and the cache key, computed once per prompt from parts, are the digests of
the canonical JSON recipe the committed recordings were keyed with."""

from __future__ import annotations

import hashlib

import pytest

from workbench._memo import run_memo
from workbench.messages import Message
from workbench.models._cache import KEY_VERSION, cache_key, canonical_json, prompt_hash
from workbench.tokens import PromptText

SYSTEMS = ["", "plain", 'quotes " and \\ backslash\n\ttabs', "non-ASCII: é ü 日本 😀",
           "control \x00\x1f chars", "x" * 100_000]
REQUESTS = [[], [Message.user("Please write a summary.")],
            [Message.user("a"), Message.assistant("b").with_tool_request("t1", "shell", {"c": "é"})]]


def _message(m: Message) -> dict:
    data = m.to_goose()
    data.pop("created", None)
    data.pop("id", None)
    return data


def _recipe(body: dict) -> str:
    return hashlib.sha256(canonical_json(body).encode()).hexdigest()


@pytest.mark.parametrize("system", SYSTEMS)
@pytest.mark.parametrize("messages", REQUESTS)
def test_the_digests_match_the_canonical_json_recipe(system: str, messages: list) -> None:
    shown = [_message(m) for m in messages]
    identity = {"model": "openai/gpt-4o-mini", "params": {"temperature": 0, "b": [1, "é"]}}

    assert prompt_hash(system, messages) == _recipe({"system": system, "messages": shown})
    assert cache_key(identity, system, messages) == _recipe(
        {"key_version": KEY_VERSION, "model": identity, "system": system, "messages": shown})


def test_equal_prompts_share_a_digest_and_different_ones_do_not() -> None:
    request = [Message.user("go")]
    assert prompt_hash("a" * 10 + "b", request) == prompt_hash("a" * 10 + "b", [Message.user("go")])
    assert prompt_hash("a" * 10 + "b", request) != prompt_hash("a" * 10 + "c", request)
    assert cache_key({"m": 1}, "s", request) != cache_key({"m": 2}, "s", request)


def test_a_request_message_edited_between_calls_is_keyed_afresh() -> None:
    from workbench.messages import TextContent

    request = [Message.user("first")]
    before = prompt_hash("s", request)
    assert prompt_hash("s", request) == before  # its JSON remembered for the second ask
    request[0].content = [TextContent(text="second")]
    assert prompt_hash("s", request) == _recipe({"system": "s",
                                                  "messages": [_message(request[0])]})
    assert prompt_hash("s", request) != before


LINES = ["[user]: first \"quoted\" line", "[assistant]: é 日本 😀\ttab \\ back",
         "[user]: tool_response: a\nb\x01c", "[assistant]: last"]


@pytest.mark.parametrize(("head", "tail"), [("", ""), ("Summarize:\n", "\nDone."),
                                            ('head "q" \\', 'tail\n\x1f')])
def test_a_rendered_prompt_is_digested_as_its_whole_text(head: str, tail: str) -> None:
    messages = [Message.user(line) for line in LINES]
    text = head + "\n".join(LINES) + tail
    request = [Message.user("Please write a summary.")]
    with run_memo():
        prompt = PromptText(text, head, messages, LINES, "goose", tail)
        assert prompt_hash(prompt, request) == prompt_hash(text, request)
        assert prompt_hash(prompt, request) == prompt_hash(prompt, request)  # remembered
        assert cache_key({"m": 1}, prompt, request) == cache_key({"m": 1}, text, request)
