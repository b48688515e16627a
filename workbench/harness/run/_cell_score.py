"""A finished compaction measured: token counts, metrics, probes and what the summary forgot.

Pure in its inputs, so cells that produce the same summary of the same session (repeats
answered alike, render-only template parameters beyond what the summary holds, models that
agree) share one scoring: the run memo's ``scores`` (`workbench._memo`). A render-only tune of
528 points over 6 sessions scores 62 distinct summaries, not 3,168.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import Mapping, Sequence
from types import ModuleType
from typing import NamedTuple, Protocol

from workbench._memo import memo
from workbench._redact import redact
from workbench.compaction._reuse import parsed_reply
from workbench.compaction._structured import StructuredSummary
from workbench.harness.experiment._cells import Cell
from workbench.harness.experiment._variants import Variant
from workbench.harness.results._cell_result import CellResult
from workbench.harness.run._strategy_run import scored_session
from workbench.messages import Message
from workbench.sessions import Session
from workbench.strategies import StrategyResult
from workbench.tokens import GooseCounter, countable_texts

__all__ = ["ContextCounter", "count_soon", "metrics_json", "score", "session_tokens"]

METRICS_MODULE = "workbench.metrics"
ECHO = "template_echo"
"""The one metric `score` adds per cell to the shared ones (it depends on the template)."""

Metrics = dict[str, float | int | None]
"""A cell's metrics by name (`workbench.metrics.compute_metrics`), in ``metrics_json`` order."""

_METRICS_JSON = json.JSONEncoder(default=float)
"""``json.dumps(values, default=float)``, the ``metrics_json`` column, built once."""


class ContextCounter(Protocol):
    """What `session_tokens` needs of an estimator: Goose's retained-context count."""

    def count_context_tokens(self, messages: Sequence[Message]) -> int:
        """Agent-visible tokens of `messages`."""
        ...


def session_tokens(session: Session, estimator: ContextCounter) -> int:
    """``estimator.count_context_tokens(session.messages)``, counted once per session object
    (and again if its message list is replaced, or grows or shrinks): the run memo's
    ``session_tokens``. A run never edits its sessions; each run loads its own."""
    messages = session.messages

    def count() -> tuple[ContextCounter, list[Message], int]:
        if isinstance(estimator, GooseCounter) and not memo().session_tokens.has(
                session, _soon_key(estimator, messages)):
            # not counted ahead (`count_soon`): every message in one pass of the tokenizer
            estimator.count_contents([m for m in messages if m.is_agent_visible])
        return estimator, messages, estimator.count_context_tokens(messages)

    # The entry holds the estimator and the list, so the ids in its key cannot be reused.
    key = (id(estimator), id(messages), len(messages))
    tokens: int = memo().session_tokens.get(session, key, count)[2]
    return tokens


COUNT_STEP_CHARS = 32_768
"""Characters of a session's texts `count_soon` counts in one turn of the loop (about 8k
tokens, a few milliseconds at most)."""

COUNT_AFTER_SECONDS = 0.002
"""How long after a session's first call `count_soon` starts counting: the first wave's calls
leave within a fraction of a millisecond of each other, and a count started among them held
the last ones up (the wave's calls spread over 2 ms instead of 0.1 ms)."""


def count_soon(session: Session, estimator: ContextCounter) -> None:
    """Start counting the session's messages on the event loop, some `COUNT_STEP_CHARS` of
    text per turn of the loop, once per session and run; `session_tokens` then adds up counts
    already made.

    A cell calls it as its first model call goes out (`RecordStep`'s ``on_first_call``). The
    session's count, milliseconds of tokenizing for a long one, then starts
    `COUNT_AFTER_SECONDS` later and runs while the run's first calls are out and their
    summaries are rendered in the render process, a step at a time behind whatever else is
    ready, so the first calls still leave at once and a reply or render that comes back waits
    for one step's count at most. Each step counts its messages' texts in one pass of the
    tokenizer (`GooseCounter.count_contents`: a 26-message session in about 0.8 ms). Only a
    counter that remembers each message's count (a `GooseCounter`) is counted ahead. A count
    that fails is left to the cell, which meets the error where it always did."""
    if not isinstance(estimator, GooseCounter):
        return
    counter = estimator

    def schedule() -> tuple[GooseCounter, list[Message]]:
        loop = asyncio.get_running_loop()
        pending = iter([m for m in session.messages if m.is_agent_visible])  # what it counts

        def step() -> None:
            batch: list[Message] = []
            texts: list[list[str]] = []
            size = 0
            with contextlib.suppress(Exception):
                for message in pending:
                    batch.append(message)
                    texts.append(countable_texts(message))
                    size += sum(map(len, texts[-1]))
                    if size >= COUNT_STEP_CHARS:
                        break
                if batch:
                    counter.count_contents(batch, texts)
            if batch:
                loop.call_soon(step)

        loop.call_later(COUNT_AFTER_SECONDS, step)
        return counter, messages  # held, as `session_tokens` holds them: the ids stay theirs

    messages = session.messages
    memo().session_tokens.get(session, _soon_key(estimator, messages), schedule)


def _soon_key(estimator: ContextCounter, messages: list[Message]) -> tuple[object, ...]:
    """The session memo's key saying that `count_soon` started counting `messages`."""
    return ("soon", id(estimator), id(messages), len(messages))


def _metrics_module() -> ModuleType | None:
    try:
        import workbench.metrics as metrics  # a missing metrics package scores nothing
    except ModuleNotFoundError as exc:
        if exc.name != METRICS_MODULE:
            raise
        return None
    return metrics


def _parse_structured(raw: str | None) -> StructuredSummary | None:
    if not raw:
        return None
    return parsed_reply(raw).summary  # read only (metrics and the echo check read it)


def metrics_json(values: Mapping[str, float | int | None]) -> str | None:
    """The ``metrics_json`` column of a cell's metrics (None when it has none)."""
    return _METRICS_JSON.encode(values) if values else None


def _cell_metrics_json(shared: Metrics, shared_json: str, echo: float | None,
                       extra: Mapping[str, float | int | None]) -> str | None:
    """`metrics_json` of the shared metrics, the cell's `ECHO` and `extra` after them, in
    that order: the shared part's JSON, made once with the shared scoring, and the cell's
    own items after it (the same text, without encoding every shared metric per cell)."""
    if not shared or ECHO in shared or ECHO in extra or not shared.keys().isdisjoint(extra):
        return metrics_json({**shared, ECHO: echo, **extra})  # the parts' order differs
    own = _METRICS_JSON.encode({ECHO: echo, **extra})
    return f"{shared_json[:-1]}, {own[1:]}"


def score(result: CellResult, cell: Cell, session: Session, variant: Variant,
          strategy: StrategyResult, last_text: str | None, estimator: GooseCounter,
          extra: Mapping[str, float | int | None] | None = None) -> None:
    """Measure a finished compaction into `result`: columns and texts, filled as they are
    known, so a failure part way keeps what came before, as the row always did, and last its
    ``metrics_json``: the metrics, then `extra` (the ``[qa]`` metrics) after them."""
    extra = extra or {}
    text = strategy.summary_text
    summary_tokens = estimator.count_text_tokens(text)
    result.status, result.retained_tokens = "ok", strategy.retained_tokens
    result.summary_tokens, result.parse_outcome = summary_tokens, strategy.parse_outcome
    result.structured = int(bool(strategy.structured)) if cell.uses_model else None
    try:
        _score(result, session, variant, strategy, last_text, estimator, extra, summary_tokens)
    except Exception:
        if result.texts.summary is None:  # a failure part way keeps the texts, as it always did
            _keep_texts(result, redact(text), last_text)
        raise


def _score(result: CellResult, session: Session, variant: Variant, strategy: StrategyResult,
           last_text: str | None, estimator: GooseCounter,
           extra: Mapping[str, float | int | None], summary_tokens: int) -> None:
    """`score`'s texts, probes and metrics."""
    text = strategy.summary_text
    original_tokens = result.original_tokens or 0
    if "scored_messages" in strategy.detail:  # a recorded summary covers only a prefix
        session = scored_session(session, strategy)
        original_tokens = result.original_tokens = \
            estimator.count_context_tokens(session.messages)
    metrics = _metrics_module()
    if metrics is None:
        _keep_texts(result, redact(text), last_text)
        result.metrics_json = metrics_json(extra)
        return
    reply = last_text if strategy.structured else None

    def compute() -> _Scored:
        structured = _parse_structured(reply)
        with metrics.shared_probes():  # the metrics and the forgotten items run each probe once
            values = metrics.compute_metrics(session, text, structured,
                                             original_tokens=original_tokens,
                                             summary_tokens=summary_tokens)
            forgotten = metrics.compute_forgotten(session, text)
        return _Scored(structured, values, _METRICS_JSON.encode(values),
                       redact(json.dumps(forgotten, ensure_ascii=False, indent=1)),
                       redact(text), None if reply is None else redact(reply), {})

    scored = memo().scores.get(session, (text, reply, original_tokens, summary_tokens), compute)
    # The texts are redacted with the scoring, once per summary and run, as its forgotten
    # items are (a run's secrets are registered before its first cell).
    _keep_texts(result, scored.summary_text, last_text,
                scored.reply_text if last_text is reply else None)
    result.texts.forgotten = scored.forgotten_json
    template = variant.templates.baked().compaction
    if extra:
        echo = metrics.template_echo(scored.structured, template)
        result.metrics_json = _cell_metrics_json(scored.values, scored.values_json, echo, extra)
        return
    # Without [qa] metrics a cell's metrics_json depends only on the scoring and its template:
    # every cell of that summary and template (repeats, render-only parameters, models that
    # agree) gets the same text, made once.
    found = scored.by_template.get(template)
    if found is None:
        echo = metrics.template_echo(scored.structured, template)
        found = scored.by_template[template] = _cell_metrics_json(
            scored.values, scored.values_json, echo, extra)
    result.metrics_json = found


def _keep_texts(result: CellResult, summary: str, last_text: str | None,
                redacted_reply: str | None = None) -> None:
    """Set the cell's summary text (`summary`, redacted) and the parser's input (`last_text`,
    for the drill-down: `redacted_reply` when it is that text redacted already)."""
    result.texts.summary = summary
    if last_text is not None:
        result.texts.raw = redacted_reply if redacted_reply is not None else redact(last_text)


class _Scored(NamedTuple):
    """One scoring of a summary (the run memo's ``scores`` entry): its structured form, the
    shared metrics and their JSON, what it forgot (JSON), the summary and the reply it was
    parsed from (None when it was not), all redacted, and the cells' ``metrics_json`` per
    compaction template for cells without ``[qa]`` metrics."""

    structured: StructuredSummary | None
    values: Metrics
    values_json: str
    forgotten_json: str
    summary_text: str
    reply_text: str | None
    by_template: dict[str, str | None]
