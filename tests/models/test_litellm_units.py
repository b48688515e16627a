"""Message conversion, error mapping and retry policy of the litellm gateway (no server)."""

from __future__ import annotations

import email.utils

import httpx
import pytest

from workbench.errors import (
    AuthenticationError,
    ConfigError,
    ContextLengthExceeded,
    ModelCallError,
    ModelTimeout,
    RateLimited,
)
from workbench.messages import Message, ThinkingContent
from workbench.models._convert import from_openai_response, to_openai_messages, usage_from_openai
from workbench.models._errors_map import (
    TransientModelError,
    api_key_env_var,
    load_litellm,
    map_litellm_errors,
    parse_retry_after,
    says_context_too_long,
)
from workbench.models._retry import RetryPolicy, call_with_retries

litellm = load_litellm()
MODEL = "openai/test-model"


# ---- conversion --------------------------------------------------------------------------


def test_tool_calls_and_results_become_openai_tool_messages_and_thinking_is_dropped():
    asked = Message.assistant("Let me look.").with_tool_request("call_1", "shell", {"cmd": "ls"})
    asked.content.insert(0, ThinkingContent(thinking="secret plan", signature="sig"))
    answered = Message.user().with_tool_response("call_1", "a.py\nb.py")
    failed = Message.user().with_tool_response("call_2", error="no such tool")
    assert to_openai_messages("sys", [Message.user("hi"), asked, answered, failed]) == [
        {"role": "system", "content": "sys"},
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": "Let me look.", "tool_calls": [
            {"id": "call_1", "type": "function",
             "function": {"name": "shell", "arguments": '{"cmd": "ls"}'}}]},
        {"role": "tool", "tool_call_id": "call_1", "content": "a.py\nb.py"},
        {"role": "tool", "tool_call_id": "call_2", "content": "Error: no such tool"},
    ]


def test_an_empty_system_prompt_is_not_sent_and_a_tool_only_assistant_has_null_content():
    asked = Message.assistant().with_tool_request("c", "read", None)
    assert to_openai_messages("", [asked]) == [
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "c", "type": "function", "function": {"name": "read", "arguments": "{}"}}]},
    ]


def test_a_response_with_reasoning_and_tool_calls_becomes_one_assistant_message():
    response = {
        "model": "m-2025",
        "choices": [{"finish_reason": "tool_calls", "message": {
            "role": "assistant", "content": "ok", "reasoning_content": "hmm",
            "tool_calls": [{"id": "t1", "function": {"name": "f", "arguments": '{"a": 1}'}},
                           {"id": "t2", "function": {"name": "g", "arguments": "{bad"}}]}}],
        "usage": {"prompt_tokens": 7, "completion_tokens": 3, "total_tokens": 10,
                  "cache_read_input_tokens": 5, "cache_creation_input_tokens": 2},
    }
    reply, usage = from_openai_response(response, MODEL)
    assert reply.concat_text() == "ok"
    assert isinstance(reply.content[0], ThinkingContent)
    first, second = reply.tool_requests()
    assert (first.id, first.name, first.arguments) == ("t1", "f", {"a": 1})
    assert second.name is None and second.tool_call.error.startswith(
        "could not parse tool arguments as JSON: ")
    assert (usage.input_tokens, usage.output_tokens, usage.total_tokens) == (7, 3, 10)
    assert (usage.cache_read_input_tokens, usage.cache_write_input_tokens) == (5, 2)
    assert usage.extra == {"finish_reason": "tool_calls", "resolved_model": "m-2025"}


def test_missing_usage_leaves_token_counts_none():
    usage = usage_from_openai({"choices": []}, MODEL)
    assert (usage.model, usage.input_tokens, usage.output_tokens, usage.cost) == (
        MODEL, None, None, None)


# ---- error mapping -----------------------------------------------------------------------


def raise_mapped(exc: Exception, model: str = MODEL) -> ModelCallError:
    with pytest.raises(ModelCallError) as info, map_litellm_errors(model, secrets=["sk-abc"]):
        raise exc
    assert info.value.__cause__ is exc
    return info.value


def test_a_plain_400_that_talks_about_context_length_maps_to_context_length_exceeded():
    exc = litellm.BadRequestError("prompt is too long: 210000 tokens > 200000 maximum",
                                  model="x", llm_provider="anthropic")
    assert type(raise_mapped(exc)) is ContextLengthExceeded


def test_an_ordinary_400_maps_to_a_plain_model_call_error():
    exc = litellm.BadRequestError("temperature must be <= 2", model="x", llm_provider="openai")
    err = raise_mapped(exc)
    assert type(err) is ModelCallError
    assert str(err).startswith("openai/test-model: the provider rejected the request (the "
                               "provider's default host, HTTP 400): ")


def test_5xx_and_timeouts_map_to_retryable_classes():
    unavailable = litellm.ServiceUnavailableError("down", llm_provider="openai", model="x")
    assert type(raise_mapped(unavailable)) is TransientModelError
    timeout = litellm.Timeout("slow", model="x", llm_provider="openai")
    assert type(raise_mapped(timeout)) is ModelTimeout


def test_a_rate_limit_keeps_the_retry_after_http_date_in_seconds():
    when = email.utils.formatdate(2_000_000_030, usegmt=True)
    response = httpx.Response(429, headers={"retry-after": when},
                              request=httpx.Request("POST", "http://127.0.0.1/v1"))
    exc = litellm.RateLimitError("slow down", llm_provider="openai", model="x", response=response)
    err = raise_mapped(exc)
    assert type(err) is RateLimited
    assert 0.0 <= err.retry_after  # a date in the past waits 0 s
    assert parse_retry_after(when, now=2_000_000_000) == 30.0
    assert parse_retry_after("2.5") == 2.5
    assert parse_retry_after("soon") is None


def test_auth_errors_name_the_providers_key_variable_and_blank_the_key():
    exc = litellm.AuthenticationError("bad key sk-abc", llm_provider="anthropic", model="x")
    err = raise_mapped(exc, "anthropic/claude-3-5-haiku-latest")
    assert type(err) is AuthenticationError
    assert "set ANTHROPIC_API_KEY to a valid key" in str(err)
    assert "sk-abc" not in str(err)
    assert api_key_env_var("gpt-4o") == "OPENAI_API_KEY"
    assert api_key_env_var("nonsense-provider/x") is None


def test_a_provider_error_names_the_host_of_api_base_and_the_status_never_its_secrets():
    exc = litellm.ServiceUnavailableError("down", llm_provider="openai", model="x")
    base = "https://user:hunter2-pass@proxy.example.com:8443/v1?key=sk-query-secret"
    with pytest.raises(TransientModelError) as info, map_litellm_errors(MODEL, api_base=base):
        raise exc
    assert str(info.value).startswith("openai/test-model: server or connection error (host "
                                      "proxy.example.com:8443, HTTP 503): ")
    assert "hunter2" not in str(info.value) and "sk-query" not in str(info.value)


def test_no_response_at_all_says_why_instead_of_litellms_made_up_500():
    import socket

    for cause, why in ((socket.gaierror(-2, "Name or service not known"),
                        "the host name did not resolve"),
                       (ConnectionRefusedError(111, "Connect call failed"), "connection refused")):
        exc = litellm.InternalServerError("Connection error.", llm_provider="openai", model="x")
        exc.__cause__ = cause
        with pytest.raises(TransientModelError) as info, map_litellm_errors(
                MODEL, api_base="http://gpu-box:8000/v1"):
            raise exc
        assert str(info.value).startswith(
            f"openai/test-model: server or connection error (host gpu-box:8000, no response: "
            f"{why}): "), why


def test_unrelated_exceptions_pass_through_unmapped():
    with pytest.raises(KeyError), map_litellm_errors(MODEL):
        raise KeyError("bug")


def test_context_wording_check_ignores_unrelated_messages():
    assert says_context_too_long("This model's maximum context length is 8192 tokens")
    assert not says_context_too_long("Invalid value for temperature")


# ---- retry policy ------------------------------------------------------------------------


def test_backoff_doubles_is_capped_and_retry_after_wins():
    policy = RetryPolicy(base_delay=1.0, max_delay=5.0, jitter=0.0)
    assert [policy.delay(n) for n in (1, 2, 3, 4)] == [1.0, 2.0, 4.0, 5.0]
    assert policy.delay(1, retry_after=3.0) == 3.0
    assert policy.delay(1, retry_after=600.0) == 5.0
    with pytest.raises(ConfigError, match="max_attempts must be at least 1, got 0"):
        RetryPolicy(max_attempts=0)


async def test_non_retryable_errors_are_raised_at_once():
    calls = 0

    async def fail():
        nonlocal calls
        calls += 1
        raise AuthenticationError("no key", MODEL)

    waits: list[float] = []

    async def sleep(s: float) -> None:
        waits.append(s)

    with pytest.raises(AuthenticationError, match="^no key$"):
        await call_with_retries(fail, RetryPolicy(), MODEL, sleep=sleep)
    assert (calls, waits) == (1, [])


async def test_a_single_attempt_policy_raises_the_original_error_unchanged():
    async def fail():
        raise RateLimited("429", MODEL)

    with pytest.raises(RateLimited, match="^429$"):
        await call_with_retries(fail, RetryPolicy(max_attempts=1), MODEL)
