"""Whole-session replay: the trigger rule, the billed-token sums, incremental counting, and a
table and plot over a real and a generated session."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pytest

from tests.conftest import ROOT
from workbench.compaction import Usage
from workbench.messages import Message
from workbench.sessions import Session, load_session
from workbench.strategies import (
    CompactionRound,
    ReplayResult,
    TurnRow,
    get_strategy,
    plot_replay,
    replay_ranking,
    replay_session,
    replay_table,
)
from workbench.testing import ScriptedModel


class CharEstimator:
    """One token per character of a message's text; counts its calls."""

    def __init__(self) -> None:
        self.calls = 0

    def count_chat_tokens(self, system: str, messages: Sequence[Message],
                          tools: object = None) -> int:
        self.calls += 1
        return sum(len(m.concat_text()) for m in messages)

    def count_text_tokens(self, text: str) -> int:
        return len(text)


def _dialogue(turns: int) -> Session:
    """U0 (100), then per turn an assistant reply (50) and a user message (100)."""
    messages = [Message.user("u000" + "u" * 96)]
    for k in range(1, turns + 1):  # distinct texts: equal messages would share a cached prefix
        messages += [Message.assistant(f"a{k:03d}" + "a" * 46),
                     Message.user(f"u{k:03d}" + "u" * 96)]
    return Session(id="dialogue", format="test", path="-", messages=messages)


def test_compactions_fire_exactly_where_the_trigger_rule_says() -> None:
    # Window 1000 x threshold 0.5 = trigger 500; truncation keeps <= 250 (U, A, U).
    # Prompts by hand: T0 100, T1 250, T2 400, T3 550 -> compact -> 250, T4 400, T5 550 ->
    # 250, T6 400, T7 550 -> 250. Compactions before turns 3, 5 and 7.
    result = replay_session(_dialogue(8), "truncate", settings={"target_ratio": 0.25},
                            window=1000, threshold=0.5, estimator=CharEstimator(),
                            probes="none")
    assert result.trigger_tokens == 500
    assert [t.prompt_tokens for t in result.turns] == [100, 250, 400, 250, 400, 250, 400, 250]
    assert [r.turn for r in result.rounds] == [3, 5, 7]
    assert [(r.tokens_before, r.tokens_after) for r in result.rounds] == [(550, 250)] * 3
    assert result.compactions == 3
    assert [t.compaction_round for t in result.turns] == [None, None, None, 1, None, 2, None, 3]
    assert [t.cached_tokens for t in result.turns] == [0, 100, 250, 0, 250, 0, 250, 0]
    assert result.cache_breaks == 3
    assert result.billed_input_tokens == 2300
    assert result.billed_output_tokens == 8 * 50
    assert result.peak_context == 400
    assert result.overflow_turns == 0


def test_no_compaction_never_fires_and_bills_every_growing_prompt() -> None:
    result = replay_session(_dialogue(8), "none", window=300, threshold=0.5,
                            estimator=CharEstimator())
    prompts = [100 + 150 * k for k in range(8)]
    assert [t.prompt_tokens for t in result.turns] == prompts
    assert result.rounds == []
    assert result.billed_input_tokens == sum(prompts)
    assert result.overflow_turns == sum(1 for p in prompts if p > 300)
    assert result.cache_breaks == 0


def test_each_message_is_counted_once_when_nothing_is_compacted() -> None:
    estimator = CharEstimator()
    session = _dialogue(40)
    replay_session(session, "none", window=1000, estimator=estimator)
    assert estimator.calls == len(session.messages)


def test_lifetime_billed_tokens_are_the_sum_of_the_per_turn_rows() -> None:
    session = load_session(ROOT / "datasets" / "gen-025k-s3.json")
    model = ScriptedModel(["the summary so far"], usage=Usage(input_tokens=700, output_tokens=30))
    result = replay_session(session, "goose", window=8192, threshold=0.6, model=model)
    frame = result.turns_frame()
    assert result.compactions == len(result.rounds) > 1
    assert len(model.calls) == len(result.rounds)
    assert result.billed_input_tokens == int(frame["billed_input_tokens"].sum())
    assert result.billed_output_tokens == int(frame["billed_output_tokens"].sum())
    assert result.billed_input_tokens == (int(frame["prompt_tokens"].sum())
                                          + 700 * len(result.rounds))
    assert result.billed_output_tokens == (int(frame["output_tokens"].sum())
                                           + 30 * len(result.rounds))
    assert result.summary()["billed_tokens"] == (result.billed_input_tokens
                                                 + result.billed_output_tokens)


def test_a_failing_compaction_round_is_recorded_and_the_session_goes_on() -> None:
    from workbench.errors import ModelCallError

    session = load_session(ROOT / "datasets" / "gen-012k-s2.json")
    model = ScriptedModel(always_raise=ModelCallError("provider down"))
    result = replay_session(session, "goose", window=4096, threshold=0.8, model=model)
    assert result.rounds and all(r.error for r in result.rounds)
    assert result.compactions == 0
    assert result.rounds[0].error == "CompactionCallFailed: provider down"
    assert len(result.turns) == sum(1 for m in session.messages if m.role == "assistant")


def test_bad_replay_arguments_are_refused_with_their_value() -> None:
    with pytest.raises(ValueError, match="threshold must be in \\(0, 1\\], not 1.5"):
        replay_session(_dialogue(2), "none", window=100, threshold=1.5)
    with pytest.raises(ValueError, match="window must be a positive token count, not 0"):
        replay_session(_dialogue(2), "none", window=0)


def _strategies() -> list[tuple[str, dict[str, object]]]:
    return [("goose", {}), ("awaken", {}), ("mask", {"keep_last": 3}), ("truncate", {}),
            ("none", {})]


def test_a_generated_session_replays_into_a_table_and_a_plot(tmp_path: Path) -> None:
    from workbench.models import load_model

    session = load_session(ROOT / "datasets" / "gen-050k-s4.json")
    model = load_model("extractive")
    results = [replay_session(session, name, settings=settings, window=8192, threshold=t,
                              model=model)
               for name, settings in _strategies() for t in (0.8, 0.6)]
    table = replay_table(results)
    assert list(table["strategy"]) == ["goose", "goose", "awaken", "awaken", "mask", "mask",
                                       "truncate", "truncate", "none", "none"]
    assert list(table["threshold"]) == [0.8, 0.6] * 5
    assert (table["sessions"] == 1).all()
    none = table[table["strategy"] == "none"].iloc[0]
    assert none["compactions"] == 0 and none["peak_context_max"] > 8192 and not none["feasible"]
    compacting = table[table["strategy"].isin(["goose", "truncate"])]
    assert (compacting["overflow_turns"] == 0).all()
    assert (compacting["billed_tokens"] < none["billed_tokens"]).all()
    # Planted facts: the survival after each round is a share.
    assert compacting["facts_recall_mean"].between(0, 1).all()
    fig = plot_replay([r for r in results if r.threshold == 0.8])
    ax = fig.axes[0]
    assert len(ax.get_lines()) == 5 + 2  # one line per strategy + window + trigger
    assert [t.get_text().split(" @")[0] for t in ax.get_legend().get_texts()] == [
        "goose", "awaken", "mask", "truncate", "none"]
    fig.savefig(tmp_path / "replay.png")
    assert (tmp_path / "replay.png").stat().st_size > 0


def test_a_real_claude_code_session_replays_into_a_table_and_a_plot(
        shared_sessions: Path) -> None:
    from workbench.models import load_model

    path = (shared_sessions / "claude-code" / "test" / "fixtures" / "transcripts"
            / "ae4a77f8-aedd-4bc1-888f-c94edc91af04.jsonl")
    session = load_session(path)
    model = load_model("extractive")
    results = [replay_session(session, name, settings=settings, window=32768, threshold=0.8,
                              model=model) for name, settings in _strategies()]
    replies = sum(1 for m in session.messages if m.role == "assistant" and m.is_agent_visible)
    assert all(len(r.turns) == replies for r in results)
    table = replay_table(results)
    assert list(table["strategy"]) == ["goose", "awaken", "mask", "truncate", "none"]
    by = table.set_index("strategy")
    assert by.loc["none", "compactions"] == 0
    assert by.loc["goose", "compactions"] >= 1
    assert by.loc["goose", "billed_tokens"] < by.loc["none", "billed_tokens"]
    for r in results:
        assert r.billed_input_tokens == sum(t.billed_input_tokens for t in r.turns)
    fig = plot_replay(results)
    assert len(fig.axes[0].collections) == 5  # compaction markers, one series per strategy


def test_the_strategy_object_can_be_passed_directly_with_a_label() -> None:
    result = replay_session(_dialogue(3), get_strategy("mask", keep_last=1), window=1000,
                            estimator=CharEstimator(), label="mask-1")
    assert result.strategy == "mask-1"
    assert result.summary()["strategy"] == "mask-1"


def test_replaying_never_changes_the_recorded_session() -> None:
    from workbench.models import load_model

    session = load_session(ROOT / "datasets" / "gen-025k-s3.json")
    before = [m.to_goose() for m in session.messages]
    for name in ("goose", "awaken", "mask", "truncate"):
        result = replay_session(session, name, window=8192, threshold=0.6,
                                model=load_model("extractive"))
        assert result.compactions > 0, name
    assert [m.to_goose() for m in session.messages] == before


def _replay(session: str, strategy: str, prompts: list[int],
            rounds: list[tuple[int, float]]) -> ReplayResult:
    """A constructed replay at window 100: one turn per prompt size; rounds as (context after
    compaction, facts kept), each run before the turn of the same number."""
    result = ReplayResult(session_id=session, strategy=strategy, window=100, threshold=0.8)
    result.turns = [TurnRow(turn=i, message_index=i, prompt_tokens=p, output_tokens=10)
                    for i, p in enumerate(prompts)]
    result.rounds = [CompactionRound(round=i + 1, turn=i, message_index=i, tokens_before=90,
                                     tokens_after=after, applied=True, facts_recall=facts)
                     for i, (after, facts) in enumerate(rounds)]
    return result


def test_an_overflowing_replay_is_infeasible_unranked_and_keeps_facts_only_where_it_fit() -> None:
    fits = _replay("s1", "goose", [80, 60, 70], [(60, 0.5), (70, 0.25)])
    over = _replay("s1", "mask", [80, 150, 120], [(150, 1.0), (60, 0.75), (120, 1.0)])
    cheap_but_over = _replay("s1", "none", [90, 95, 130], [])
    assert (fits.feasible, over.feasible, cheap_but_over.feasible) == (True, False, False)
    row = over.summary()
    # Only the round whose context fit the window (60 <= 100) counts: not the 1.0s.
    assert (row["facts_recall_mean"], row["facts_recall_last"]) == (0.75, 0.75)
    assert (row["overflow_turns"], row["rounds_over_window"]) == (2, 2)
    table = replay_table([fits, over, cheap_but_over,
                          _replay("s2", "goose", [40, 101], [(101, 1.0)])])
    goose = table[table["strategy"] == "goose"].iloc[0]
    assert goose["sessions"] == 2 and goose["peak_context_max"] == 101  # the largest, not a mean
    assert not goose["feasible"]  # one of its sessions overflowed
    assert goose["facts_recall_mean"] == 0.375  # s1's mean; s2 has no round that fit
    assert list(table["feasible"]) == [False, False, False]
    alone = replay_table([fits, over, cheap_but_over])
    assert replay_ranking(alone) == [
        "100 x0.8: fewest billed tokens, feasible only: goose (240); infeasible (prompts over "
        "the window): mask (2 overflow turns per session), none (1 overflow turns per session)"]
