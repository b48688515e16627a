"""What became of a cell: an outcome (ok, or a compaction failure) or an infrastructure error.

A cell that ran out of context after the whole removal ladder *failed*: that is a result about
the template, the model and the window, and it belongs in the comparison. A cell whose model
could not be reached (replay cache miss, rejected key, network, retries exhausted) hit an
*error*: it says nothing about compaction, and `workbench run` exits non-zero for it.

The kind is decided by exception class (`workbench.errors`), never by message text; a
`CompactionCallFailed` is classified by the error it wraps (its ``__cause__``).
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from workbench.compaction._summarize import CompactionCallFailed
from workbench.errors import (
    AuthenticationError,
    CacheMiss,
    ConfigError,
    ContextLengthExceeded,
    ModelCallError,
    ModelTimeout,
    RateLimited,
    ReplyFormatError,
    SessionFormatError,
    TemplateError,
)
from workbench.models._errors_map import TransientModelError

OK = "ok"
FAILED = "failed"
ERROR = "error"
"""Values of the ``outcome_kind`` cell column."""

FAILURE_CLASSES: tuple[type[BaseException], ...] = (ContextLengthExceeded,)
"""Exception classes that are compaction outcomes rather than infrastructure errors."""

ERROR_CAUSES: dict[str, str] = {
    "ContextLengthExceeded": "the session is larger than the window even with every tool "
                             "response removed",
    "CacheMiss": "replay-only cache has no recording for the prompt: record it with "
                 "`workbench record SPEC` (the real model), or leave the template or session "
                 "out of the model entry's `templates` or `sessions` (one it was never recorded "
                 "with), or restore the recording file",
    "AuthenticationError": "the provider rejected or did not get an API key: set {variables} "
                           "in the environment (or pass api_key=...)",
    "RateLimited": "the provider kept answering 429 until the retry budget ran out: lower "
                   "concurrency or raise the rate limit",
    "ModelTimeout": "the provider did not answer in time after every retry",
    "TransientModelError": "network or 5xx errors from the provider outlasted the retries",
    "ReplyFormatError": "a judge or probe author answered, but not in the format asked: see "
                        "the cell's error for the reply; it is recorded, so use another "
                        "model (or clear the recording) before --retry-errors",
    "ModelCallError": "the model call failed",
    "TemplateError": "a template failed to compile or render: fix the template file",
    "ConfigError": "bad configuration (model string, parameter, missing extra or tokenizer): "
                   "see the quoted errors",
    "SessionFormatError": "a session file could not be read: fix or remove the file",
}
"""Plain-language cause per error class, for the error summary (``{variables}``: the key
variables the failed cells' errors name)."""
NAMED_ERRORS = frozenset({"SessionFormatError", "TemplateError", "ConfigError"})
"""Classes whose messages the error summary quotes (the file and line, the template, the key):
the class alone does not say what to fix."""
PROVIDER_ERRORS = frozenset({"TransientModelError", "RateLimited", "ModelTimeout",
                             "AuthenticationError", "ModelCallError"})
"""Classes whose quoted messages are cut after the host and status they name (``(host
127.0.0.1:8080, HTTP 503)``): where the call went and what came back."""
CELL_ERRORS = frozenset({"CacheMiss"})
"""Classes quoted per cell: the cell named, and the request it missed."""
MAX_QUOTED = 5
"""Distinct messages quoted per class; the rest are counted."""
QUOTED_CHARS = 240
"""Longest quoted message; a longer one is cut with an ellipsis."""
# Display only (never to decide anything): the host-and-status group the gateway's errors
# carry, and the model and prompt hash a replay-only cache miss names.
_WHERE = re.compile(r"^(.*?\((?:host [^,()]+|the provider's default host), [^()]*\))")
_MISSED = re.compile(r"for model (\S+) \(prompt sha256:([0-9a-f]+)\)")
UNKNOWN_VARIABLE = "the provider's API key variable"
# What the gateway's credential errors say to do: "...; set OPENAI_API_KEY to a valid key".
# Read for display only (to name the variable in the summary), never to decide anything.
_SET_VARIABLE = re.compile(r"\bset ([A-Z][A-Z0-9_]*) to a valid key")

# Most specific first: the first class `isinstance` matches names the error.
_KNOWN = (ContextLengthExceeded, CacheMiss, AuthenticationError, RateLimited, ModelTimeout,
          TransientModelError, ReplyFormatError, ModelCallError, TemplateError, ConfigError, SessionFormatError)


def root_error(exc: BaseException) -> BaseException:
    """The error that decided a cell's fate: a wrapper's cause when the wrapper only relays it.

    `CompactionCallFailed` relays the model's error as its ``__cause__``; a
    `CompactionContextExceeded` is itself the context failure and is kept.
    """
    seen = 0
    while isinstance(exc, CompactionCallFailed) and exc.__cause__ is not None and seen < 8:
        exc = exc.__cause__
        seen += 1
    return exc


def error_class(exc: BaseException) -> str:
    """Name of the most specific known class of `exc`'s root error (for summaries and cells).

    A `ContextLengthExceeded` subclass is reported as ``ContextLengthExceeded``; an unknown
    exception keeps its own class name.
    """
    root = root_error(exc)
    for cls in _KNOWN:
        if isinstance(root, cls):
            return cls.__name__
    return type(root).__name__


def outcome_kind(exc: BaseException | None) -> str:
    """``ok`` without an exception, ``failed`` for a compaction outcome, ``error`` otherwise."""
    if exc is None:
        return OK
    return FAILED if isinstance(root_error(exc), FAILURE_CLASSES) else ERROR


def kind_from_row(status: object, error_type: object) -> str:
    """The outcome kind of a stored cell that predates the ``outcome_kind`` column.

    Such rows only kept the outermost class name; the summarizer's context failure is the only
    wrapper that is an outcome.
    """
    if status == "ok":
        return OK
    if error_type in ("CompactionContextExceeded", "ContextLengthExceeded"):
        return FAILED
    return ERROR


def error_cause(error_class_name: str, messages: Iterable[object] = ()) -> str:
    """The plain-language cause of an error class (generic text for unknown classes).

    Args:
        error_class_name: The root error's class name.
        messages: The stored error messages of the cells; a credential error's cause names
            the variables they say to set.
    """
    cause = ERROR_CAUSES.get(error_class_name, "unexpected error; see the cell's traceback")
    if "{variables}" in cause:
        found = sorted({m.group(1) for text in messages if isinstance(text, str)
                        for m in _SET_VARIABLE.finditer(text)})
        cause = cause.format(variables=" or ".join(found) if found else UNKNOWN_VARIABLE)
    return cause


def _quoted(error_class_name: str, message: str) -> str:
    line = message.splitlines()[0]
    if error_class_name in PROVIDER_ERRORS:
        found = _WHERE.match(line)
        line = found.group(1) if found else line
    return line if len(line) <= QUOTED_CHARS else line[:QUOTED_CHARS - 3] + "..."


def missed_request(message: str) -> str:
    """What a replay-only cache miss's message says was missing: ``no recording of request
    sha256:<12 hex> to model <model>`` (the hash is the recordings' ``prompt_hash`` prefix)."""
    found = _MISSED.search(message)
    if found is None:
        return _quoted("CacheMiss", message)
    return f"no recording of request sha256:{found.group(2)} to model {found.group(1)}"


def error_details(error_class_name: str, messages: Iterable[object],
                  cells: Iterable[str] = ()) -> list[str]:
    """What the error summary quotes for a class, at most `MAX_QUOTED` lines, then how many
    more: per cell for `CELL_ERRORS` (the cell named, then the missing request); the distinct
    messages (first lines) for `NAMED_ERRORS`, and for `PROVIDER_ERRORS` up to the host and
    status they name; nothing for other classes.

    Args:
        error_class_name: The root error's class name.
        messages: The stored error messages of the class's cells.
        cells: Those cells' names (`cell_label`), in the same order.
    """
    stored = list(messages)
    texts = [m for m in stored if isinstance(m, str) and m.strip()]
    if error_class_name in CELL_ERRORS:
        distinct = [f"cell ({name}): {missed_request(text)}" if name else missed_request(text)
                    for name, text in zip(cells, stored, strict=False)
                    if isinstance(text, str) and text.strip()]
    elif error_class_name in NAMED_ERRORS | PROVIDER_ERRORS:
        distinct = list(dict.fromkeys(_quoted(error_class_name, m) for m in texts))
    else:
        return []
    shown = distinct[:MAX_QUOTED]
    if len(distinct) > MAX_QUOTED:
        shown.append(f"... and {len(distinct) - MAX_QUOTED} more")
    return shown
