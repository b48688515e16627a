"""LiteLLMModel against a scripted OpenAI-compatible server on 127.0.0.1 (no network)."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from workbench.errors import (
    AuthenticationError,
    ContextLengthExceeded,
    ModelTimeout,
)
from workbench.messages import Message
from workbench.models._errors_map import TransientModelError, load_litellm
from workbench.models._litellm import LiteLLMModel
from workbench.models._retry import RetryPolicy

# litellm's own pydantic types warn about ReadOnly TypedDict items on first use.
pytestmark = pytest.mark.filterwarnings("ignore:Item.*ReadOnly:UserWarning")

MODEL = "openai/test-model"
KEY = "sk-test-not-real"

# litellm takes seconds to import: pay for it once, at collection.
load_litellm()


@dataclass
class Reply:
    """One scripted HTTP answer."""

    status: int = 200
    body: dict[str, Any] | None = None
    headers: dict[str, str] = field(default_factory=dict)
    hold: threading.Event | None = None
    """Answer only once the test sets this (the timeout test's reply comes too late on any
    machine); bounded, so a broken test cannot hang the server."""


@dataclass
class Script:
    """Replies served in order (the last one repeats) and the requests received."""

    replies: list[Reply] = field(default_factory=list)
    requests: list[dict[str, Any]] = field(default_factory=list)
    events: list[str] = field(default_factory=list)
    """What happened, in order: the server's ``request N`` and ``reply N``, and whatever the
    test's sleep recorder and the test itself add."""


def completion(text: str, *, prompt: int = 0, completion_tokens: int = 0, cached: int | None = None,
               finish: str = "stop") -> dict[str, Any]:
    usage: dict[str, Any] = {
        "prompt_tokens": prompt,
        "completion_tokens": completion_tokens,
        "total_tokens": prompt + completion_tokens,
    }
    if cached is not None:
        usage["prompt_tokens_details"] = {"cached_tokens": cached}
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "created": 1700000000,
        "model": "test-model-2024-01-01",
        "system_fingerprint": "fp_test",
        "choices": [{"index": 0, "finish_reason": finish,
                     "message": {"role": "assistant", "content": text}}],
        "usage": usage,
    }


def error_body(message: str, type_: str, code: str | None = None) -> dict[str, Any]:
    return {"error": {"message": message, "type": type_, "param": None, "code": code}}


class _Handler(BaseHTTPRequestHandler):
    script: Script

    def do_POST(self) -> None:  # noqa: N802 - http.server's naming
        length = int(self.headers.get("content-length") or 0)
        body = json.loads(self.rfile.read(length) or b"{}")
        script = self.server.script  # type: ignore[attr-defined]
        script.requests.append({"path": self.path, "body": body,
                                "authorization": self.headers.get("authorization")})
        number = len(script.requests)
        script.events.append(f"request {number}")
        index = min(number, len(script.replies)) - 1
        reply = script.replies[index]
        if reply.hold is not None:
            reply.hold.wait(30)
        script.events.append(f"reply {number}")
        data = json.dumps(reply.body or {}).encode()
        try:
            self.send_response(reply.status)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(data)))
            for name, value in reply.headers.items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(data)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client gave up (timeout test)

    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture(scope="module")
def server() -> Iterator[ThreadingHTTPServer]:
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    httpd.daemon_threads = True
    thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05},
                              daemon=True)
    thread.start()
    yield httpd
    httpd.shutdown()
    httpd.server_close()


@pytest.fixture
def script(server: ThreadingHTTPServer) -> Script:
    server.script = Script()  # type: ignore[attr-defined]
    return server.script  # type: ignore[attr-defined]


class SleepRecorder:
    def __init__(self, events: list[str] | None = None) -> None:
        self.waits: list[float] = []
        self.events = events if events is not None else []

    async def __call__(self, seconds: float) -> None:
        self.waits.append(seconds)
        self.events.append(f"wait {seconds}")


def make_model(server: ThreadingHTTPServer, sleep: SleepRecorder, **kw: Any) -> LiteLLMModel:
    port = server.server_address[1]
    kw.setdefault("retry", RetryPolicy(max_attempts=3, base_delay=0.25, jitter=0.0))
    return LiteLLMModel(MODEL, api_base=f"http://127.0.0.1:{port}/v1", api_key=KEY,
                        sleep=sleep, **kw)


async def test_a_normal_answer_gives_exact_text_and_usage(server, script):
    script.replies = [Reply(body=completion("The summary.", prompt=120, completion_tokens=30,
                                            cached=64))]
    model = make_model(server, SleepRecorder(), temperature=0)
    reply, usage = await model.complete("You summarize.", [Message.user("Summarize this.")])
    assert reply.role == "assistant"
    assert reply.concat_text() == "The summary."
    assert (usage.model, usage.input_tokens, usage.output_tokens, usage.total_tokens) == (
        MODEL, 120, 30, 150)
    assert usage.cache_read_input_tokens == 64
    assert usage.cache_write_input_tokens is None
    assert usage.cost is None  # a made-up model has no price
    assert usage.extra["finish_reason"] == "stop"
    assert usage.extra["resolved_model"] == "test-model-2024-01-01"
    assert usage.extra["system_fingerprint"] == "fp_test"
    assert (usage.extra["attempts"], usage.extra["retries_made"]) == (1, 0)


async def test_the_server_receives_the_system_prompt_first(server, script):
    script.replies = [Reply(body=completion("ok"))]
    model = make_model(server, SleepRecorder(), temperature=0, max_tokens=50)
    await model.complete("You summarize.", [Message.user("Summarize this.")])
    (request,) = script.requests
    assert request["path"] == "/v1/chat/completions"
    assert request["body"]["messages"] == [
        {"role": "system", "content": "You summarize."},
        {"role": "user", "content": "Summarize this."},
    ]
    assert request["body"]["model"] == "test-model"
    assert request["body"]["temperature"] == 0
    assert request["body"]["max_tokens"] == 50
    assert request["authorization"] == f"Bearer {KEY}"


async def test_a_429_with_retry_after_waits_that_long_then_succeeds(server, script):
    script.replies = [
        Reply(429, error_body("Rate limit reached", "requests", "rate_limit_exceeded"),
              headers={"Retry-After": "1"}),
        Reply(body=completion("after the wait", prompt=5, completion_tokens=3)),
    ]
    sleep = SleepRecorder()
    reply, usage = await make_model(server, sleep).complete("s", [Message.user("u")])
    assert reply.concat_text() == "after the wait"
    assert sleep.waits == [1.0]
    assert len(script.requests) == 2
    assert (usage.extra["attempts"], usage.extra["retries_made"]) == (2, 1)


async def test_repeated_500s_give_up_after_the_attempt_budget_naming_the_model(server, script):
    script.replies = [Reply(500, error_body("The server had an error", "server_error"))]
    sleep = SleepRecorder()
    with pytest.raises(TransientModelError) as info:
        await make_model(server, sleep).complete("s", [Message.user("u")])
    assert len(script.requests) == 3
    assert sleep.waits == [0.25, 0.5]
    port = server.server_address[1]
    assert str(info.value).startswith(
        "gave up after 3 attempts: openai/test-model: server or connection error (host "
        f"127.0.0.1:{port}, HTTP 500): ")
    assert info.value.model == MODEL
    assert info.value.attempts == 3


async def test_a_slow_server_raises_model_timeout_after_retries(server, script):
    late = threading.Event()  # the server answers only after the test has its error
    script.replies = [Reply(body=completion("too late"), hold=late)]
    sleep = SleepRecorder(script.events)
    model = make_model(server, sleep, timeout=0.3,
                       retry=RetryPolicy(max_attempts=2, base_delay=0.1, jitter=0.0))
    try:
        with pytest.raises(ModelTimeout) as info:
            await model.complete("s", [Message.user("u")])
        script.events.append("raised")
    finally:
        late.set()
    # Each attempt timed out waiting (no reply came before the error), the one retry waited
    # its back-off, and the error counts both attempts.
    assert script.events[:4] == ["request 1", "wait 0.1", "request 2", "raised"]
    assert sleep.waits == [0.1]
    assert info.value.attempts == 2  # type: ignore[attr-defined]
    assert str(info.value).startswith("gave up after 2 attempts: openai/test-model: the request "
                                      f"to host 127.0.0.1:{server.server_address[1]} timed out")


async def test_a_context_length_400_raises_context_length_exceeded_without_retrying(server, script):
    script.replies = [Reply(400, error_body(
        "This model's maximum context length is 8192 tokens. However, your messages resulted "
        "in 9000 tokens. Please reduce the length of the messages.",
        "invalid_request_error", "context_length_exceeded"))]
    sleep = SleepRecorder()
    with pytest.raises(ContextLengthExceeded) as info:
        await make_model(server, sleep).complete("s", [Message.user("u")])
    assert len(script.requests) == 1
    assert sleep.waits == []
    assert str(info.value).startswith(
        "openai/test-model: the prompt does not fit the model's context window: ")
    assert "maximum context length is 8192 tokens" in str(info.value)


async def test_a_401_raises_authentication_error_naming_the_env_var_and_never_the_key(
        server, script):
    script.replies = [Reply(401, error_body(
        f"Incorrect API key provided: {KEY}. You can find your API key at ...",
        "invalid_request_error", "invalid_api_key"))]
    sleep = SleepRecorder()
    with pytest.raises(AuthenticationError) as info:
        await make_model(server, sleep).complete("s", [Message.user("u")])
    assert len(script.requests) == 1
    assert sleep.waits == []
    text = str(info.value)
    assert text.startswith("openai/test-model: credentials were missing or rejected; "
                           "set OPENAI_API_KEY to a valid key (or pass api_key=...).")
    assert KEY not in text
    assert "not-real" not in text


async def test_litellm_mock_mode_gives_text_and_usage_without_a_server():
    model = LiteLLMModel(MODEL, mock_response="mocked summary")
    reply, usage = await model.complete("s", [Message.user("u")])
    assert reply.concat_text() == "mocked summary"
    # litellm's mock reports fixed counts; an unpriced model has no cost.
    assert (usage.input_tokens, usage.output_tokens, usage.total_tokens) == (10, 20, 30)
    assert usage.cost is None
    assert usage.extra["mock"] is True
    assert usage.extra["finish_reason"] == "stop"


def test_repr_and_cache_identity_never_show_the_api_key():
    model = LiteLLMModel(MODEL, api_base="http://127.0.0.1:1/v1", api_key=KEY, temperature=0.2,
                         timeout=30, retry=RetryPolicy(max_attempts=2))
    assert repr(model) == (
        "LiteLLMModel('openai/test-model', api_base='http://127.0.0.1:1/v1', temperature=0.2, "
        "api_key=<hidden>)")
    assert model.cache_identity() == {
        "kind": "litellm", "model": MODEL, "api_base": "http://127.0.0.1:1/v1",
        "params": {"temperature": 0.2},
    }


def test_context_window_comes_from_litellms_model_map_or_is_none():
    assert LiteLLMModel("openai/gpt-4o").context_window() == 128000
    assert LiteLLMModel(MODEL).context_window() is None
