"""WindowCap: rejects over-long prompts before the inner model, delegates the rest."""

from __future__ import annotations

import pytest

from workbench.compaction._model import Usage
from workbench.errors import ConfigError, ContextLengthExceeded
from workbench.messages import Message
from workbench.models import WindowCap
from workbench.testing import ScriptedModel
from workbench.tokens import default_estimator


class FixedEstimator:
    """Counts every prompt as a fixed number of tokens."""

    def __init__(self, tokens: int) -> None:
        self.tokens = tokens

    def count_text_tokens(self, text: str) -> int:
        return self.tokens

    def count_chat_tokens(self, system, messages, tools=None) -> int:
        return self.tokens


async def test_a_prompt_over_the_window_raises_without_calling_the_inner_model():
    inner = ScriptedModel(["never"], name="openai/gpt-4o-mini")
    cap = WindowCap(inner, 100, estimator=FixedEstimator(101))
    with pytest.raises(ContextLengthExceeded) as info:
        await cap.complete("sys", [Message.user("hi")])
    assert str(info.value) == (
        "prompt of 101 tokens exceeds the simulated window of 100 tokens (model openai/gpt-4o-mini)")
    assert info.value.model == "openai/gpt-4o-mini"
    assert inner.calls == []


async def test_a_prompt_of_exactly_the_window_is_delegated_unchanged():
    usage = Usage(model="m", input_tokens=7, output_tokens=3, cost=0.5)
    inner = ScriptedModel(["the answer"], usage=usage)
    cap = WindowCap(inner, 100, estimator=FixedEstimator(100))
    message, got = await cap.complete("sys", [Message.user("hi")])
    assert message.concat_text() == "the answer"
    assert got == usage
    assert len(inner.calls) == 1
    assert inner.calls[0][0] == "sys"


async def test_the_cap_counts_with_goose_chat_token_count():
    system, messages = "summarize this", [Message.user("hello there")]
    tokens = default_estimator().count_chat_tokens(system, messages)
    inner = ScriptedModel(["ok"], name="m")
    await WindowCap(inner, tokens).complete(system, messages)
    with pytest.raises(ContextLengthExceeded) as info:
        await WindowCap(inner, tokens - 1).complete(system, messages)
    assert str(info.value) == (f"prompt of {tokens} tokens exceeds the simulated window of "
                               f"{tokens - 1} tokens (model m)")
    assert len(inner.calls) == 1


def test_the_cap_keeps_the_inner_identity_so_recordings_serve_every_window():
    class WithIdentity(ScriptedModel):
        def cache_identity(self):
            return {"model": "openai/x", "temperature": 0}

    inner = WithIdentity()
    assert WindowCap(inner, 8192).cache_identity() == {"model": "openai/x", "temperature": 0}
    assert WindowCap(inner, 8192).cache_identity() == WindowCap(inner, 32768).cache_identity()


def test_describe_labels_the_window_in_k_when_it_is_a_multiple_of_1024():
    inner = ScriptedModel(name="openai/gpt-4o-mini")
    assert WindowCap(inner, 8192).describe() == "openai/gpt-4o-mini@8k"
    assert WindowCap(inner, 32000).describe() == "openai/gpt-4o-mini@32000"
    assert WindowCap(WindowCap(inner, 32768), 8192).describe() == "openai/gpt-4o-mini@32k@8k"


def test_context_window_is_the_smaller_of_the_cap_and_the_inner_window():
    class Windowed(ScriptedModel):
        def context_window(self):
            return 4096

    assert WindowCap(ScriptedModel(), 8192).context_window() == 8192
    assert WindowCap(Windowed(), 8192).context_window() == 4096
    assert WindowCap(Windowed(), 2048).context_window() == 2048


@pytest.mark.parametrize("bad", [0, -5, 1.5, True, "8k"])
def test_a_window_that_is_not_a_positive_integer_is_a_config_error(bad):
    with pytest.raises(ConfigError) as info:
        WindowCap(ScriptedModel(), bad)
    assert str(info.value) == f"window must be a positive number of tokens, got {bad!r}"


async def test_model_from_replies_answers_in_order_and_passes_options_through():
    from workbench.testing import model_from_replies

    model = model_from_replies("first", "second", name="fake", raise_on={3: RuntimeError("x")})
    assert (await model.complete("", []))[0].concat_text() == "first"
    assert (await model.complete("", []))[0].concat_text() == "second"
    with pytest.raises(RuntimeError):
        await model.complete("", [])
    assert model.call_count == 3 and model.name == "fake"
