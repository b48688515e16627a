"""Errors probe: the error messages of failing tool calls, and whether the summary quotes them.

An error comes from a tool response that failed (``is_error`` set, or an error result) or whose
text looks like a failure: a Python traceback, or a line with ``Error:``, ``error:``, ``FAILED``
or ``Exception:``. From each such response the probe keeps the most specific line:

1. the exception line at the end of a traceback (``ValueError: invalid literal ...``);
2. else the first line naming an exception (``SomethingError: ...``/``...Exception: ...``);
3. else the first line with ``error:``/``Error:``/``ERROR``, then the first ``FAILED`` line;
4. else, for a flagged failure, its first non-empty line.

Lines are whitespace-normalised and cut to `MAX_ERROR_CHARS`. An error is *recalled* when the
summary quotes it verbatim (a substring match after both sides are whitespace-normalised). The
looser ``errors_token_overlap`` is the mean, over errors, of the fraction of an error's words that
appear anywhere in the summary.
"""

from __future__ import annotations

import re

from workbench.harness.metrics._common import ProbeResult, normalize_ws, word_set, words
from workbench.harness.metrics._registry import MetricInput, metric
from workbench.messages import Message, ToolResponse

MAX_ERROR_CHARS = 200
"""Longer error lines are cut here: the probe then asks for the first 200 characters verbatim."""

_TRACEBACK = "Traceback (most recent call last):"
_EXC_NAME = r"(?:[A-Za-z_][\w.]*\.)?[A-Z]\w*(?:Error|Exception|Exit|Interrupt|Failure)\b"
# At the end of a traceback the bare name is enough (``KeyboardInterrupt``); elsewhere the name
# must lead the line and be followed by a colon, so code listings (``ValueError,``) do not count.
_TB_EXC_LINE = re.compile(r"^" + _EXC_NAME)
_EXC_LINE = re.compile(r"^\s*" + _EXC_NAME + r":")
_ERROR_LINE = re.compile(r"(?:\berror:|\bError:|\bERROR\b|\bException:)")
_FAILED_LINE = re.compile(r"\bFAILED\b")


def _flagged_text(resp: ToolResponse) -> str:
    if not resp.tool_result.ok:
        return resp.tool_result.error or ""
    return resp.text()


def error_line(text: str, flagged: bool = False) -> str | None:
    """The most specific error line of a tool output, or None when it holds no error.

    Args:
        text: The tool output.
        flagged: The response was marked as failed (then any non-empty text yields a line).

    Returns:
        The chosen line, whitespace-normalised and cut to `MAX_ERROR_CHARS`, or None.
    """
    lines = [ln for ln in text.splitlines() if ln.strip()]
    chosen: str | None = None
    if _TRACEBACK in text:
        after = text.rsplit(_TRACEBACK, 1)[1].splitlines()
        exc = [ln for ln in after if _TB_EXC_LINE.match(ln)]
        if exc:
            chosen = exc[-1]
    if chosen is None:
        chosen = next((ln for ln in lines if _EXC_LINE.match(ln)), None)
    if chosen is None:
        chosen = next((ln for ln in lines if _ERROR_LINE.search(ln)), None)
    if chosen is None:
        chosen = next((ln for ln in lines if _FAILED_LINE.search(ln)), None)
    if chosen is None and flagged and lines:
        chosen = lines[0]
    if chosen is None:
        return None
    return normalize_ws(chosen)[:MAX_ERROR_CHARS]


def session_errors(messages: list[Message]) -> list[str]:
    """Distinct error lines of the session's failing tool responses, in order."""
    seen: dict[str, None] = {}
    for msg in messages:
        for resp in msg.tool_responses():
            line = error_line(_flagged_text(resp), flagged=resp.tool_result.is_error)
            if line:
                seen.setdefault(line, None)
    return list(seen)


def token_overlap(error: str, summary_words: set[str]) -> float:
    """Fraction of the error's distinct words (3+ characters) found in `summary_words`."""
    toks = {w for w in words(error) if len(w) >= 3}
    if not toks:
        return 0.0
    return sum(1 for w in toks if w in summary_words) / len(toks)


def errors_probe(messages: list[Message], summary_text: str) -> ProbeResult:
    """Which tool errors the summary quotes verbatim.

    Args:
        messages: The session's messages.
        summary_text: The summary text.

    Returns:
        A `ProbeResult`; ``extra`` holds ``errors_token_overlap`` (None when there were no errors).
    """
    errors = session_errors(messages)
    summary = normalize_ws(summary_text)
    summary_words = word_set(summary_text)
    missing = [e for e in errors if e not in summary]
    overlap = (sum(token_overlap(e, summary_words) for e in errors) / len(errors)
               if errors else None)
    return ProbeResult(total=len(errors), recalled=len(errors) - len(missing), missing=missing,
                       extra={"errors_token_overlap": overlap})


@metric("errors")
def errors_metrics(inp: MetricInput) -> dict[str, float | int | None]:
    """``errors_total``, ``errors_recalled``, ``errors_recall``, ``errors_token_overlap``."""
    return errors_probe(inp.session.messages, inp.summary_text).as_metrics("errors")
