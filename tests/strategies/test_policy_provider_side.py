"""The provider-side policies: ``n/a`` with the reason when no live model of their provider is
there (never simulated), and their request path through litellm against the echoing server on
127.0.0.1 (``tests/hardening/_provider_server.py``): endpoint, beta header, edit, usage."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.hardening._provider_server import ProviderServer
from tests.strategies._policy_sessions import Chars, request, session
from workbench.errors import StrategyUnavailable
from workbench.messages import Message
from workbench.models import ExtractiveModel, LiteLLMModel
from workbench.strategies import get_strategy, replay_session

ANTHROPIC_REPLY = {
    "id": "msg_1", "type": "message", "role": "assistant", "model": "claude-test",
    "content": [{"type": "compaction", "content": "SUMMARY: fix the totals in app.py"}],
    "stop_reason": "compaction", "stop_sequence": None,
    "usage": {"input_tokens": 120, "output_tokens": 0,
              "iterations": [{"type": "compaction", "input_tokens": 100, "output_tokens": 20}]}}
OPENAI_REPLY = {
    "id": "resp_1", "object": "response.compaction", "created_at": 1700000000,
    "output": [{"type": "message", "role": "user",
                "content": [{"type": "input_text", "text": "fix the totals in app.py"}]},
               {"type": "compaction", "id": "cmp_1", "encrypted_content": "gAAAAopaque"}],
    "usage": {"input_tokens": 90, "output_tokens": 10, "total_tokens": 100}}


@pytest.fixture
def server() -> Iterator[ProviderServer]:
    srv = ProviderServer()
    srv.json_responder = lambda body, path: (ANTHROPIC_REPLY if path.endswith("/messages")
                                             else OPENAI_REPLY)
    srv.start()
    yield srv
    srv.stop()


def _chat() -> list[Message]:
    return [Message.user("fix the totals in app.py"), Message.assistant("reading app.py"),
            Message.user("and keep the signatures")]


def test_offline_they_are_na_with_the_reason(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    anthropic = get_strategy("anthropic-server-compaction")
    assert anthropic.unavailable(ExtractiveModel()) == (
        "Anthropic's server-side compaction runs on anthropic's servers: it needs a live "
        "anthropic model through litellm (this run's summarizer is extractive, which is offline)")
    assert anthropic.unavailable("openai/gpt-4o").endswith("model through litellm, not openai/gpt-4o")
    assert anthropic.unavailable("anthropic/claude-test").endswith(
        "; set ANTHROPIC_API_KEY to run it")
    assert get_strategy("openai-responses-compact").unavailable(None).endswith(
        "(this run's summarizer is none, which is offline)")


async def test_compacting_without_a_live_model_raises_instead_of_pretending() -> None:
    with pytest.raises(StrategyUnavailable, match=r"^openai-responses-compact: n/a: OpenAI's"):
        await get_strategy("openai-responses-compact").compact(request(_chat(),
                                                                       ExtractiveModel()))


def test_anthropic_refuses_a_trigger_below_50000_tokens(server: ProviderServer) -> None:
    live = LiteLLMModel("anthropic/claude-test", api_base=f"http://127.0.0.1:{server.port}",
                        api_key="sk-test-anthropic")
    assert get_strategy("anthropic-server-compaction").unavailable(live, 8192) is None
    half = get_strategy("anthropic-server-compaction", trigger=0.5)
    assert half.unavailable(live, 8192) == (
        "the API compacts from 50,000 input tokens, and this trigger is 4,096")


async def test_anthropic_server_compaction_sends_the_edit_and_bills_every_iteration(
        server: ProviderServer) -> None:
    live = LiteLLMModel("anthropic/claude-test", api_base=f"http://127.0.0.1:{server.port}",
                        api_key="sk-test-anthropic")
    out = await get_strategy("anthropic-server-compaction").compact(
        request(_chat(), live, window=200_000))
    sent: dict[str, Any] = server.requests[-1]
    assert sent["path"] == "/v1/messages"
    assert sent["headers"]["anthropic-beta"] == "compact-2026-01-12"
    assert sent["body"]["context_management"] == {"edits": [{
        "type": "compact_20260112", "trigger": {"type": "input_tokens", "value": 150_000},
        "pause_after_compaction": True}]}
    assert [m["role"] for m in sent["body"]["messages"]] == ["user", "assistant", "user"]
    assert [m.concat_text() for m in out.context] == ["SUMMARY: fix the totals in app.py"]
    assert (out.usages[0].input_tokens, out.usages[0].output_tokens) == (220, 20)


async def test_openai_responses_compact_continues_from_the_returned_window(
        server: ProviderServer) -> None:
    live = LiteLLMModel("openai/gpt-test", api_base=server.base(), api_key="sk-test-openai")
    out = await get_strategy("openai-responses-compact").compact(request(_chat(), live))
    sent = server.requests[-1]
    assert sent["path"] == "/v1/responses/compact"
    assert sent["body"]["input"][0] == {"role": "user", "content": "fix the totals in app.py"}
    assert [m.concat_text() for m in out.context] == ["fix the totals in app.py", "gAAAAopaque"]
    assert out.detail["opaque"] is True and out.usages[0].input_tokens == 90


def test_a_replay_through_the_server_compacts_but_cannot_probe_an_opaque_context(
        server: ProviderServer) -> None:
    live = LiteLLMModel("openai/gpt-test", api_base=server.base(), api_key="sk-test-openai")
    messages = []
    for k in range(4):
        messages += [Message.user(f"request {k} " + "x" * 90), Message.assistant(f"done {k}")]
    planted = [{"id": "f01", "kind": "value", "text": "request 0", "message_index": 0}]
    result = replay_session(session(messages, planted_facts=planted), "openai-responses-compact",
                            window=200, threshold=None, model=live, estimator=Chars())
    assert result.rounds and all(r.applied for r in result.rounds)
    assert [r.facts_recall for r in result.rounds] == [None] * len(result.rounds)
    assert len(server.requests) == len(result.rounds)
