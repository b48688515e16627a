"""The failures users report, as replay detectors: a hand-built session on which ``codex``
re-triggers, grows and loops, with every detector's exact value; the definitions at their
boundaries; the pending sections a summary lists; the survival curve and its cliff."""

from __future__ import annotations

import pytest

from tests.strategies._policy_sessions import Chars, session
from workbench.messages import Message
from workbench.strategies import (
    CompactionRound,
    ReplayResult,
    detector_table,
    detectors,
    replay_session,
    survival,
    survival_curve,
)
from workbench.strategies._codex import HANDOFF_NOTE
from workbench.strategies._replay_probes import pending_text
from workbench.testing import ScriptedModel

SUMMARY = "## Next steps\n- fix the billing totals in app.py\n## Goal\n- ship"


def _session() -> object:
    messages = [
        Message.user("Please fix the billing totals in app.py; the server uses port 5000."
                     .ljust(500, ".")),
        Message.assistant("Fixed with a seen_totals_ab12 set.".ljust(100, ".")),
        Message.user("Ops moved us: the server uses port 6000 from now on.".ljust(500, ".")),
        Message.assistant("Moved the config into conf/server_ab12.toml".ljust(100, ".")),
        Message.user("Now document the port change please.".ljust(100, ".")),
        Message.assistant("Documented.".ljust(100, ".")),
    ]
    facts = [
        {"id": "f1", "kind": "value", "text": "port 5000", "message_index": 0, "stale": True,
         "superseded_by": "f2"},
        {"id": "f2", "kind": "value", "text": "port 6000", "message_index": 2},
        {"id": "f3", "kind": "identifier", "text": "seen_totals_ab12", "message_index": 1},
        {"id": "f4", "kind": "path", "text": "conf/server_ab12.toml", "message_index": 3},
    ]
    tasks = [{"id": "t1", "text": "fix the billing totals in app.py", "asked_at": 0,
              "done_at": 1}]
    return session(messages, planted_facts=facts, tasks=tasks)


def test_codex_retriggers_grows_and_loops_and_every_detector_says_exactly_how_often() -> None:
    # Window 1150 at threshold 0.8: the trigger is 920. Before turn 1 the prompt is
    # 500 + 100 + 500 = 1100. Codex keeps both user messages and adds its note and summary:
    # 1000 + len(note) > 1100 (growth) and over the window, so the request would be refused and
    # a second round runs before the same turn (a loop), rebuilding the same context. Before
    # turn 2 (a1 and u2 in) it fires again one turn later (a re-trigger), keeps the three user
    # messages, is still over the window, and loops again.
    note = len(HANDOFF_NOTE + SUMMARY)
    result = replay_session(_session(), "codex", window=1150, threshold=0.8,
                            model=ScriptedModel([SUMMARY]), estimator=Chars(), rounds_per_turn=2)
    assert [(r.turn, r.tokens_before, r.tokens_after) for r in result.rounds] == [
        (1, 1100, 1000 + note), (1, 1000 + note, 1000 + note),
        (2, 1200 + note, 1100 + note), (2, 1100 + note, 1100 + note)]
    assert detectors(result) == {
        "retrigger_rate": 0.75,  # each round but the last has another within 3 turns
        "post_fill_mean": pytest.approx((1000 + note + 1100 + note) / 2 / 1150),
        "post_fill_max": (1100 + note) / 1150,
        "growth": 1,  # the first round only: a rebuilt context of the same size did not grow
        "loops": 2,
        "last_request_kept": 1.0,  # codex keeps the user messages verbatim
        "done_redone": 4,  # the finished task is under "Next steps" in all four summaries
        "stale_kept_mean": None,  # no compacted context fit the window: none is scored
        "cliff": None,
    }
    assert result.overflow_turns == 2 and survival(result) == [None] * 4


def test_at_a_window_that_fits_it_the_survival_curve_falls_to_its_cliff() -> None:
    # Window 2000 at 0.5 (trigger 1000): one round before turn 1 and one before turn 2, each
    # fitting the window. The value is kept, the identifier planted in a0 is lost (1/2 weighed
    # by kind), then the path planted in a1 is lost too (1/3): the cliff is round 2.
    result = replay_session(_session(), "codex", window=2000, threshold=0.5,
                            model=ScriptedModel([SUMMARY]), estimator=Chars())
    assert [r.turn for r in result.rounds] == [1, 2]
    assert survival(result) == [0.5, pytest.approx(1 / 3)]
    found = detectors(result)
    assert (found["stale_kept_mean"], found["cliff"], found["loops"]) == (1.0, 2, 0)
    row = detector_table([result]).iloc[0]
    assert (row["cliff"], row["stale_kept_mean"], row["done_redone"]) == (2, 1.0, 2)


def _result(turns: list[int], before_after: list[tuple[int, int]], window: int = 100,
            applied: bool = True) -> ReplayResult:
    rounds = [CompactionRound(round=i + 1, turn=t, message_index=2 * t, tokens_before=b,
                              tokens_after=a, applied=applied)
              for i, (t, (b, a)) in enumerate(zip(turns, before_after, strict=True))]
    return ReplayResult(session_id="s", strategy="x", window=window, threshold=0.8,
                        rounds=rounds)


def test_a_retrigger_is_another_round_within_three_turns_and_not_four() -> None:
    found = detectors(_result([2, 5, 9], [(90, 40)] * 3))
    assert found["retrigger_rate"] == pytest.approx(1 / 3)  # 5 - 2 = 3 counts, 9 - 5 = 4 not
    assert detectors(_result([2, 5, 9], [(90, 40)] * 3), within=4)["retrigger_rate"] == pytest.approx(2 / 3)


def test_without_rounds_the_rates_do_not_apply_and_the_counts_are_zero() -> None:
    found = detectors(ReplayResult(session_id="s", strategy="x", window=100, threshold=0.8))
    assert found == {"retrigger_rate": None, "post_fill_mean": None, "post_fill_max": None,
                     "growth": 0, "loops": 0, "last_request_kept": None, "done_redone": None,
                     "stale_kept_mean": None, "cliff": None}


def test_rounds_that_changed_nothing_fire_and_fill_but_never_grow() -> None:
    found = detectors(_result([1, 1], [(90, 90), (90, 90)], applied=False))
    assert (found["retrigger_rate"], found["post_fill_max"], found["growth"], found["loops"]) == (
        0.5, 0.9, 0, 1)


def test_pending_sections_are_read_under_their_headings_and_done_lines_are_left_out() -> None:
    summary = ("## Primary request\n- fix totals\n## Pending tasks\n- add retries\n"
               "- [DONE] fix totals\n## Current work\n- editing\n**Next steps:**\n- deploy\n"
               "<current_plan>\n1. [TODO] write docs\n2. [DONE] refactor\n</current_plan>\n"
               "<key_knowledge>\n- port 6000\n</key_knowledge>")
    assert pending_text(summary) == "- add retries\n- deploy\n1. [TODO] write docs"


def test_the_survival_curve_averages_each_round_over_the_sessions_that_reached_it() -> None:
    a = _result([1, 3, 5], [(90, 40)] * 3)
    b = _result([1, 3], [(90, 40)] * 2)
    for r, values in ((a, [0.9, 0.6, 0.2]), (b, [0.7, 0.2])):
        for rnd, v in zip(r.rounds, values, strict=True):
            rnd.facts_recall = v
    b.session_id = "t"
    curve = survival_curve([a, b])
    assert curve[["round", "recall", "sessions", "cliff"]].to_dict("records") == [
        {"round": 1, "recall": pytest.approx(0.8), "sessions": 2, "cliff": 2},
        {"round": 2, "recall": pytest.approx(0.4), "sessions": 2, "cliff": 2},
        {"round": 3, "recall": pytest.approx(0.2), "sessions": 1, "cliff": 2}]


def test_the_survival_plot_draws_each_curve_while_half_its_sessions_reached_it() -> None:
    from workbench.strategies import plot_survival

    a = _result([1, 3, 5], [(90, 40)] * 3)
    b = _result([1, 3], [(90, 40)] * 2)
    c = _result([1, 3], [(90, 40)] * 2)
    for r, values in ((a, [0.9, 0.6, 0.2]), (b, [0.7, 0.2]), (c, [0.8, 0.7])):
        for rnd, v in zip(r.rounds, values, strict=True):
            rnd.facts_recall = v
    b.session_id, c.strategy = "t", "y"
    fig = plot_survival(survival_curve([a, b, c]))
    [ax] = fig.axes
    lines = {line.get_label(): list(zip(*line.get_data(), strict=True))
             for line in ax.get_lines() if not line.get_label().startswith("_")}
    # x: round 3 reached by 1 of 2 sessions is drawn (half), the cliff (round 2) is marked
    assert lines == {"x": [(1, pytest.approx(80.0)), (2, pytest.approx(40.0)),
                           (3, pytest.approx(20.0))],
                     "y": [(1, pytest.approx(80.0)), (2, pytest.approx(70.0))]}
    [cliff] = ax.collections
    assert cliff.get_offsets().tolist() == [[2.0, pytest.approx(40.0)]]
    assert [line.get_ydata()[0] for line in ax.get_lines()
            if line.get_label().startswith("_")] == [50.0]  # the cliff's level


def test_a_compaction_over_the_window_has_no_survival_value() -> None:
    r = _result([1, 2], [(90, 40), (150, 120)])
    r.rounds[0].facts_recall, r.rounds[1].facts_recall = 0.8, 0.9
    assert survival(r) == [0.8, None]
