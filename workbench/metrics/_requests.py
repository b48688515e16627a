"""User-requests probe: does the summary still cover what the human asked for?

A *request* is the text of a user message written by the human: role ``user``, no tool response
in it, shown to the user (not an agent-only continuation or summary) and not a per-turn context
event. Requests of fewer than `MIN_WORDS` words ("ok", "go on") are acknowledgements and skipped,
and so are requests with no content word; repeated identical requests count once.

Rule: a request is *covered* when at least `COVERAGE` (half) of its content words appear in the
summary. Content words are the distinct lowercased words of at least four characters that are not
stopwords; the summary's words are compared the same way (a dotted or dashed word also counts by
its parts, so ``config.yaml`` in the summary covers ``config``).
"""

from __future__ import annotations

from collections.abc import Sequence

from workbench._memo import memo
from workbench.messages import Message
from workbench.metrics._common import ProbeResult, content_words, normalize_ws, word_set
from workbench.metrics._registry import MetricInput, metric
from workbench.metrics._shared import probe_once

MIN_WORDS = 3
COVERAGE = 0.5
MISSING_CHARS = 120
"""Forgotten requests are listed cut to this many characters."""


def is_human_request(msg: Message) -> bool:
    """True for a user message the human wrote (see the module docstring)."""
    return (msg.role == "user" and not msg.has_tool_response() and msg.is_user_visible
            and not msg.is_turn_context)


def user_requests(messages: list[Message]) -> list[str]:
    """The human requests of a session (whitespace-normalised, deduplicated, in order; worked
    out once per list of message objects while they are unchanged: the run memo's
    ``session_facts``)."""
    return list(memo().session_facts.get(messages, "requests", _user_requests, messages))


def _user_requests(messages: list[Message]) -> tuple[str, ...]:
    seen: dict[str, None] = {}
    requests = memo().human_request
    for msg in messages:
        text = requests.get(msg, None, _request_text, msg)
        if text is not None:
            seen.setdefault(text, None)
    return tuple(seen)


def _request_text(msg: Message) -> str | None:
    if not is_human_request(msg):
        return None
    text = normalize_ws(msg.concat_text())
    return text if len(text.split()) >= MIN_WORDS and content_words(text) else None


def request_coverage(request: str, summary_words: set[str]) -> float:
    """Fraction of the request's content words present in `summary_words` (0.0 when it has none)."""
    return _coverage(content_words(request), summary_words)


def _coverage(cw: Sequence[str], summary_words: set[str]) -> float:
    if not cw:
        return 0.0
    return sum(1 for w in cw if w in summary_words) / len(cw)


def _probe_items(messages: list[Message]) -> tuple[tuple[str, tuple[str, ...]], ...]:
    """Per request of the session: the request and its content words."""
    return tuple((r, tuple(content_words(r))) for r in user_requests(messages))


@probe_once
def requests_probe(messages: list[Message], summary_text: str) -> ProbeResult:
    """Which human requests the summary covers.

    Args:
        messages: The session's messages.
        summary_text: The summary text.

    Returns:
        A `ProbeResult`; ``missing`` holds the uncovered requests, cut to `MISSING_CHARS`.
    """
    requests = memo().session_facts.get(messages, "requests probe", _probe_items, messages)
    summary_words = word_set(summary_text)
    missing = [r for r, cw in requests if _coverage(cw, summary_words) < COVERAGE]
    return ProbeResult(total=len(requests), recalled=len(requests) - len(missing),
                       missing=[m[:MISSING_CHARS] for m in missing])


@metric("requests")
def requests_metrics(inp: MetricInput) -> dict[str, float | int | None]:
    """``requests_total``, ``requests_recalled``, ``requests_recall``."""
    return requests_probe(inp.session.messages, inp.summary_text).as_metrics("requests")
