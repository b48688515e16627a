"""Which values are secrets, for the redaction layer (`workbench._redact`): names that say they
hold one, values that sit where one goes (header parameters, a provider URL's query string),
secret-looking environment variables currently set, and values registered with
`register_secret` (with their base64 forms, at any alignment).
"""

from __future__ import annotations

import base64
import os
import re
import threading
from collections.abc import Mapping
from functools import lru_cache
from typing import Any

__all__ = ["HEADER_PARAMS", "MASK", "MAX_SECRET", "MIN_ENV_SECRET", "MIN_REGISTERED_SECRET",
           "URL_PARAMS", "base64_forms", "is_secret_name", "mask_query", "positional_secrets",
           "register_secret", "register_secrets_in"]

MASK = "***"
"""What a secret is replaced with."""
MIN_ENV_SECRET = 8
"""Shorter values of secret-looking environment variables are ignored (``1``, ``true``...)."""
MAX_SECRET = 4096
"""Longer values are not treated as secrets (certificates, JSON blobs)."""
MIN_REGISTERED_SECRET = 6
"""Shorter registered values are ignored: blanking ``abc`` everywhere would wreck the output."""
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
_QUERY_VALUE = re.compile(r"([?&;][^=&#;]*=)([^&#;]*)")
_URLSAFE = str.maketrans("+/", "-_")
_AUTH_SCHEME = re.compile(r"(?i)\b(Bearer|Basic|Token)(\s+)[A-Za-z0-9._~+/=\-]{6,}")
_registered: set[str] = set()
_registered_lock = threading.Lock()


def _norm(name: str) -> str:
    return name.strip().lower().replace("-", "_")


@lru_cache(maxsize=4096)
def is_secret_name(name: str) -> bool:
    """True when a parameter, header, JSON key or environment variable name says "secret".

    Examples: ``api_key``, ``Authorization``, ``x-api-key``, ``OPENAI_API_KEY``, ``HF_TOKEN``,
    ``db_password``, ``client_secret``; not ``max_tokens``, ``key`` or ``cache_key``.
    """
    norm = _norm(str(name))
    if norm in _BARE_NOT_SECRET:
        return False
    return bool(_SECRET_NAME.match(norm))


def register_secret(value: Any) -> None:
    """Remember `value` as a secret for the rest of the process (ignored when too short).

    A ``Bearer <token>`` value registers the token too.
    """
    if not isinstance(value, str):
        return
    text = value.strip()
    candidates = {text}
    scheme = _AUTH_SCHEME.match(text)
    if scheme:
        candidates.add(text[scheme.end(2):])
    for item in list(candidates):
        if MIN_REGISTERED_SECRET <= len(item) <= MAX_SECRET:
            candidates |= base64_forms(item)
    with _registered_lock:
        for item in candidates:
            if MIN_REGISTERED_SECRET <= len(item) <= MAX_SECRET and item not in _registered:
                _registered.add(item)
                _registry_version[0] += 1


def base64_forms(value: str) -> set[str]:
    """The base64 texts that betray `value` wherever it sits inside encoded data.

    Base64 turns 3 bytes into 4 characters, so a value encoded after 0, 1 or 2 other bytes
    gives three different texts; the characters that depend on the value's bytes alone are
    the same wherever it sits with that alignment. Returned: those cores for the three
    alignments, in the standard and the URL-safe alphabet (the value encoded alone starts with
    the first core, so it is caught too). Cores shorter than `MIN_REGISTERED_SECRET` are left
    out.
    """
    raw = value.encode("utf-8")
    forms: set[str] = set()
    for shift in range(3):
        encoded = base64.b64encode(b"\0" * shift + raw).decode("ascii")
        # Character i covers bits [6i, 6i+6): keep those inside the value's bits only.
        start = -(-8 * shift // 6)
        end = 8 * (shift + len(raw)) // 6
        forms.add(encoded[start:end])
    forms |= {f.translate(_URLSAFE) for f in forms}
    return {f for f in forms if len(f) >= MIN_REGISTERED_SECRET}


def mask_query(url: str) -> str:
    """`url` with every query-string value replaced by `MASK` (names and the rest kept)."""
    base, sep, query = url.partition("?")
    if not sep:
        return url
    query, hash_sep, fragment = query.partition("#")
    masked = _QUERY_VALUE.sub(lambda m: m.group(1) + (MASK if m.group(2) else ""), "?" + query)
    return base + masked + hash_sep + fragment


def _query_values(url: str) -> list[str]:
    from urllib.parse import unquote_plus

    _, sep, query = url.partition("?")
    if not sep:
        return []
    values = [m.group(2) for m in _QUERY_VALUE.finditer("?" + query.partition("#")[0])]
    return [v for raw in values if raw for v in {raw, unquote_plus(raw)}]


def positional_secrets(params: Mapping[str, Any]) -> list[str]:
    """The values of `params` that are secrets by position: every header value (under
    `HEADER_PARAMS`) and every query-string value of a URL (under `URL_PARAMS`), at the top
    level of a model's parameters (the shape litellm takes them in)."""
    found: list[str] = []
    for key, item in params.items():
        if key in HEADER_PARAMS and isinstance(item, Mapping):
            found += [str(v) for v in item.values()
                      if isinstance(v, str | int) and not isinstance(v, bool) and v != ""]
        elif key in URL_PARAMS and isinstance(item, str):
            found += _query_values(item)
    return found


def register_secrets_in(value: Any) -> None:
    """Register every secret found in a parameter mapping (at any depth).

    Values under secret names are registered, every value that is a secret by position
    (`positional_secrets`: header values, URL query values), and the user-info parts (user,
    password and ``user:password``) of URLs anywhere in it.
    """
    if isinstance(value, Mapping):
        for secret in positional_secrets(value):
            register_secret(secret)
        for key, item in value.items():
            if is_secret_name(str(key)) and isinstance(item, str | int):
                register_secret(str(item))
            else:
                register_secrets_in(item)
    elif isinstance(value, list | tuple | set):
        for item in value:
            register_secrets_in(item)
    elif isinstance(value, str):
        for match in re.finditer(r"(?i)\b[a-z][a-z0-9+.\-]*://([^/\s@?#]+)@", value):
            userinfo = match.group(1)
            register_secret(userinfo)
            for part in userinfo.split(":", 1):
                register_secret(part)


def _env_secrets() -> tuple[str, ...]:
    found = []
    for name, value in os.environ.items():
        if MIN_ENV_SECRET <= len(value) <= MAX_SECRET and is_secret_name(name):
            found.append(value)
            found += base64_forms(value)
    return tuple(found)


_base_cache: list[Any] = [None, -1, frozenset()]  # [environment snapshot, registry version, values]
_registry_version = [0]


def _base_values() -> frozenset[str]:
    """Registered values plus secret environment values, recomputed only when either changed.

    The snapshot is the raw environment mapping's items (a cheap tuple); decoding and judging
    every variable again is what costs.
    """
    raw = getattr(os.environ, "_data", None)
    snapshot = tuple(raw.items()) if isinstance(raw, dict) else None
    with _registered_lock:
        version = _registry_version[0]
        if snapshot is not None and _base_cache[0] == snapshot and _base_cache[1] == version:
            return _base_cache[2]  # type: ignore[no-any-return]
        values = frozenset(_registered | set(_env_secrets()))
        _base_cache[:] = [snapshot, version, values]
        return values
