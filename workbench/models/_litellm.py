"""The gateway to every real provider: a `CompactionModel` over ``litellm.acompletion``.

litellm's own retries are switched off (``num_retries=0``) so that one policy, `RetryPolicy`,
decides what is retried and every attempt is counted in the usage record. A ``num_retries``
(or ``max_retries``) parameter is therefore not passed on: it sets that policy, so
``num_retries = 0`` means one attempt and no retry, exactly as litellm would read it.

Every value the gateway sends as a credential is registered with the redaction layer before
any call, however long: the ``api_key``, every header value (``extra_headers``, whatever the
header is called), every query-string value of ``api_base``, the user-info of any URL, and every
field of a credentials table nested in the parameters (``extra_body.credentials``).
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from types import ModuleType

from workbench._redact import public_params, register_secrets_in, secret_values
from workbench.compaction._model import Usage
from workbench.errors import ConfigError
from workbench.messages import Message
from workbench.models._convert import from_openai_response, to_openai_messages
from workbench.models._errors_map import load_litellm, map_litellm_errors, missing_key_error
from workbench.models._retry import RetryPolicy, Sleep, call_with_retries

__all__ = ["LiteLLMModel"]

# Parameters that change how (or with whose credentials) a call is made, never what it answers.
_NOT_IDENTITY = frozenset({
    "api_key", "timeout", "num_retries", "max_retries", "retry", "metadata",
    "request_timeout", "stream_timeout", "litellm_logging_obj",
})
_SECRET_HEADER_WORDS = ("authorization", "key", "token", "secret", "cookie")
RETRY_PARAMS = ("num_retries", "max_retries")
"""Parameters that set the gateway's `RetryPolicy` (retries after the first attempt)."""
MAX_RETRIES = 100
"""Most retries a ``num_retries`` parameter may ask for."""


def retry_from_params(params: Mapping[str, object]) -> int | None:
    """The retries ``num_retries`` / ``max_retries`` ask for (None when neither is given).

    Raises:
        ConfigError: a value that is not a whole number from 0 to `MAX_RETRIES`, or the two
            parameters given with different values.
    """
    found: dict[str, int] = {}
    for name in RETRY_PARAMS:
        if name not in params:
            continue
        value = params[name]
        if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= MAX_RETRIES:
            raise ConfigError(f"{name} = {value!r}: expected a whole number of retries from 0 "
                              f"to {MAX_RETRIES} (0 = a single attempt)")
        found[name] = value
    if len(set(found.values())) > 1:
        raise ConfigError(f"num_retries = {found['num_retries']} and max_retries = "
                          f"{found['max_retries']} disagree; give one of them")
    return next(iter(found.values()), None)


def _identity_value(name: str, value: object) -> object:
    if name == "extra_headers" and isinstance(value, dict):
        return {
            k: v for k, v in sorted(value.items())
            if not any(word in k.lower() for word in _SECRET_HEADER_WORDS)
        }
    return value


class LiteLLMModel:
    """A model reached through litellm: OpenAI, Anthropic, Gemini, OpenRouter, local servers...

    Args:
        model: A litellm model string, e.g. ``"openai/gpt-4o-mini"`` or
            ``"anthropic/claude-3-5-haiku-latest"``.
        retry: Retry policy for 429s, timeouts and transient 5xx (default `RetryPolicy()`, or
            ``num_retries + 1`` attempts when that parameter is given).
        timeout: Seconds one attempt may take.
        sleep: Async sleep used between attempts (tests inject a recorder).
        **params: Passed to ``litellm.acompletion`` unchanged: ``api_base``, ``api_key``,
            ``temperature``, ``max_tokens``, ``mock_response``...; except ``num_retries`` and
            ``max_retries``, which set the retry policy (see the module docstring).

    Example:
        ```python
        model = LiteLLMModel("openai/gpt-4o-mini", temperature=0)
        reply, usage = await model.complete(system_prompt, [Message.user("Summarize.")])
        ```
    """

    def __init__(self, model: str, *, retry: RetryPolicy | None = None, timeout: float = 600,
                 sleep: Sleep | None = None, **params: object) -> None:
        self.model = model
        retries = retry_from_params(params)
        if retry is None and retries is not None:
            retry = RetryPolicy(max_attempts=retries + 1)
        self.retry = retry or RetryPolicy()
        self.timeout = timeout
        # The retry parameters became the policy; litellm's own retries always stay off.
        self.params = {k: v for k, v in params.items() if k not in RETRY_PARAMS}
        self._sleep = sleep
        # Whatever a provider echoes back (a key in a 401 body) is then masked wherever it lands.
        register_secrets_in(self.params)
        self._secrets = [value for _, value, _ in secret_values(self.params)]

    def __repr__(self) -> str:
        shown = [repr(self.model)]
        public = public_params(self.params)
        shown += [f"{k}={v!r}" for k, v in sorted(public.items())]
        shown += [f"{k}=<hidden>" for k in sorted(set(self.params) - set(public))]
        return f"LiteLLMModel({', '.join(shown)})"

    def describe(self) -> str:
        """Short label for tables: the model string."""
        return self.model

    async def complete(self, system: str, messages: list[Message]) -> tuple[Message, Usage]:
        """Send the conversation and return the reply with its usage.

        ``usage.extra`` records ``attempts``, ``retries_made``, ``latency_ms`` (all attempts,
        waits included), ``finish_reason``, ``resolved_model`` and ``system_fingerprint``.

        Raises:
            ContextLengthExceeded: the prompt does not fit (never retried).
            AuthenticationError: missing or rejected key (never retried).
            RateLimited, ModelTimeout, TransientModelError: still failing after the retry budget.
            ModelCallError: any other provider error.
        """
        missing = missing_key_error(self.model, self.params)
        if missing is not None:
            raise missing  # no attempt can succeed: fail at once, before any request
        litellm = load_litellm()
        payload = to_openai_messages(system, messages)
        secrets = self._secrets
        api_base = self.params.get("api_base")  # a URL string (named in error messages)
        api_base = api_base if isinstance(api_base, str) else None
        attempts = 0

        async def attempt() -> object:  # litellm's ModelResponse (untyped: a module attribute)
            nonlocal attempts
            attempts += 1
            with map_litellm_errors(self.model, secrets=secrets, api_base=api_base):
                return await litellm.acompletion(
                    model=self.model, messages=payload, timeout=self.timeout, num_retries=0,
                    **self.params,
                )

        started = time.perf_counter()
        response = await call_with_retries(attempt, self.retry, self.model, sleep=self._sleep)
        elapsed_ms = (time.perf_counter() - started) * 1000.0
        reply, usage = from_openai_response(response, self.model)
        usage.cost = self._cost(litellm, response)
        usage.extra.update(attempts=attempts, retries_made=attempts - 1,
                           latency_ms=round(elapsed_ms, 1))
        if self.params.get("mock_response") is not None:
            usage.extra["mock"] = True
        return reply, usage

    @staticmethod
    def _cost(litellm: ModuleType, response: object) -> float | None:
        """litellm's price for the response, or None when it has none (never a guess)."""
        try:
            cost = litellm.completion_cost(completion_response=response)
        except Exception:  # noqa: BLE001 - unpriced models raise assorted errors
            return None
        return float(cost) if isinstance(cost, int | float) else None

    def context_window(self) -> int | None:
        """The model's input window in tokens from litellm's model map, or None if unknown."""
        litellm = load_litellm()
        try:
            info = litellm.get_model_info(self.model)
        except Exception:  # noqa: BLE001 - unmapped models raise; the window is just unknown
            return None
        value = info.get("max_input_tokens")
        return int(value) if isinstance(value, int) else None

    def cache_identity(self) -> dict[str, object]:
        """Everything that changes the answer (for the response cache key); never the API key."""
        params = {
            k: _identity_value(k, v) for k, v in sorted(self.params.items())
            if k not in _NOT_IDENTITY and k != "api_base"
        }
        return {
            "kind": "litellm",
            "model": self.model,
            "api_base": self.params.get("api_base"),
            "params": params,
        }
