"""What counts as a secret: names that say so, values found in model parameters by name or by
position, and the registry of exact values the redaction layer masks wherever they land.

Found in a parameter mapping (`secret_values`), at any depth:

- every leaf under a secret name (``api_key``, ``token``..., and every field of a table such as
  ``extra_body.credentials``, whatever the fields are called);
- by position, whatever their names: every header value (`HEADER_PARAMS`) and every query value
  of a provider URL (`URL_PARAMS`);
- the user-info of any URL (``user:password``, the password, the user name), written
  URL-encoded or not.

Registered values (`register_secret`) have no upper length bound. Each joins the mask with its
URL-decoded form and its fixed encoded forms (base64, hex: `workbench._redact._forms`). Values
shorter than `MIN_REGISTERED_SECRET` cannot be masked in free text without wrecking it:
`short_secrets` names them so a spec can refuse them. Secret-looking environment variables count
too, and so do the credentials of proxy variables (``HTTPS_PROXY=http://user:pass@proxy``),
which the HTTP client sends on every call.
"""

from __future__ import annotations

import os
import re
import threading
from collections.abc import Iterator, Mapping
from functools import lru_cache
from urllib.parse import unquote, unquote_plus

from workbench._redact._forms import fixed_forms

__all__ = [
    "HEADER_PARAMS",
    "MIN_REGISTERED_SECRET",
    "URL_PARAMS",
    "is_secret_name",
    "positional_secrets",
    "register_secret",
    "register_secrets_in",
    "secret_values",
    "short_secret_message",
    "short_secrets",
]

MIN_ENV_SECRET = 8
"""Shorter values of secret-looking environment variables are ignored (``1``, ``true``...)."""
MIN_REGISTERED_SECRET = 6
"""Shorter registered values are not masked in free text: blanking ``abc`` everywhere would
wreck the output (see `short_secrets`)."""
HEADER_PARAMS = frozenset({"extra_headers", "headers"})
"""Model parameters whose every value is an HTTP header: all of them are secrets by position."""
URL_PARAMS = frozenset({"api_base", "base_url"})
"""Model parameters holding the provider's URL: every query-string value is a secret by position."""

# A key name holds a secret when, lower-cased with '-' as '_', it is one of these words or ends
# with '_' + one of them. Plural 'tokens' (max_tokens, input_tokens) deliberately does not match.
_SECRET_WORDS = (
    "api_key", "apikey", "key", "token", "access_token", "refresh_token", "auth_token",
    "id_token", "session_token", "secret", "client_secret", "password", "passwd",
    "authorization", "cookie", "set_cookie", "private_key", "access_key", "credentials",
    "credential", "bearer",
)
_SECRET_NAME = re.compile(r"^(?:.*_)?(?:" + "|".join(sorted(_SECRET_WORDS, key=len, reverse=True))
                          + r")$")
# 'key' alone as a JSON/dict key is too common (cache keys, sort keys): only named params and
# environment variables ending in _KEY count, never a bare 'key'.
_BARE_NOT_SECRET = frozenset({"key", "cache_key", "sort_key", "prompt_key", "primary_key"})

# One query parameter of a URL: the separator and name (kept), then the value (masked).
QUERY_VALUE = re.compile(r"([?&;][^=&#;]*=)([^&#;]*)")
_USERINFO = re.compile(r"(?i)\b[a-z][a-z0-9+.\-]*://([^/\s@?#]+)@")
AUTH_SCHEME = re.compile(r"(?i)\b(Bearer|Basic|Token)(\s+)[A-Za-z0-9._~+/=\-]{6,}")

_registered: set[str] = set()
_registered_lock = threading.Lock()
_registry_version = [0]


@lru_cache(maxsize=4096)
def is_secret_name(name: str) -> bool:
    """True when a parameter, header, JSON key or environment variable name says "secret".

    Examples: ``api_key``, ``Authorization``, ``x-api-key``, ``OPENAI_API_KEY``, ``HF_TOKEN``,
    ``db_password``, ``client_secret``; not ``max_tokens``, ``key`` or ``cache_key``.
    """
    norm = str(name).strip().lower().replace("-", "_")
    if norm in _BARE_NOT_SECRET:
        return False
    return bool(_SECRET_NAME.match(norm))


def _scalar(value: object) -> bool:
    return isinstance(value, str | int | float) and not isinstance(value, bool) and value != ""


def _leaves(value: object, where: str) -> Iterator[tuple[str, str, bool]]:
    if isinstance(value, Mapping):
        for key, item in value.items():
            yield from _leaves(item, f"{where}.{key}")
    elif isinstance(value, list | tuple | set):
        for i, item in enumerate(value):
            yield from _leaves(item, f"{where}[{i}]")
    elif _scalar(value):
        yield where, str(value), True


def _userinfo(text: str, where: str) -> Iterator[tuple[str, str, bool]]:
    for match in _USERINFO.finditer(text):
        userinfo = match.group(1)
        user, colon, password = userinfo.partition(":")
        # A user name is no secret on its own (a short one is not refused); the password or a
        # token standing alone in the user-info is.
        yield f"{where} user-info", userinfo, not colon
        if colon:
            yield f"{where} user-info user name", user, False
            yield f"{where} user-info password", password, True


def query_values(url: str) -> list[tuple[str, str]]:
    """``(name, value)`` of each non-empty query value of `url`, as written (URL-encoded)."""
    _, sep, query = url.partition("?")
    if not sep:
        return []
    return [(m.group(1)[1:-1], m.group(2))
            for m in QUERY_VALUE.finditer("?" + query.partition("#")[0]) if m.group(2)]


def secret_values(value: object, where: str = "params") -> Iterator[tuple[str, str, bool]]:
    """Every secret in a parameter mapping, at any depth, as ``(where, value, strict)``.

    `where` names its place (``params.extra_body.credentials.scopes[0]``, ``params.api_base
    query value 'key'``); `strict` is False for a URL's user name and a whole
    ``user:password``, which are masked but not refused when short (see `short_secrets`).
    """
    if isinstance(value, Mapping):
        for key, item in value.items():
            here = f"{where}.{key}"
            if key in HEADER_PARAMS and isinstance(item, Mapping):
                yield from ((f"{here}.{k}", str(v), True) for k, v in item.items() if _scalar(v))
            elif is_secret_name(str(key)):
                yield from _leaves(item, here)
            elif key in URL_PARAMS and isinstance(item, str):
                for name, raw in query_values(item):
                    yield f"{here} query value {name!r}", unquote_plus(raw), True
                    yield f"{here} query value {name!r} as written", raw, False
                yield from _userinfo(item, here)
            else:
                yield from secret_values(item, here)
    elif isinstance(value, list | tuple | set):
        for i, item in enumerate(value):
            yield from secret_values(item, f"{where}[{i}]")
    elif isinstance(value, str):
        yield from _userinfo(value, where)


def positional_secrets(params: Mapping[str, object]) -> list[str]:
    """The values of `params` that are secrets by position: every header value (under
    `HEADER_PARAMS`) and every query-string value of a URL (under `URL_PARAMS`), at the top
    level of a model's parameters (the shape litellm takes them in)."""
    found: list[str] = []
    for key, item in params.items():
        if key in HEADER_PARAMS and isinstance(item, Mapping):
            found += [str(v) for v in item.values() if _scalar(v)]
        elif key in URL_PARAMS and isinstance(item, str):
            found += [v for _, raw in query_values(item) for v in {raw, unquote_plus(raw)}]
    return found


def short_secrets(params: Mapping[str, object], where: str = "params") -> list[str]:
    """Where `params` hold a secret too short to mask in free text (see `secret_values`)."""
    # A value already masked (a spec copy read back) is no secret.
    found = [(place, len(value)) for place, value, strict in secret_values(params, where)
             if strict and len(value) < MIN_REGISTERED_SECRET and value.strip("*")]
    return [f"{place} ({n} character{'s' if n != 1 else ''})" for place, n in found]


def short_secret_message(places: list[str]) -> str:
    """Why a spec with short secrets is refused, and what to do (the values are not shown)."""
    return (f"{', '.join(places)}: a secret shorter than {MIN_REGISTERED_SECRET} characters "
            "cannot be masked in free text (blanking so short a string everywhere would wreck "
            "the output), so a provider or proxy that echoes it back would write it into the "
            "results, logs and reports; it would be masked only where the spec stores it. Use "
            f"a secret of at least {MIN_REGISTERED_SECRET} characters, or set "
            "allow_short_secrets = true in the experiment to accept that risk")


def _with_forms(value: str) -> set[str]:
    """`value`, its URL-decoded form, and their fixed encoded forms, long enough to mask."""
    found = {value}
    if "%" in value:
        found.add(unquote(value))
    for item in list(found):
        if len(item) >= MIN_REGISTERED_SECRET:
            found |= fixed_forms(item)
    return {item for item in found if len(item) >= MIN_REGISTERED_SECRET}


def register_secret(value: object) -> None:
    """Remember `value` as a secret for the rest of the process (ignored when too short).

    A ``Bearer <token>`` value registers the token too; a URL-encoded value its decoded form;
    each with its base64 and hex forms.
    """
    if not isinstance(value, str):
        return
    text = value.strip()
    candidates = _with_forms(text)
    scheme = AUTH_SCHEME.match(text)
    if scheme:
        candidates |= _with_forms(text[scheme.end(2):])
    with _registered_lock:
        new = candidates - _registered
        if new:
            _registered.update(new)
            _registry_version[0] += 1


def register_secrets_in(value: object) -> None:
    """Register every secret `secret_values` finds in a parameter mapping (at any depth)."""
    for _, secret, _ in secret_values(value):
        register_secret(secret)


def _env_secrets() -> set[str]:
    found: set[str] = set()
    for name, value in os.environ.items():
        if len(value) >= MIN_ENV_SECRET and is_secret_name(name):
            found |= _with_forms(value)
        elif name.lower().endswith("_proxy") and "@" in value:
            for _, secret, _ in _userinfo(value, name):
                found |= _with_forms(secret)
    return found


# [environment snapshot, registry version, values]
_base_cache: tuple[object, int, frozenset[str]] = (None, -1, frozenset())


def base_values() -> frozenset[str]:
    """Registered values plus secret environment values, recomputed only when either changed.

    The snapshot is the raw environment mapping's items (a cheap tuple); decoding and judging
    every variable again is what costs.
    """
    raw = getattr(os.environ, "_data", None)
    snapshot = tuple(raw.items()) if isinstance(raw, dict) else None
    with _registered_lock:
        version = _registry_version[0]
        global _base_cache
        if snapshot is not None and _base_cache[0] == snapshot and _base_cache[1] == version:
            return _base_cache[2]
        values = frozenset(_registered | _env_secrets())
        _base_cache = (snapshot, version, values)
        return values
