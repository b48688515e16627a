"""The verdict on constructed runs with known answers."""

from __future__ import annotations

import pandas as pd

from workbench.harness import verdict


def cell(session, template, *, window=8000, model="m", kind="ok", recall=0.5, retained=500,
         summary=100, echo=0.0, fill=0.5, error_class=None):
    ok = kind == "ok"
    return {"session_id": session, "strategy": "goose", "model": model, "template": template,
            "window": window, "repeat": 0, "status": "ok" if ok else "error",
            "outcome_kind": kind, "error_class": error_class,
            "error_type": None if ok else "CompactionCallFailed",
            "parse_outcome": "structured" if ok else None,
            "retained_tokens": retained if ok else None, "summary_tokens": summary if ok else None,
            "probe_recall": recall if ok else None, "template_echo": echo if ok else None,
            "fill_rate": fill if ok else None}


def test_a_constant_improvement_names_the_winner_with_its_interval() -> None:
    rows = []
    for i in range(6):
        rows.append(cell(f"s{i}", "a", recall=0.3 + 0.05 * i, retained=600 + 10 * i))
        rows.append(cell(f"s{i}", "b", recall=0.5 + 0.05 * i, retained=500 + 10 * i))
    v = verdict(pd.DataFrame(rows))
    (stratum,) = v.strata
    assert (stratum.title, stratum.variants, stratum.n_common) == ("m @ 8000", ["a", "b"], 6)
    by = {m.metric: m for m in stratum.metrics}
    recall = by["probe_recall"]
    assert (recall.winner, recall.runner_up, recall.n_sessions) == ("b", "a", 6)
    assert round(recall.mean_diff, 9) == round(recall.ci_low, 9) == round(recall.ci_high, 9) == 0.2
    assert recall.to_text() == (
        "probe recall (6 sessions): best b (62.5%), significantly better than every other variant\n"
        "  a: consistently worse than best: -20.0 pts in every one of 6 sessions, Holm p <0.001")
    assert by["retained_tokens"].winner == "b" and by["retained_tokens"].mean_diff == -100
    assert by["failed"].to_text() == (
        "compaction failures (6 sessions): best a (0.0%)\n"
        "  b: tie with best, +0.0 pts [+0.0, +0.0], Holm p 1.000\n"
        "  no significant difference: every paired difference is 0 on these 6 sessions")
    assert v.errors == [] and v.infrastructure_errors == 0
    assert "Errors and failures:\n  none: every cell produced a summary" in v.to_text()


def test_noise_gives_no_significant_difference_with_the_session_count() -> None:
    rows = []
    for i, d in enumerate([0.2, -0.2, 0.1, -0.1, 0.15, -0.15]):
        rows += [cell(f"s{i}", "a", recall=0.5), cell(f"s{i}", "b", recall=0.5 + d)]
    (stratum,) = verdict(pd.DataFrame(rows)).strata
    recall = next(m for m in stratum.metrics if m.metric == "probe_recall")
    assert recall.winner is None and recall.best == "a" and recall.ties == ["b"]
    (only,) = recall.comparisons
    assert (only.status, only.consistent, only.n_sessions) == ("tie", False, 6)
    assert only.p_adjusted == only.p_value > 0.05  # one comparison: Holm changes nothing
    assert recall.to_lines()[0] == "probe recall (6 sessions): best a (50.0%)"
    assert recall.to_lines()[2].startswith("  no significant difference: at 6 sessions the "
                                           "smallest detectable difference is ")


def test_fewer_than_five_sessions_name_a_winner_only_for_a_constant_gap() -> None:
    rows = []
    for i in range(3):
        rows += [cell(f"s{i}", "a", recall=0.2), cell(f"s{i}", "b", recall=0.9)]
    (stratum,) = verdict(pd.DataFrame(rows)).strata
    recall = next(m for m in stratum.metrics if m.metric == "probe_recall")
    assert recall.winner == "b" and recall.best == "b"
    assert recall.to_lines()[0] == ("probe recall (3 sessions): best b (90.0%), better than "
                                    "every other variant in every session (too few sessions "
                                    "for a test)")
    # a constant gap is a fact about these sessions even below five: said as consistent
    assert recall.to_lines()[1] == (
        "  a: consistently worse than best: -70.0 pts in every one of 3 sessions; too few "
        "sessions for a p-value: a fact about these sessions, not a test")


def test_fewer_than_five_sessions_with_varying_gaps_stay_a_tie() -> None:
    rows = []
    for i, d in enumerate([0.5, 0.6, 0.7]):
        rows += [cell(f"s{i}", "a", recall=0.2), cell(f"s{i}", "b", recall=0.2 + d)]
    (stratum,) = verdict(pd.DataFrame(rows)).strata
    recall = next(m for m in stratum.metrics if m.metric == "probe_recall")
    (c,) = recall.comparisons
    assert recall.winner is None and c.status == "tie" and c.p_value < 0.05
    assert recall.to_lines()[1] == ("  a: tie with best, -60.0 pts [-70.0, -50.0] (3 sessions: "
                                    "too few to test)")


def test_models_and_windows_are_separate_strata() -> None:
    rows = []
    for i in range(5):
        for window in (8000, 32000):
            rows += [cell(f"s{i}", "a", window=window), cell(f"s{i}", "b", window=window)]
            rows += [cell(f"s{i}", "a", model="n", window=window),
                     cell(f"s{i}", "b", model="n", window=window)]
    v = verdict(pd.DataFrame(rows))
    assert [s.title for s in v.strata] == ["m @ 8000", "m @ 32000", "n @ 8000", "n @ 32000"]


def test_identical_outputs_and_template_echoes_are_warned_about() -> None:
    rows = []
    for i in range(5):
        rows += [cell(f"s{i}", "a", echo=1.0), cell(f"s{i}", "b", echo=1.0)]
    v = verdict(pd.DataFrame(rows))
    assert v.strata[0].warnings == [
        "every template gave the same summary sizes and recall on every common session: the "
        "variants are indistinguishable here",
        "all 10 parsed replies copy the template's schema example (template echo): parse "
        "success says nothing about summary quality here"]
    assert v.warnings[0].startswith("m @ 8000: every template gave")
    useful = next(m for m in v.strata[0].metrics if m.metric == "useful_structured")
    assert useful.means == {"a": 0.0, "b": 0.0}


def test_the_error_summary_counts_by_class_with_causes_and_kinds() -> None:
    rows = [cell("s0", "a"), cell("s0", "b"),
            cell("s1", "a", kind="failed", error_class="ContextLengthExceeded"),
            cell("s1", "b", kind="failed", error_class="ContextLengthExceeded"),
            cell("s2", "a", kind="failed", error_class="ContextLengthExceeded"),
            cell("s2", "b", kind="error", error_class="CacheMiss")]
    v = verdict(pd.DataFrame(rows))
    assert [e.to_text() for e in v.errors] == [
        "3 x context exhausted (failed): the session is larger than the window even with every "
        "tool response removed",
        "1 x cache miss (error): replay-only cache has no recording for the prompt: record it "
        "with `workbench record SPEC` (the real model), or leave the template or session out of "
        "the model entry's `templates` or `sessions` (one it was never recorded with), or "
        "restore the recording file"]
    assert v.infrastructure_errors == 1
    assert v.to_text().endswith("1 cell(s) hit infrastructure errors: their results are "
                                "missing, not measured")
    data = v.to_dict()
    assert data["infrastructure_errors"] == 1 and data["strata"][0]["title"] == "m @ 8000"
    assert data["errors"][1]["label"] == "cache miss"
