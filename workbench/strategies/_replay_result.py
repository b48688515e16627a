"""What a whole-session replay records: one `TurnRow` per agent call, one `CompactionRound` per
time the trigger fired, and the `ReplayResult` that holds both with its totals.

The totals (`ReplayResult.summary`) are the replay table's row: billed tokens, prompt-cache
reuse, compactions, feasibility, fact survival, and the failure detectors users report
(`workbench.strategies._detectors`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from workbench._json_types import JSONScalar
from workbench.strategies._detectors import detectors

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["DEFAULT_TRIGGER_SHARE", "CompactionRound", "ReplayResult", "TurnRow"]

DEFAULT_TRIGGER_SHARE = 0.8
"""The trigger of a strategy without one of its own when a replay runs each policy at its own
trigger (``threshold = None``): Goose's default, 0.8 of the window."""


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
        compaction_round: The last round run right before this turn (1-based), or None.
        compaction_input_tokens: Input tokens billed by the rounds run right before this turn.
        compaction_output_tokens: Output tokens billed by those rounds.
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
        turn: The turn it ran before (several rounds before one turn are a loop).
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
        trigger: The prompt size it fired at (tokens).
        stale_kept: Replaced planted values (knowledge updates) the context still holds (None:
            not probed, or the prefix replaced none).
        request_kept: The last human request before the round survives it, by the overlap
            grader's rule (None: not probed, or no request yet).
        done_redone: Tasks finished before the round that its summary lists as pending (None:
            not probed, or the session marks no tasks).
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
    trigger: int = 0
    stale_kept: int | None = None
    request_kept: bool | None = None
    done_redone: int | None = None


@dataclass
class ReplayResult:
    """A replayed session under one strategy, window and threshold.

    Attributes:
        session_id: The session.
        strategy: The strategy's label.
        window: The context window in tokens.
        threshold: The trigger as a share of the window, or None when the strategy ran at its
            own trigger (the published one of a policy; `DEFAULT_TRIGGER_SHARE` otherwise).
        turns: One `TurnRow` per agent call.
        rounds: One `CompactionRound` per time the trigger fired.
        model: The summarizer's name ("" when the strategy calls none).
        trigger: The prompt size from which the strategy compacted (tokens); None when not
            known (a stored replay at its own trigger that never fired).
    """

    session_id: str
    strategy: str
    window: int
    threshold: float | None
    turns: list[TurnRow] = field(default_factory=list)
    rounds: list[CompactionRound] = field(default_factory=list)
    model: str = ""
    trigger: int | None = None

    def __post_init__(self) -> None:
        if self.trigger is None:
            if self.threshold is not None:
                self.trigger = int(self.threshold * self.window)
            elif self.rounds:
                self.trigger = self.rounds[0].trigger or None

    @property
    def trigger_tokens(self) -> int | None:
        """The prompt size from which the strategy compacted (``int(threshold x window)``, or
        the strategy's own trigger)."""
        return self.trigger

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

    def summary(self) -> dict[str, JSONScalar]:
        """One flat row: the identity columns, every total and the failure detectors.

        Fact and probe survival (``facts_recall_mean``, ``facts_recall_last``,
        ``probe_recall_mean``) count only rounds whose compacted context fits the window
        (`fitting_rounds`); ``rounds_over_window`` counts the applied rounds that did not.
        The detectors and the cliff are defined in `workbench.strategies._detectors`.
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
            "trigger_tokens": self.trigger,
            **detectors(self),
        }

    def turns_frame(self) -> pd.DataFrame:
        """The turns as a pandas DataFrame (one row per turn, with the identity columns)."""
        # only the tables need pandas: `import workbench.strategies` stays without it
        import pandas as pd

        rows = [{"session_id": self.session_id, "strategy": self.strategy,
                 "window": self.window, "threshold": self.threshold, **t.__dict__,
                 "billed_input_tokens": t.billed_input_tokens,
                 "billed_output_tokens": t.billed_output_tokens} for t in self.turns]
        return pd.DataFrame(rows)

    def rounds_frame(self) -> pd.DataFrame:
        """The compaction rounds as a pandas DataFrame."""
        import pandas as pd  # (as above)

        return pd.DataFrame([{"session_id": self.session_id, "strategy": self.strategy,
                              "window": self.window, "threshold": self.threshold, **r.__dict__}
                             for r in self.rounds])
