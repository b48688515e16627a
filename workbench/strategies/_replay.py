"""Whole-session replay: walk a recorded session turn by turn, compacting when the policy fires.

Every recorded assistant message is one *turn*: the agent was called with the context it had
then (the prompt) and answered with that message. The replay rebuilds that context under a
strategy: before each turn, when the prompt reaches the trigger, the strategy compacts it and
the session continues from the compacted context (later messages are appended to it as they
were recorded). The trigger is ``threshold x window`` tokens; with ``threshold = None`` each
strategy compacts at its own trigger (`Strategy.trigger_tokens`: a policy's published one),
and a strategy without one at Goose's 0.8. When a round changed the context but left it over
the window, the agent's request would be refused and it compacts again: the strategy runs
again before the same turn, up to ``rounds_per_turn`` rounds (one by default, so the prompt
is then sent over the window and counted in ``overflow_turns``): the loops users report.

What is measured, per turn (`TurnRow`) and in total (`ReplayResult`):

- billed input = every turn's prompt tokens plus every compaction call's input tokens; billed
  output = every recorded reply's tokens plus every compaction call's output tokens;
- prompt-cache reuse: the tokens of the prompt's prefix shared with the previous turn's prompt
  (a provider's prefix cache could serve them); a *cache break* is a turn whose prompt does not
  extend the previous prompt (compaction rewrote something in it);
- compactions (rounds that changed the context; a round that changed nothing is kept as
  ``applied = False``: its calls were billed all the same), peak context, turns over the window;
- after each compaction round (`workbench.strategies._replay_probes`), fact survival: the
  harness probes (files, errors, user requests, planted facts) scored on the compacted context
  against the session prefix seen so far, the replaced values it still holds, whether the last
  request survived, and finished tasks its summary lists as pending; the totals count only
  rounds whose compacted context fits the window (a context the agent could not have been sent
  keeps nothing); the failure detectors and the survival curve are read from the rounds
  (`workbench.strategies._detectors`);
- feasibility: a replay with a turn whose prompt exceeds the window (``overflow_turns``) could
  not have run that way, so its billed tokens are not a cost to compare.

Token counting is incremental: a message is counted once when it enters the context (Goose's
per-message figure, ``count_chat_tokens("", [m])``) and a compaction recounts only the messages
it created, so the replay's own cost grows linearly with the session.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Literal, Required, TypedDict, Unpack

from workbench._sync import run_sync
from workbench.compaction import CompactionModel, Templates
from workbench.messages import Message
from workbench.strategies._base import CompactionRequest, Strategy, render_context
from workbench.strategies._registry import get_strategy
from workbench.strategies._replay_probes import probe_round
from workbench.strategies._replay_result import (
    DEFAULT_TRIGGER_SHARE,
    CompactionRound,
    ReplayResult,
    TurnRow,
)
from workbench.tokens import TokenEstimator, default_estimator

if TYPE_CHECKING:
    from workbench.sessions import Session

__all__ = ["CompactionRound", "ReplayResult", "TurnRow", "replay_session", "replay_session_async"]

ProbeMode = Literal["facts", "all", "none"]
PROBE_MODES: tuple[str, ...] = ("facts", "all", "none")
MAX_ROUNDS_PER_TURN = 10
"""The most rounds a replay may run before one turn."""


class ReplayOptions(TypedDict, total=False):
    """The keyword arguments `replay_session` passes on to `replay_session_async`."""

    window: Required[int]
    threshold: float | None
    model: CompactionModel | None
    settings: dict[str, object] | None
    estimator: TokenEstimator | None
    templates: Templates | None
    options: dict[str, object] | None
    probes: ProbeMode
    label: str | None
    rounds_per_turn: int


class _Context:
    """The live context with per-message token counts and a running total."""

    def __init__(self, estimator: TokenEstimator) -> None:
        self.estimator = estimator
        self.messages: list[Message] = []
        self.counts: list[int] = []
        self.total = 0
        self._texts: dict[int, tuple[Message, str]] = {}

    def text(self) -> str:
        """The agent-visible text of the context; each message rendered once."""
        parts = []
        for m in self.messages:
            hit = self._texts.get(id(m))
            if hit is None or hit[0] is not m:
                hit = (m, render_context([m]))
                self._texts[id(m)] = hit
            if hit[1]:
                parts.append(hit[1])
        return "\n".join(parts)

    def count(self, message: Message) -> int:
        return int(self.estimator.count_chat_tokens("", [message]))

    def append(self, message: Message, tokens: int | None = None) -> int:
        tokens = self.count(message) if tokens is None else tokens
        self.messages.append(message)
        self.counts.append(tokens)
        self.total += tokens
        return tokens

    def replace_all(self, messages: Sequence[Message]) -> int:
        """Swap in a compacted context; returns how many leading messages are unchanged.

        Messages the strategy kept (the same objects) keep their counts; only new ones are
        counted. The unchanged prefix compares messages by value: an equal copy would be sent
        as the same bytes.
        """
        known = {id(m): c for m, c in zip(self.messages, self.counts, strict=True)}
        shared = 0
        for old, new in zip(self.messages, messages, strict=False):
            if old is not new and old != new:  # an equal copy still hits a prefix cache
                break
            shared += 1
        self.messages = list(messages)
        self.counts = [known[id(m)] if id(m) in known else self.count(m) for m in self.messages]
        self.total = sum(self.counts)
        return shared


def _usage_tokens(usages: Sequence[object]) -> tuple[int, int]:
    return (sum(getattr(u, "input_tokens", None) or 0 for u in usages),
            sum(getattr(u, "output_tokens", None) or 0 for u in usages))


def _recorded_summaries(session: Session) -> set[str]:
    meta = getattr(session, "meta", None) or {}
    return {str(s.get("text")) for s in meta.get("reference_summaries") or [] if s.get("text")}


def trigger_for(strategy: Strategy, window: int, threshold: float | None) -> int:
    """The prompt size from which `strategy` compacts: ``int(threshold x window)``, or with no
    threshold the strategy's own trigger (`DEFAULT_TRIGGER_SHARE` of the window without one)."""
    if threshold is not None:
        return int(threshold * window)
    own = strategy.trigger_tokens(window)
    return int(DEFAULT_TRIGGER_SHARE * window) if own is None else int(own)


async def replay_session_async(session: Session, strategy: Strategy | str, *, window: int,
                               threshold: float | None = 0.8,
                               model: CompactionModel | None = None,
                               settings: dict[str, object] | None = None,
                               estimator: TokenEstimator | None = None,
                               templates: Templates | None = None,
                               options: dict[str, object] | None = None,
                               probes: ProbeMode = "facts", label: str | None = None,
                               rounds_per_turn: int = 1) -> ReplayResult:
    """Replay `session` under `strategy` (see the module docstring for what is measured).

    Args:
        session: A `Session` (its messages are walked as recorded; summaries the recording
            itself carries are skipped, so only the replayed strategy compacts).
        strategy: A `Strategy` or a registered name (built with `settings`).
        window: The agent's context window in tokens.
        threshold: Compact before a turn whose prompt reaches ``int(threshold x window)``;
            None: at the strategy's own trigger (`trigger_for`).
        model: The summarizer for strategies that call one.
        settings: Settings when `strategy` is a name.
        estimator: `TokenEstimator` (default: tiktoken o200k).
        templates: Goose templates for the ``goose`` strategy (default: the built-ins).
        options: ``summarize`` options for the ``goose`` strategy.
        probes: What to score after every compaction round: ``"facts"`` (planted facts still
            in the context, replaced values, the last request, finished tasks listed as
            pending: cheap), ``"all"`` (also every harness probe, ``probe_recall``: files,
            errors, user requests; it rescans the prefix each round) or ``"none"``.
        label: The strategy's name in the result (default: its registry name).
        rounds_per_turn: The most rounds run before one turn: after a round that changed the
            context but left it over the window, the strategy runs again (1: never again).

    Returns:
        The `ReplayResult`.

    Raises:
        ValueError: `window` is not positive, `threshold` not in (0, 1], or `rounds_per_turn`
            not in 1..`MAX_ROUNDS_PER_TURN`.
    """
    if window <= 0:
        raise ValueError(f"window must be a positive token count, not {window}")
    if threshold is not None and not 0 < threshold <= 1:
        raise ValueError(f"threshold must be in (0, 1], not {threshold}")
    if probes not in PROBE_MODES:
        raise ValueError(f"probes must be one of {', '.join(PROBE_MODES)}, not {probes!r}")
    if not 1 <= rounds_per_turn <= MAX_ROUNDS_PER_TURN:
        raise ValueError(f"rounds_per_turn must be from 1 to {MAX_ROUNDS_PER_TURN}, "
                         f"not {rounds_per_turn}")
    if isinstance(strategy, str):
        strategy = get_strategy(strategy, settings)
    if estimator is None:
        estimator = default_estimator()
    if templates is None:
        templates = Templates.default()
    trigger = trigger_for(strategy, window, threshold)
    result = ReplayResult(session_id=str(session.id), strategy=label or strategy.name,
                          window=window, threshold=threshold, trigger=trigger,
                          model=str(getattr(model, "model", "") or "") if strategy.uses_model
                          else "")
    run = _Run(strategy, session, model, window, estimator, templates, options, probes, trigger)
    skip = _recorded_summaries(session)
    ctx = _Context(estimator)
    # The previous turn's prompt: its message count and tokens (a prefix of ctx until compaction).
    previous_len = previous_total = 0
    for index, message in enumerate(session.messages):
        if not message.is_agent_visible or (skip and message.concat_text() in skip):
            continue
        if message.role != "assistant":
            ctx.append(message)
            continue
        shared = previous_len
        ran: list[CompactionRound] = []
        # The first round fires at the trigger; another runs before the same turn only while
        # the last one changed the context and left it over the window (the request would be
        # refused): a round that changed nothing would change nothing again.
        while (strategy.compacts and len(ran) < rounds_per_turn and len(ctx.messages) >= 2
               and ctx.total >= (window + 1 if ran else trigger)
               and (not ran or ran[-1].applied)):
            rnd, kept = await run.compact(ctx, index, len(result.turns), len(result.rounds) + 1)
            result.rounds.append(rnd)
            ran.append(rnd)
            shared = min(shared, kept)
        broken = shared < previous_len
        row = TurnRow(turn=len(result.turns), message_index=index, prompt_tokens=ctx.total,
                      output_tokens=0,
                      cached_tokens=sum(ctx.counts[:shared]) if broken else previous_total,
                      cache_break=broken)
        if ran:
            row.compaction_round = ran[-1].round
            row.compaction_input_tokens = sum(r.input_tokens for r in ran)
            row.compaction_output_tokens = sum(r.output_tokens for r in ran)
        previous_len, previous_total = len(ctx.messages), ctx.total
        row.output_tokens = ctx.append(message)
        result.turns.append(row)
    return result


class _Run:
    """What every round of one replay shares: the strategy, the session and the call setup."""

    def __init__(self, strategy: Strategy, session: Session, model: CompactionModel | None,
                 window: int, estimator: TokenEstimator, templates: Templates,
                 options: dict[str, object] | None, probes: str,
                 trigger: int) -> None:
        self.strategy, self.session, self.model = strategy, session, model
        self.window, self.estimator, self.templates = window, estimator, templates
        self.options, self.probes, self.trigger = dict(options or {}), probes, trigger

    async def compact(self, ctx: _Context, index: int, turn: int,
                      number: int) -> tuple[CompactionRound, int]:
        """One round on `ctx` (replaced in place when the strategy changed it); returns the
        round and how many leading messages of the context it left unchanged."""
        before = ctx.total
        request = CompactionRequest(messages=list(ctx.messages), model=self.model,
                                    window=self.window, estimator=self.estimator,
                                    templates=self.templates, options=dict(self.options),
                                    manual_compact=False, session=self.session, score=False)
        try:
            out = await self.strategy.compact(request)
        except Exception as exc:  # a failed round is recorded; the session goes on uncompacted
            usages = list(getattr(exc, "billed_usage", None) or [])
            tin, tout = _usage_tokens(usages)
            return CompactionRound(round=number, turn=turn, message_index=index,
                                   tokens_before=before, tokens_after=before, applied=False,
                                   calls=len(getattr(exc, "attempts", None) or usages),
                                   input_tokens=tin, output_tokens=tout,
                                   error=f"{type(exc).__name__}: {exc}",
                                   trigger=self.trigger), len(ctx.messages)
        tin, tout = _usage_tokens(out.usages)
        shared = len(ctx.messages)
        if out.compacted:
            shared = ctx.replace_all([m for m in out.context if m.is_agent_visible])
        rnd = CompactionRound(round=number, turn=turn, message_index=index,
                              tokens_before=before, tokens_after=ctx.total,
                              applied=out.compacted, calls=len(out.attempts) or len(out.usages),
                              input_tokens=tin, output_tokens=tout, trigger=self.trigger)
        # An opaque context (a provider's encrypted compaction) cannot be read by a probe.
        if self.probes != "none" and out.compacted and not out.detail.get("opaque"):
            summary = out.detail.get("summary", out.summary_text)
            found = probe_round(self.session, index, ctx.text(), str(summary or ""), self.probes)
            rnd.probe_recall, rnd.facts_recall = found.probe_recall, found.facts_recall
            rnd.stale_kept, rnd.request_kept = found.stale_kept, found.request_kept
            rnd.done_redone = found.done_redone
        return rnd, shared


def replay_session(session: Session, strategy: Strategy | str,
                   **kwargs: Unpack[ReplayOptions]) -> ReplayResult:
    """Synchronous `replay_session_async` (works inside a running event loop, e.g. Jupyter)."""
    return run_sync(replay_session_async(session, strategy, **kwargs))
