"""How secrets are masked: in free text (`redact`), in structures (`redact_obj`), in JSON
documents (`redact_json`), and in model parameters shown as labels (`public_params`).

See the package docstring for what is masked; `workbench._redact._secrets` decides what is a
secret and keeps the registry, `workbench._redact._forms` finds the encoded forms.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Mapping
from functools import lru_cache

from workbench._memo import memo
from workbench._redact._forms import mask_escaped
from workbench._redact._secrets import (
    AUTH_SCHEME,
    HEADER_PARAMS,
    MIN_REGISTERED_SECRET,
    QUERY_VALUE,
    URL_PARAMS,
    base_values,
    is_secret_name,
)

__all__ = [
    "MASK",
    "mask_query",
    "public_params",
    "redact",
    "redact_json",
    "redact_obj",
    "redactor",
]

MASK = "***"
"""What a secret is replaced with."""

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


def mask_query(url: str) -> str:
    """`url` with every query-string value replaced by `MASK` (names and the rest kept)."""
    base, sep, query = url.partition("?")
    if not sep:
        return url
    query, hash_sep, fragment = query.partition("#")
    masked = QUERY_VALUE.sub(lambda m: m.group(1) + (MASK if m.group(2) else ""), "?" + query)
    return base + masked + hash_sep + fragment


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
        values = base_values()
        more = {v for v in extra if isinstance(v, str) and len(v) >= MIN_REGISTERED_SECRET}
        self.values = _ordered(values | more if more else values)

    def text(self, text: str) -> str:
        """`text` redacted, once per text and set of secret values while the run lasts (the
        run memo's ``redacted``: a store row's columns are mostly the texts of the rows
        before it, a shared reply's raw text comes back cell after cell)."""
        if not text:
            return text
        key = (self.values, text)
        done = memo().redacted
        found = done.get(key)
        return found if found is not None else done.put(key, self._text(text))

    def text_once(self, text: str) -> str:
        """`text` redacted without the run memo: for a short text seen once (a store row's
        ids and times), where remembering it costs about what redacting it again would."""
        return self._text(text) if text else text

    def _text(self, text: str) -> str:
        cleaned = self._free_text(text)
        if cleaned != text and text.lstrip()[:1] in ("{", "["):
            structured = self._json(text)
            if structured is not None:
                return structured
        return cleaned

    def _free_text(self, text: str) -> str:
        # A substring search per value is far cheaper than one alternation of them all (the
        # regex engine tries every value at every position); only values present are replaced.
        present = tuple(v for v in self.values if v in text)
        if present:
            text = _values_pattern(present).sub(MASK, text)
        if "%" in text or "\\" in text:
            text = mask_escaped(text, self.values, MASK)
        # Patterns are tried only where a cheap substring search finds their first word:
        # scanning every position of a long traceback with case-blind regexes costs ~1 ms.
        if "://" in text and "@" in text:
            text = _URL_USERINFO.sub(lambda m: m.group(1) + MASK + "@", text)
        if "k-" in text:
            text = _PROVIDER_KEY.sub(MASK, text)
        text = _masked_at_hints(text, _AUTH_HINTS, AUTH_SCHEME, _mask_auth)
        if "=" in text or ":" in text:
            text = _masked_at_hints(text, _HINTS, _ASSIGNMENT, _mask_value)
        return text

    def _json(self, text: str) -> str | None:
        """A JSON document redacted as a structure and serialised in its own style, or None
        when `text` is not one."""
        if text.rstrip()[-1:] not in ("}", "]"):
            return None
        try:
            data = json.loads(text)
        except (ValueError, RecursionError):
            return None
        return _dumps_like(self.obj(data), text)

    def obj(self, value: object) -> object:
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, Mapping):
            out: dict[object, object] = {}
            for key, item in value.items():
                if is_secret_name(str(key)):
                    out[key] = _mask_leaves(item)
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


def _mask_leaves(value: object) -> object:
    """`value` under a secret name: every scalar in it masked, its shape (keys, lengths) kept."""
    if isinstance(value, Mapping):
        return {k: _mask_leaves(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return type(value)(_mask_leaves(v) for v in value)
    if isinstance(value, str | int | float) and not isinstance(value, bool) and value != "":
        return MASK
    return value


def _dumps_like(value: object, original: str) -> str:
    """`value` as JSON in the style of `original`: its indentation, separators and escaping."""
    first, newline, rest = original.strip().partition("\n")
    if newline:
        indent: int | None = len(rest) - len(rest.lstrip(" ")) or None
        return json.dumps(value, ensure_ascii=original.isascii(), indent=indent)
    compact = '": ' not in original and ", " not in original
    return json.dumps(value, ensure_ascii=original.isascii(),
                      separators=(",", ":") if compact else (", ", ": "))


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
                     span: Callable[[str, re.Match[str], int], tuple[int, int] | None]) -> str:
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


def redact_obj(value: object, *, secrets: Iterable[str] = ()) -> object:
    """A copy of `value` (dicts, lists, tuples, strings at any depth) with secrets masked.

    Values under secret-named keys become `MASK`; every string is passed through `redact`.
    Other values (numbers, None, objects) are returned as they are.
    """
    return _Redactor(secrets).obj(value)


def redact_json(text: str) -> str:
    """A JSON document redacted as a structure (`redact_obj`) and serialised in its own style,
    so every value under a secret name or in a secret position is masked and the result is
    valid JSON; text that is not JSON goes through `redact`."""
    redactor = _Redactor()
    return redactor._json(text) or redactor.text(text)


def redactor(secrets: Iterable[str] = ()) -> _Redactor:
    """One prepared redactor, for callers that redact many strings in a row (store rows)."""
    return _Redactor(secrets)


def public_params(params: Mapping[str, object]) -> dict[str, object]:
    """Model parameters fit for a label: secret-named entries dropped at every depth, header
    parameters (`HEADER_PARAMS`) dropped whatever their headers are called, URLs stripped of
    their user-info (``https://u:p@host`` -> ``https://host``) and the query values of provider
    URLs (`URL_PARAMS`) masked (``?key=***``)."""
    out: dict[str, object] = {}
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
