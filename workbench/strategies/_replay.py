"""Whole-session replay: walk a recorded session turn by turn, compacting when the policy fires.

Every recorded assistant message is one *turn*: the agent was called with the context it had
then (the prompt) and answered with that message. The replay rebuilds that context under a
strategy: before each turn, when the prompt reaches ``threshold x window`` tokens, the strategy
compacts it and the session continues from the compacted context (later messages are appended
to it as they were recorded).

What is measured, per turn (`TurnRow`) and in total (`ReplayResult`):

- billed input = every turn's prompt tokens plus every compaction call's input tokens; billed
  output = every recorded reply's tokens plus every compaction call's output tokens;
- prompt-cache reuse: the tokens of the prompt's prefix shared with the previous turn's prompt
  (a provider's prefix cache could serve them); a *cache break* is a turn whose prompt does not
  extend the previous prompt (compaction rewrote something in it);
- compactions (rounds that changed the context; a round that changed nothing is kept as
  ``applied = False``: its calls were billed all the same), peak context, turns over the window;
- after each compaction round, fact survival: the harness probes (files, errors, user requests,
  planted facts) scored on the compacted context against the session prefix seen so far;
  the totals count only rounds whose compacted context fits the window (a context the agent
  could not have been sent keeps nothing);
- feasibility: a replay with a turn whose prompt exceeds the window (``overflow_turns``) could
  not have run that way, so its billed tokens are not a cost to compare.

Token counting is incremental: a message is counted once when it enters the context (Goose's
per-message figure, ``count_chat_tokens("", [m])``) and a compaction recounts only the messages
it created, so the replay's own cost grows linearly with the session.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from workbench.messages import Message
from workbench.strategies._base import CompactionRequest, Strategy, render_context

__all__ = ["CompactionRound", "ReplayResult", "TurnRow", "replay_session", "replay_session_async"]

ProbeMode = Literal["facts", "all", "none"]
PROBE_MODES: tuple[str, ...] = ("facts", "all", "none")


@dataclass
class TurnRow:
    """One agent call of the replayed session.

    Attributes:
        turn: 0-based turn number.
        message_index: Index of the recorded reply in the session's messages.
        prompt_tokens: Tokens of the context the agent was called with (billed input).
        output_tokens: Tokens of the recorded reply (billed output).
        cached_tokens: Tokens of the prompt prefix shared with the previous turn's prompt.
        cache_break: The prompt does not extend the previous one.
        compaction_round: The round run right before this turn (1-based), or None.
        compaction_input_tokens: Input tokens billed by that round's model calls.
        compaction_output_tokens: Output tokens billed by that round's model calls.
    """

    turn: int
    message_index: int
    prompt_tokens: int
    output_tokens: int
    cached_tokens: int = 0
    cache_break: bool = False
    compaction_round: int | None = None
    compaction_input_tokens: int = 0
    compaction_output_tokens: int = 0

    @property
    def billed_input_tokens(self) -> int:
        """The turn's prompt plus its compaction's input."""
        return self.prompt_tokens + self.compaction_input_tokens

    @property
    def billed_output_tokens(self) -> int:
        """The turn's reply plus its compaction's output."""
        return self.output_tokens + self.compaction_output_tokens


@dataclass
class CompactionRound:
    """One time the trigger fired.

    Attributes:
        round: 1-based round number.
        turn: The turn it ran before.
        message_index: Messages of the recorded session seen so far.
        tokens_before: Context tokens when it fired.
        tokens_after: Context tokens after it.
        applied: The strategy changed the context.
        calls: Model calls made.
        input_tokens: Their billed input tokens.
        output_tokens: Their billed output tokens.
        probe_recall: Mean of the probe recalls on the compacted context (None: no probes).
        facts_recall: Planted facts of the prefix still present (None: none planted).
        error: The error text when the strategy failed (the context is then left as it was).
    """

    round: int
    turn: int
    message_index: int
    tokens_before: int
    tokens_after: int
    applied: bool
    calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    probe_recall: float | None = None
    facts_recall: float | None = None
    error: str | None = None


@dataclass
class ReplayResult:
    """A replayed session under one strategy, window and threshold.

    Attributes:
        session_id: The session.
        strategy: The strategy's label.
        window: The context window in tokens.
        threshold: The trigger, as a share of the window.
        turns: One `TurnRow` per agent call.
        rounds: One `CompactionRound` per time the trigger fired.
        model: The summarizer's name ("" when the strategy calls none).
    """

    session_id: str
    strategy: str
    window: int
    threshold: float
    turns: list[TurnRow] = field(default_factory=list)
    rounds: list[CompactionRound] = field(default_factory=list)
    model: str = ""

    @property
    def trigger_tokens(self) -> int:
        """The prompt size from which the policy compacts: ``int(threshold x window)``."""
        return int(self.threshold * self.window)

    @property
    def billed_input_tokens(self) -> int:
        """Lifetime billed input: every prompt plus every compaction call's input."""
        return sum(t.billed_input_tokens for t in self.turns)

    @property
    def billed_output_tokens(self) -> int:
        """Lifetime billed output: every reply plus every compaction call's output."""
        return sum(t.billed_output_tokens for t in self.turns)

    @property
    def compactions(self) -> int:
        """Rounds that changed the context."""
        return sum(1 for r in self.rounds if r.applied)

    @property
    def cache_breaks(self) -> int:
        """Turns whose prompt did not extend the previous turn's prompt."""
        return sum(1 for t in self.turns if t.cache_break)

    @property
    def cached_tokens(self) -> int:
        """Prompt tokens a prefix cache could have served, summed over turns."""
        return sum(t.cached_tokens for t in self.turns)

    @property
    def peak_context(self) -> int:
        """The largest prompt of the session."""
        return max((t.prompt_tokens for t in self.turns), default=0)

    @property
    def overflow_turns(self) -> int:
        """Turns whose prompt exceeded the window."""
        return sum(1 for t in self.turns if t.prompt_tokens > self.window)

    @property
    def feasible(self) -> bool:
        """Every prompt fit the window: the session could really have run this way (its billed
        tokens mean something only then)."""
        return self.overflow_turns == 0

    def fitting_rounds(self) -> list[CompactionRound]:
        """The applied rounds whose compacted context fits the window: the only contexts the
        agent could have been sent, so the only ones fact survival is measured on."""
        return [r for r in self.rounds if r.applied and r.tokens_after <= self.window]

    def summary(self) -> dict[str, Any]:
        """One flat row: the identity columns and every total.

        Fact and probe survival (``facts_recall_mean``, ``facts_recall_last``,
        ``probe_recall_mean``) count only rounds whose compacted context fits the window
        (`fitting_rounds`); ``rounds_over_window`` counts the applied rounds that did not.
        """
        applied = [r for r in self.rounds if r.applied]
        fitting = self.fitting_rounds()
        last = fitting[-1] if fitting else None
        recalls = [r.probe_recall for r in fitting if r.probe_recall is not None]
        facts = [r.facts_recall for r in fitting if r.facts_recall is not None]
        return {
            "session_id": self.session_id, "strategy": self.strategy, "model": self.model,
            "window": self.window, "threshold": self.threshold, "turns": len(self.turns),
            "compactions": self.compactions, "rounds": len(self.rounds),
            "billed_input_tokens": self.billed_input_tokens,
            "billed_output_tokens": self.billed_output_tokens,
            "billed_tokens": self.billed_input_tokens + self.billed_output_tokens,
            "cached_tokens": self.cached_tokens, "cache_breaks": self.cache_breaks,
            "peak_context": self.peak_context, "overflow_turns": self.overflow_turns,
            "feasible": self.feasible, "rounds_over_window": len(applied) - len(fitting),
            "probe_recall_mean": sum(recalls) / len(recalls) if recalls else None,
            "facts_recall_mean": sum(facts) / len(facts) if facts else None,
            "facts_recall_last": last.facts_recall if last is not None else None,
            "errors": sum(1 for r in self.rounds if r.error),
        }

    def turns_frame(self) -> Any:
        """The turns as a pandas DataFrame (one row per turn, with the identity columns)."""
        import pandas as pd

        rows = [{"session_id": self.session_id, "strategy": self.strategy,
                 "window": self.window, "threshold": self.threshold, **t.__dict__,
                 "billed_input_tokens": t.billed_input_tokens,
                 "billed_output_tokens": t.billed_output_tokens} for t in self.turns]
        return pd.DataFrame(rows)

    def rounds_frame(self) -> Any:
        """The compaction rounds as a pandas DataFrame."""
        import pandas as pd

        return pd.DataFrame([{"session_id": self.session_id, "strategy": self.strategy,
                              "window": self.window, "threshold": self.threshold, **r.__dict__}
                             for r in self.rounds])


class _Context:
    """The live context with per-message token counts and a running total."""

    def __init__(self, estimator: Any) -> None:
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


def _usage_tokens(usages: Sequence[Any]) -> tuple[int, int]:
    return (sum(getattr(u, "input_tokens", None) or 0 for u in usages),
            sum(getattr(u, "output_tokens", None) or 0 for u in usages))


def _recorded_summaries(session: Any) -> set[str]:
    meta = getattr(session, "meta", None) or {}
    return {str(s.get("text")) for s in meta.get("reference_summaries") or [] if s.get("text")}


def _probe(session: Any, end: int, text: str, probes: str) -> tuple[float | None, float | None]:
    # The probes are the harness's scorer too; imported on first use (they pull in the metrics).
    from workbench.sessions import prefix_session

    prefix = prefix_session(session, end)
    if probes == "facts":
        return None, _facts_recall(prefix, text)
    from workbench.metrics import compute_metrics

    values = compute_metrics(prefix, text, None, original_tokens=0, summary_tokens=0)
    probe, facts = values.get("probe_recall"), values.get("facts_recall")
    return (None if probe is None else float(probe), None if facts is None else float(facts))


def _facts_recall(prefix: Any, text: str) -> float | None:
    """The facts probe's recall of the current facts `prefix` planted, in `text`."""
    from workbench.metrics._facts import facts_probe

    result = facts_probe(prefix, text)
    return None if result is None else result[0].recall


async def replay_session_async(session: Any, strategy: Strategy | str, *, window: int,
                               threshold: float = 0.8, model: Any = None,
                               settings: dict[str, Any] | None = None, estimator: Any = None,
                               templates: Any = None, options: dict[str, Any] | None = None,
                               probes: ProbeMode = "facts",
                               label: str | None = None) -> ReplayResult:
    """Replay `session` under `strategy` (see the module docstring for what is measured).

    Args:
        session: A `Session` (its messages are walked as recorded; summaries the recording
            itself carries are skipped, so only the replayed strategy compacts).
        strategy: A `Strategy` or a registered name (built with `settings`).
        window: The agent's context window in tokens.
        threshold: Compact before a turn whose prompt reaches ``int(threshold x window)``.
        model: The summarizer for strategies that call one.
        settings: Settings when `strategy` is a name.
        estimator: `TokenEstimator` (default: tiktoken o200k).
        templates: Goose templates for the ``goose`` strategy (default: the built-ins).
        options: ``summarize`` options for the ``goose`` strategy.
        probes: What to score after every compaction round: ``"facts"`` (planted facts still
            in the context: cheap), ``"all"`` (also every harness probe, ``probe_recall``:
            files, errors, user requests; it rescans the prefix each round) or ``"none"``.
        label: The strategy's name in the result (default: its registry name).

    Returns:
        The `ReplayResult`.

    Raises:
        ValueError: `window` is not positive or `threshold` not in (0, 1].
    """
    from workbench.strategies._registry import get_strategy

    if window <= 0:
        raise ValueError(f"window must be a positive token count, not {window}")
    if not 0 < threshold <= 1:
        raise ValueError(f"threshold must be in (0, 1], not {threshold}")
    if probes not in PROBE_MODES:
        raise ValueError(f"probes must be one of {', '.join(PROBE_MODES)}, not {probes!r}")
    if isinstance(strategy, str):
        strategy = get_strategy(strategy, settings)
    if estimator is None:
        from workbench.tokens import default_estimator

        estimator = default_estimator()
    if templates is None:
        from workbench.compaction import Templates

        templates = Templates.default()
    result = ReplayResult(session_id=str(session.id), strategy=label or strategy.name,
                          window=window, threshold=threshold,
                          model=str(getattr(model, "model", "") or "") if strategy.uses_model
                          else "")
    trigger = result.trigger_tokens
    skip = _recorded_summaries(session)
    ctx = _Context(estimator)
    # The previous turn's prompt: its message count and tokens (a prefix of ctx until compaction).
    previous_len = previous_total = 0
    pending: CompactionRound | None = None
    for index, message in enumerate(session.messages):
        if not message.is_agent_visible or (skip and message.concat_text() in skip):
            continue
        if message.role != "assistant":
            ctx.append(message)
            continue
        shared = previous_len
        if strategy.compacts and ctx.total >= trigger and len(ctx.messages) >= 2:
            pending, shared = await _compact(strategy, ctx, session, index, len(result.turns),
                                             len(result.rounds) + 1, model, window, estimator,
                                             templates, options, probes)
            result.rounds.append(pending)
            shared = min(shared, previous_len)
        broken = shared < previous_len
        row = TurnRow(turn=len(result.turns), message_index=index, prompt_tokens=ctx.total,
                      output_tokens=0,
                      cached_tokens=sum(ctx.counts[:shared]) if broken else previous_total,
                      cache_break=broken)
        if pending is not None:
            row.compaction_round = pending.round
            row.compaction_input_tokens = pending.input_tokens
            row.compaction_output_tokens = pending.output_tokens
            pending = None
        previous_len, previous_total = len(ctx.messages), ctx.total
        row.output_tokens = ctx.append(message)
        result.turns.append(row)
    return result


async def _compact(strategy: Strategy, ctx: _Context, session: Any, index: int, turn: int,
                   number: int, model: Any, window: int, estimator: Any, templates: Any,
                   options: dict[str, Any] | None,
                   probes: str) -> tuple[CompactionRound, int]:
    before = ctx.total
    request = CompactionRequest(messages=list(ctx.messages), model=model, window=window,
                                estimator=estimator, templates=templates,
                                options=dict(options or {}), manual_compact=False,
                                session=session, score=False)
    try:
        out = await strategy.compact(request)
    except Exception as exc:  # a failed round is recorded; the session goes on uncompacted
        usages = list(getattr(exc, "billed_usage", None) or [])
        tin, tout = _usage_tokens(usages)
        return CompactionRound(round=number, turn=turn, message_index=index,
                               tokens_before=before, tokens_after=before, applied=False,
                               calls=len(getattr(exc, "attempts", None) or usages),
                               input_tokens=tin, output_tokens=tout,
                               error=f"{type(exc).__name__}: {exc}"), len(ctx.messages)
    tin, tout = _usage_tokens(out.usages)
    shared = len(ctx.messages)
    if out.compacted:
        shared = ctx.replace_all([m for m in out.context if m.is_agent_visible])
    rnd = CompactionRound(round=number, turn=turn, message_index=index, tokens_before=before,
                          tokens_after=ctx.total, applied=out.compacted,
                          calls=len(out.attempts) or len(out.usages),
                          input_tokens=tin, output_tokens=tout)
    if probes != "none" and out.compacted:
        rnd.probe_recall, rnd.facts_recall = _probe(session, index, ctx.text(), probes)
    return rnd, shared


def replay_session(session: Any, strategy: Strategy | str, **kwargs: Any) -> ReplayResult:
    """Synchronous `replay_session_async` (works inside a running event loop, e.g. Jupyter)."""
    from workbench._sync import run_sync

    return run_sync(replay_session_async(session, strategy, **kwargs))

