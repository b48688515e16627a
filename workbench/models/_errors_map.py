"""Translate litellm's exceptions into the workbench's error tree, in one place.

Every litellm call runs inside `map_litellm_errors(model)`; the mapped error is raised ``from``
the original so the provider's traceback stays reachable. Control flow elsewhere branches on the
mapped classes only.

```
litellm.ContextWindowExceededError, context-length 400s   -> ContextLengthExceeded   (not retried)
litellm.RateLimitError                                     -> RateLimited             (retried)
litellm.Timeout, asyncio/builtin TimeoutError              -> ModelTimeout            (retried)
litellm.AuthenticationError, PermissionDeniedError         -> AuthenticationError     (not retried)
any error whose text says the credentials are missing      -> AuthenticationError     (not retried)
user:password@ in api_base clashing with the key header    -> ModelCallError          (not retried)
5xx: InternalServerError, ServiceUnavailableError,
     BadGatewayError, APIConnectionError, APIError >= 500  -> TransientModelError     (retried)
BadRequestError, NotFoundError and other API errors        -> ModelCallError          (not retried)
```

Every provider error's message names where it came from: the host (of ``api_base``, else of
the request litellm sent; never its user-info or query) and the HTTP status, or, when no
response came at all, why (connection refused, host name not resolved).
"""

from __future__ import annotations

import email.utils
import os
import re
import time
import warnings
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from types import ModuleType
from typing import Protocol

from workbench._offline import ensure_offline
from workbench._redact import redact
from workbench.errors import (
    AuthenticationError,
    ContextLengthExceeded,
    ModelCallError,
    ModelTimeout,
    RateLimited,
    WorkbenchError,
)
from workbench.models._error_source import UNKNOWN_HOST, host_of, where
from workbench.models._error_source import status_of as _status

__all__ = [
    "TransientModelError",
    "api_key_env_var",
    "load_litellm",
    "map_litellm_errors",
    "missing_key_error",
    "parse_retry_after",
    "to_workbench_error",
]

_DETAIL_LIMIT = 600
"""Longest provider text copied into a workbench error message."""

# Provider prefix (litellm's ``custom_llm_provider``) -> environment variable litellm reads the key from.
_KEY_ENV_VARS: dict[str, str] = {
    "openai": "OPENAI_API_KEY",
    "text-completion-openai": "OPENAI_API_KEY",
    "azure": "AZURE_API_KEY",
    "anthropic": "ANTHROPIC_API_KEY",
    "gemini": "GEMINI_API_KEY",
    "vertex_ai": "GOOGLE_APPLICATION_CREDENTIALS",
    "mistral": "MISTRAL_API_KEY",
    "groq": "GROQ_API_KEY",
    "deepseek": "DEEPSEEK_API_KEY",
    "openrouter": "OPENROUTER_API_KEY",
    "together_ai": "TOGETHERAI_API_KEY",
    "fireworks_ai": "FIREWORKS_AI_API_KEY",
    "cohere": "COHERE_API_KEY",
    "xai": "XAI_API_KEY",
    "perplexity": "PERPLEXITYAI_API_KEY",
    "databricks": "DATABRICKS_API_KEY",
    "bedrock": "AWS_ACCESS_KEY_ID",
    "huggingface": "HF_TOKEN",
}

# Anything shaped like an API key (sk-..., long opaque tokens) is blanked out of provider text.
_KEY_LIKE = re.compile(r"\b(?:sk|pk|rk|key|api)[-_][A-Za-z0-9_\-*]{6,}|\b[A-Za-z0-9_\-]{32,}\b")

# Phrases providers use for "the prompt is too long" in a plain 400 response.
_CONTEXT_PHRASES = re.compile(
    r"context[_ ]length|maximum context|context window|too many tokens|prompt is too long"
    r"|input is too long|exceeds? the (?:model'?s? )?(?:maximum )?(?:context|token limit)",
    re.IGNORECASE,
)


# Phrases SDKs use when no key was given at all (the OpenAI SDK's complaint reaches litellm as
# a 500 "InternalServerError", which would otherwise be retried as transient).
_MISSING_CREDENTIALS = re.compile(
    r"missing credentials|api_key client option must be set|no api[_ ]key (?:was )?(?:provided|found|set)"
    r"|api[_ ]key (?:is )?(?:missing|required|not (?:set|found|provided))",
    re.IGNORECASE,
)

# The HTTP client refuses a URL with user-info when the SDK also sends an Authorization header;
# litellm reports that as a 500, but no retry can fix a local configuration.
_URL_CREDENTIALS_CLASH = re.compile(r"credentials encoded in URL", re.IGNORECASE)
URL_CREDENTIALS_MESSAGE = (
    "{model}: api_base carries user:password@ and the client also sends the API key header, "
    "which cannot be combined; put the credentials in api_key or extra_headers instead")

# Providers authenticated by one API key variable alone, so a missing variable is certain to
# fail; others (bedrock, vertex_ai, azure, local servers) have other ways to authenticate.
KEY_ONLY_PROVIDERS = frozenset({
    "openai", "text-completion-openai", "anthropic", "gemini", "mistral", "groq", "deepseek",
    "openrouter", "together_ai", "fireworks_ai", "cohere", "xai", "perplexity",
})


def load_litellm() -> ModuleType:
    """Import litellm the offline way (no price-map download, no provider-list banners)."""
    ensure_offline()
    # litellm's types trip a pydantic warning on first use that users can do nothing about.
    warnings.filterwarnings("ignore", message=r"Items? .*`ReadOnly` qualifier", category=UserWarning)
    import litellm  # seconds to import: only where a provider is called, never on `--help`

    litellm.suppress_debug_info = True
    return litellm


class TransientModelError(ModelCallError):
    """A server-side or connection failure (5xx, reset, unreachable) worth retrying."""


def api_key_env_var(model: str) -> str | None:
    """The environment variable holding the API key for `model`'s provider, when known.

    Args:
        model: A litellm model string such as ``"openai/gpt-4o"`` or ``"anthropic/claude-..."``.
    """
    provider = model.split("/", 1)[0] if "/" in model else ""
    if provider not in _KEY_ENV_VARS:
        try:
            provider = load_litellm().get_llm_provider(model)[1]
        except Exception:  # noqa: BLE001 - unknown model strings simply have no known variable
            return None
    return _KEY_ENV_VARS.get(provider)


def says_credentials_missing(text: str) -> bool:
    """True when an error text says no API key was supplied (see `_MISSING_CREDENTIALS`)."""
    return bool(_MISSING_CREDENTIALS.search(text))


def missing_key_error(model: str, params: Mapping[str, object]) -> AuthenticationError | None:
    """An `AuthenticationError` naming the variable to set when `model` certainly has no key.

    Only for `KEY_ONLY_PROVIDERS`, and only when neither an ``api_key`` parameter nor the
    provider's variable is set (litellm's ``mock_response`` needs no key); None otherwise (the
    call is then left to the provider).
    """
    if params.get("api_key") or params.get("mock_response") is not None:
        return None
    provider = model.split("/", 1)[0] if "/" in model else ""
    if provider not in KEY_ONLY_PROVIDERS:
        return None
    env = _KEY_ENV_VARS.get(provider)
    if env is None or os.environ.get(env):
        return None
    return AuthenticationError(_auth_message(model, env, "no API key was given"), model)


def _auth_message(model: str, env: str | None, what: str, permission: bool = False) -> str:
    fix = f"set {env} to a valid key" if env else "set the provider's API key variable"
    if permission:
        fix += " that has access to this model"
    return f"{model}: {what}; {fix} (or pass api_key=...)"


def says_context_too_long(text: str) -> bool:
    """True when an error body says the prompt does not fit the context window.

    Why text: litellm only raises ``ContextWindowExceededError`` for providers whose error shape it
    recognises; OpenAI-compatible servers and proxies often answer a plain 400 whose only signal
    is the wording. This is the single place the workbench reads error text.
    """
    return bool(_CONTEXT_PHRASES.search(text))


def parse_retry_after(value: object, *, now: float | None = None) -> float | None:
    """Seconds to wait from a ``Retry-After`` header: a number of seconds or an HTTP date.

    Returns None when the value is missing or unreadable; never negative.
    """
    if value is None:
        return None
    text = str(value).strip()
    try:
        return max(0.0, float(text))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(text)
    except (TypeError, ValueError):
        return None
    if when is None:
        return None
    return max(0.0, when.timestamp() - (time.time() if now is None else now))


class _Headers(Protocol):
    """HTTP headers as an error carries them (httpx's `Headers`, or a plain dict)."""

    def get(self, key: str, /) -> str | None: ...


def _headers_of(exc: BaseException) -> list[_Headers]:
    found: list[_Headers] = []
    response = getattr(exc, "response", None)
    if response is not None and getattr(response, "headers", None) is not None:
        found.append(response.headers)
    for name in ("litellm_response_headers", "headers"):
        extra = getattr(exc, name, None)
        if extra:
            found.append(extra)
    return found


def _retry_after_of(exc: BaseException) -> float | None:
    for headers in _headers_of(exc):
        try:
            ms = headers.get("retry-after-ms")
            if ms is not None:
                return max(0.0, float(ms) / 1000.0)
            seconds = parse_retry_after(headers.get("retry-after"))
        except (AttributeError, TypeError, ValueError):
            continue
        if seconds is not None:
            return seconds
    return None


def _redact(text: str, secrets: Iterable[str]) -> str:
    for secret in secrets:
        if secret:
            text = text.replace(secret, "[redacted]")
    return _KEY_LIKE.sub("[redacted]", text)


def _detail(exc: BaseException, secrets: Iterable[str]) -> str:
    secrets = list(secrets)
    text = " ".join(str(exc).split()) or type(exc).__name__
    # Masked whole before it is cut: a secret cut in two would leave its first part unmasked.
    text = _redact(redact(text, secrets=secrets), secrets)
    if len(text) > _DETAIL_LIMIT:
        text = text[:_DETAIL_LIMIT] + "..."
    return text


def to_workbench_error(
    exc: BaseException, model: str, secrets: Iterable[str] = (), api_base: str | None = None
) -> ModelCallError | None:
    """The workbench error for a litellm exception, or None when `exc` is not a provider error.

    Args:
        exc: The exception litellm raised.
        model: The model id to name in the message.
        secrets: Exact strings (API keys) to blank out of the message.
        api_base: The call's ``api_base``: its host is named in the message (`where`).
    """
    litellm = load_litellm()
    secrets = tuple(secrets)
    detail = _detail(exc, secrets)
    at = _redact(where(exc, api_base), secrets)
    err: ModelCallError
    if isinstance(exc, litellm.ContextWindowExceededError) or (
        isinstance(exc, litellm.BadRequestError) and says_context_too_long(str(exc))
    ):
        err = ContextLengthExceeded(
            f"{model}: the prompt does not fit the model's context window: {detail}", model
        )
    elif isinstance(exc, litellm.RateLimitError):
        err = RateLimited(f"{model}: rate limited ({at}): {detail}", model)
    elif isinstance(exc, litellm.Timeout | TimeoutError):
        host = host_of(exc, api_base)
        err = ModelTimeout(f"{model}: the request to {'host ' + host if host else UNKNOWN_HOST} "
                           f"timed out: {detail}", model)
    elif _URL_CREDENTIALS_CLASH.search(str(exc)):
        err = ModelCallError(URL_CREDENTIALS_MESSAGE.format(model=model), model)
    elif isinstance(exc, litellm.AuthenticationError | litellm.PermissionDeniedError) or (
        says_credentials_missing(str(exc))
    ):
        err = AuthenticationError(
            _auth_message(model, api_key_env_var(model), "credentials were missing or rejected",
                          isinstance(exc, litellm.PermissionDeniedError))
            + f". Provider said ({at}): {detail}",
            model,
        )
    elif isinstance(
        exc,
        litellm.InternalServerError
        | litellm.ServiceUnavailableError
        | litellm.BadGatewayError
        | litellm.APIConnectionError,
    ) or (isinstance(exc, litellm.APIError) and (_status(exc) or 0) >= 500):
        err = TransientModelError(f"{model}: server or connection error ({at}): {detail}", model)
    elif isinstance(exc, litellm.NotFoundError):
        err = ModelCallError(f"{model}: not found ({at}); check the model name and api_base: "
                             f"{detail}", model)
    elif isinstance(exc, litellm.BadRequestError | litellm.APIError | litellm.OpenAIError
                    | litellm.UnprocessableEntityError | litellm.APIResponseValidationError):
        err = ModelCallError(f"{model}: the provider rejected the request ({at}): {detail}",
                             model)
    else:
        return None
    err.retry_after = _retry_after_of(exc)  # type: ignore[attr-defined]
    err.status_code = _status(exc)  # type: ignore[attr-defined]
    return err


@contextmanager
def map_litellm_errors(model: str, *, secrets: Iterable[str] = (),
                       api_base: str | None = None) -> Iterator[None]:
    """Run a litellm call and re-raise its failure as a workbench error ``from`` the original.

    The mapped error carries ``retry_after`` (seconds from a ``Retry-After`` header, or None)
    and ``status_code``. Workbench errors and unrelated exceptions pass through unchanged.

    Args:
        model: The model id to name in messages.
        secrets: Exact strings (API keys) that must never appear in a message.
        api_base: The call's ``api_base``, whose host a message names.

    Example:
        ```python
        with map_litellm_errors("openai/gpt-4o"):
            response = await litellm.acompletion(...)
        ```
    """
    try:
        yield
    except WorkbenchError:
        raise
    except Exception as exc:
        mapped = to_workbench_error(exc, model, secrets, api_base)
        if mapped is None:
            raise
        raise mapped from exc
