"""Goose's token counting: o200k_base plus fixed per-message, system and primer overheads."""

from __future__ import annotations

import pytest

from workbench.messages import Message
from workbench.tokens import TiktokenEstimator, default_estimator


@pytest.fixture(scope="module")
def est() -> TiktokenEstimator:
    return TiktokenEstimator()


def test_text_tokens_use_o200k_with_special_tokens_allowed(est: TiktokenEstimator) -> None:
    assert est.count_text_tokens("hello world") == 2
    assert est.count_text_tokens("<|endoftext|>") == 1
    assert est.count_text_tokens("") == 0


@pytest.mark.parametrize("encoding", ["o200k_base", "cl100k_base"])
def test_a_special_token_inside_a_text_counts_one_and_texts_without_one_count_as_encoded(
        encoding: str) -> None:
    counter = TiktokenEstimator(encoding)
    enc = counter._enc
    for special in sorted(enc.special_tokens_set):
        text = f"see {special} here\n"
        assert counter.count_text_tokens(text) == len(enc.encode(text, allowed_special="all"))
        pieces = len(enc.encode_ordinary("see ")) + 1 + len(enc.encode_ordinary(" here\n"))
        assert counter.count_text_tokens(text) == pieces
    plain = "def f(x):\n    return x <| 2  # not a special token\n"
    assert counter.count_text_tokens(plain) == len(enc.encode(plain, allowed_special="all"))


def test_chat_tokens_add_four_per_message_and_three_for_the_reply_primer(
        est: TiktokenEstimator) -> None:
    assert est.count_chat_tokens("", [Message.user("hello world")]) == 2 + 4 + 3
    assert est.count_chat_tokens("", []) == 3


def test_a_non_empty_system_prompt_costs_its_tokens_plus_four(est: TiktokenEstimator) -> None:
    assert est.count_chat_tokens("hello world", []) == 2 + 4 + 3


def test_tool_request_counts_id_name_and_compact_arguments(est: TiktokenEstimator) -> None:
    msg = Message.assistant().with_tool_request("c1", "shell", {"cmd": "ls -la"})
    expected = est.count_text_tokens('c1:shell:{"cmd":"ls -la"}') + 4 + 3
    assert est.count_chat_tokens("", [msg]) == expected


def test_tool_response_counts_its_text_blocks_and_images_count_zero(
        est: TiktokenEstimator) -> None:
    msg = Message.user().with_tool_response("c1", "hello world")
    assert est.count_chat_tokens("", [msg]) == 2 + 4 + 3
    image = Message.from_goose({"role": "user", "content": [
        {"type": "image", "data": "aGVsbG8=", "mimeType": "image/png"}]})
    assert est.count_chat_tokens("", [image]) == 4 + 3


def test_tools_add_schema_overheads(est: TiktokenEstimator) -> None:
    tool = {"name": "shell", "description": "Run a command.",
            "parameters": {"properties": {"cmd": {"type": "string", "description": "what"},
                                          "mode": {"type": "string", "description": "",
                                                   "enum": ["a", "b"]}}}}
    c = est.count_text_tokens
    expected = (7 + c("shell:Run a command") + 3 + (3 + c("cmd:string:what"))
                + (3 + c("mode:string:")) - 3 + (3 + c("a")) + (3 + c("b")) + 12 + 3)
    assert est.count_chat_tokens("", [], tools=[tool]) == expected


def test_context_tokens_count_only_agent_visible_messages_one_by_one(
        est: TiktokenEstimator) -> None:
    visible = Message.user("hello world")
    hidden = Message.user("hello world")
    hidden.metadata.agent_visible = False
    assert est.count_context_tokens([visible, hidden, visible]) == 2 * (2 + 4 + 3)


def test_every_bundled_tokenizer_loads_offline_once_per_process() -> None:
    from workbench.tokens import BUNDLED_TOKENIZERS, estimator_for

    for name in BUNDLED_TOKENIZERS:
        estimator = estimator_for(name)
        assert estimator is estimator_for(name), name  # loaded once
        assert estimator.tokenizer_name == name
        assert estimator.count_text_tokens("hello world") > 0, name
    assert estimator_for("o200k") is default_estimator()


def test_an_encoding_litellm_does_not_ship_is_refused_instead_of_downloaded(tmp_path, monkeypatch) -> None:
    from workbench.errors import ConfigError
    from workbench.tokens._estimator import load_tiktoken

    with pytest.raises(ConfigError, match="r50k_base is not available offline"):
        load_tiktoken("r50k_base")
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path))  # an empty cache: nothing to read
    with pytest.raises(ConfigError, match="the workbench never downloads one"):
        load_tiktoken("cl100k_base")
