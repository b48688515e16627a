"""One redaction layer: every string the workbench writes (store rows, spec copy, labels, logs,
reports, cache rows) passes through `redact` or `redact_obj` first.

What is blanked out (replaced by `MASK`):

- values of parameters, headers and JSON keys whose *name* says they hold a secret
  (``api_key``, ``Authorization``, ``x-api-key``, ``token``, ``password``, ``*_secret``...);
- by *position*, whatever the name: every value of a header parameter (``extra_headers``,
  ``headers``) and every query-string value of a provider URL (``api_base``, ``base_url``), as
  Google-style endpoints take ``?key=...`` and proxies take ``X-Custom-Auth``;
- URL user-info: ``https://user:pass@host`` becomes ``https://***@host``;
- ``Bearer``/``Basic`` credentials and ``sk-...``-shaped provider keys in free text;
- the exact values of secret-looking environment variables currently set (``*_API_KEY``,
  ``*_TOKEN``, ``*_SECRET``, ``*_PASSWORD``, ``*_KEY``), and values registered with
  `register_secret` (the gateway registers every ``api_key``, header value and query value it
  is given), so a key echoed back by a provider inside an error body is caught wherever it
  lands; their base64 forms too, at any alignment, so a proxy that echoes a header inside a
  base64 blob (a Basic credential, a debug dump) is caught as well.

Why exact values as well as patterns: a proxy that echoes a token in a 401 body puts it in a
chained traceback with no ``api_key=`` in front of it; only the value itself can find it there.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterable, Mapping
from functools import lru_cache
from typing import Any

from workbench._secrets import (
    _AUTH_SCHEME,
    HEADER_PARAMS,
    MASK,
    MAX_SECRET,
    MIN_ENV_SECRET,
    MIN_REGISTERED_SECRET,
    URL_PARAMS,
    _base_values,
    base64_forms,
    is_secret_name,
    mask_query,
    positional_secrets,
    register_secret,
    register_secrets_in,
)

__all__ = ["HEADER_PARAMS", "MASK", "MAX_SECRET", "MIN_ENV_SECRET", "MIN_REGISTERED_SECRET",
           "RedactingFilter", "URL_PARAMS", "base64_forms", "install_log_redaction",
           "is_secret_name", "mask_query", "positional_secrets", "public_params", "redact",
           "redact_obj", "register_secret", "register_secrets_in"]


_URL_USERINFO = re.compile(r"(?i)\b([a-z][a-z0-9+.\-]*://)[^/\s@?#\"'<>]+@")
_PROVIDER_KEY = re.compile(r"\b(?:sk|rk|pk)-[A-Za-z0-9_\-]{16,}")
# name = value, name: value, "name": "value", name='value' (also URL query parameters). The
# pattern starts at the last word of a secret name (every secret word ends in one of these
# tails); the rest of the name is read backwards and judged by `is_secret_name`, which keeps
# the scan fast and lets no other assignment swallow a secret one.
_ASSIGNMENT = re.compile(
    r"(?i)(?:key|token|secret|passw(?:or)?d|authorization|cookie|credentials?|bearer)"
    r"(?P<q1>[\"']?)(?P<sep>\s*[:=]\s*)(?P<q2>[\"']?)(?P<value>[^\"'\s,;&}\])]+)")
_NAME_CHAR = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-")
_HINTS = ("key", "token", "secret", "passw", "authorization", "cookie", "credential", "bearer")


@lru_cache(maxsize=64)
def _ordered(values: frozenset[str]) -> tuple[str, ...]:
    # Longest first, so a key that contains another secret is masked whole.
    return tuple(sorted(values, key=len, reverse=True))


@lru_cache(maxsize=256)
def _values_pattern(values: tuple[str, ...]) -> re.Pattern[str]:
    return re.compile("|".join(re.escape(v) for v in values))


class _Redactor:
    """The patterns for one pass; built once per `redact`/`redact_obj` call."""

    def __init__(self, extra: Iterable[str] = ()) -> None:
        values = _base_values()
        more = {v for v in extra if isinstance(v, str) and len(v) >= MIN_REGISTERED_SECRET}
        self.values = _ordered(values | more if more else values)

    def text(self, text: str) -> str:
        if not text:
            return text
        # A substring search per value is far cheaper than one alternation of them all (the
        # regex engine tries every value at every position); only values present are replaced.
        present = tuple(v for v in self.values if v in text)
        if present:
            text = _values_pattern(present).sub(MASK, text)
        # Patterns are tried only where a cheap substring search finds their first word:
        # scanning every position of a long traceback with case-blind regexes costs ~1 ms.
        if "://" in text and "@" in text:
            text = _URL_USERINFO.sub(lambda m: m.group(1) + MASK + "@", text)
        if "k-" in text:
            text = _PROVIDER_KEY.sub(MASK, text)
        text = _masked_at_hints(text, _AUTH_HINTS, _AUTH_SCHEME, _mask_auth)
        if "=" in text or ":" in text:
            text = _masked_at_hints(text, _HINTS, _ASSIGNMENT, _mask_value)
        return text

    def obj(self, value: Any) -> Any:
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, Mapping):
            out: dict[Any, Any] = {}
            for key, item in value.items():
                if is_secret_name(str(key)) and isinstance(item, str | int) and item != "":
                    out[key] = MASK
                elif key in HEADER_PARAMS and isinstance(item, Mapping):
                    out[key] = {k: MASK if v not in ("", None) else v for k, v in item.items()}
                elif key in URL_PARAMS and isinstance(item, str):
                    out[key] = mask_query(self.text(item))
                else:
                    out[key] = self.obj(item)
            return out
        if isinstance(value, list):
            return [self.obj(item) for item in value]
        if isinstance(value, tuple):
            return tuple(self.obj(item) for item in value)
        return value


# Values that are placeholders, not secrets ("pass api_key=..." in a hint, "token: None").
_PLACEHOLDER = re.compile(r"^(?:\.+|\*+|<[^>]*>|none|null|true|false|bearer|basic|\{\}|\$\w+)$",
                          re.IGNORECASE)


_AUTH_HINTS = ("bearer", "basic", "token")


def _mask_auth(text: str, match: re.Match[str], done: int) -> tuple[int, int] | None:
    """The span to mask for an auth-scheme match (its credential), or None."""
    start = match.start()
    if start > 0 and (text[start - 1].isalnum() or text[start - 1] == "_"):
        return None  # not at a word start
    return match.end(2), match.end()


def _mask_value(text: str, match: re.Match[str], done: int) -> tuple[int, int] | None:
    """The span to mask for an assignment whose full name is a secret name, or None."""
    start = match.start()
    while start > done and text[start - 1] in _NAME_CHAR:
        start -= 1
    name = text[start:match.start("q1")]
    if not is_secret_name(name) or _PLACEHOLDER.match(match["value"]):
        return None
    return match.start("value"), match.end()


def _masked_at_hints(text: str, hints: tuple[str, ...], pattern: re.Pattern[str],
                     span: Any) -> str:
    """`text` with `span(text, match, done)` masked for each `pattern` match that starts where
    one of `hints` occurs (case-blind)."""
    low = text.lower()
    if len(low) != len(text):  # a few non-ASCII letters change length when lowered
        starts = sorted({m.start() for m in pattern.finditer(text)})
    else:
        found: set[int] = set()
        for hint in hints:
            at = low.find(hint)
            while at != -1:
                found.add(at)
                at = low.find(hint, at + 1)
        if not found:
            return text
        starts = sorted(found)
    parts: list[str] = []
    done = 0
    for at in starts:
        if at < done:
            continue
        match = pattern.match(text, at)
        if match is None:
            continue
        cut = span(text, match, done)
        if cut is None:
            continue
        parts += [text[done:cut[0]], MASK]
        done = cut[1]
    if not parts:
        return text
    parts.append(text[done:])
    return "".join(parts)


def redact(text: str, *, secrets: Iterable[str] = ()) -> str:
    """`text` with every secret replaced by `MASK` (see the module docstring for what counts).

    Args:
        text: Any text about to be written (a traceback, a TOML file, a CSV cell...).
        secrets: Extra exact values to blank out on this call only.
    """
    if not isinstance(text, str):
        return text
    return _Redactor(secrets).text(text)


def redact_obj(value: Any, *, secrets: Iterable[str] = ()) -> Any:
    """A copy of `value` (dicts, lists, tuples, strings at any depth) with secrets masked.

    Values under secret-named keys become `MASK`; every string is passed through `redact`.
    Other values (numbers, None, objects) are returned as they are.
    """
    return _Redactor(secrets).obj(value)


def redactor(secrets: Iterable[str] = ()) -> _Redactor:
    """One prepared redactor, for callers that redact many strings in a row (store rows)."""
    return _Redactor(secrets)


def public_params(params: Mapping[str, Any]) -> dict[str, Any]:
    """Model parameters fit for a label: secret-named entries dropped at every depth, header
    parameters (`HEADER_PARAMS`) dropped whatever their headers are called, URLs stripped of
    their user-info (``https://u:p@host`` -> ``https://host``) and the query values of provider
    URLs (`URL_PARAMS`) masked (``?key=***``)."""
    out: dict[str, Any] = {}
    for key, value in params.items():
        if is_secret_name(str(key)) or key in HEADER_PARAMS:
            continue
        if key in URL_PARAMS and isinstance(value, str):
            value = mask_query(value)
        if isinstance(value, Mapping):
            inner = public_params(value)
            if inner:
                out[key] = inner
        elif isinstance(value, str):
            out[key] = redact(_URL_USERINFO.sub(lambda m: m.group(1), value))
        else:
            out[key] = value
    return out


class RedactingFilter(logging.Filter):
    """A logging filter that redacts each record's message (arguments merged in first)."""

    def filter(self, record: logging.LogRecord) -> bool:
        try:
            message = record.getMessage()
        except Exception:  # noqa: BLE001 - a broken format string is logging's own problem
            return True
        cleaned = redact(message)
        if cleaned != message or record.args:
            record.msg, record.args = cleaned, None
        if record.exc_info and record.exc_info[1] is not None and not record.exc_text:
            record.exc_text = redact(logging.Formatter().formatException(record.exc_info))
        elif record.exc_text:
            record.exc_text = redact(record.exc_text)
        return True


_FILTER = RedactingFilter()


def install_log_redaction() -> int:
    """Add the redacting filter to every handler of every logger known now (idempotent).

    Handler filters run for records of child loggers too (logger filters do not), so this
    covers the workbench's, litellm's and the root logger's output.

    Returns:
        How many handlers got the filter by this call.
    """
    loggers: list[logging.Logger] = [logging.getLogger()]
    loggers += [lg for lg in logging.root.manager.loggerDict.values()
                if isinstance(lg, logging.Logger)]
    handlers = [h for logger in loggers for h in logger.handlers]
    if logging.lastResort is not None:  # prints WARNING+ when no handler is configured
        handlers.append(logging.lastResort)
    added = 0
    for handler in handlers:
        if _FILTER not in handler.filters:
            handler.addFilter(_FILTER)
            added += 1
    return added
