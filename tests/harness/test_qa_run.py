"""The [qa] step of a run: questions answered from each cell's compacted context, graded,
billed like summary calls, saved under qa/, and the next action compared at a real boundary."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from tests.probes._sessions import manifest_session
from workbench.compaction import Usage
from workbench.harness import Experiment, Results, run_experiment
from workbench.harness.results._results import read_cell_text
from workbench.messages import Message
from workbench.probes import DIMENSIONS, build_questions
from workbench.testing import ScriptedModel

ANSWERER = "openai/gpt-4o-mini"
USAGE = Usage(model="scripted", input_tokens=100, output_tokens=10, cost=0.001)


def write_session(folder: Path, sid: str = "shop-1") -> Path:
    return manifest_session(sid).write_goose_json(folder / f"{sid}.json")


def experiment(folder: Path, qa: dict[str, Any] | None = None, **over: Any) -> Experiment:
    data: dict[str, Any] = {"name": "qa", "sessions": ["shop-*.json"], "models": ["extractive"],
                            "base_dir": str(folder), "qa": {"answerer": ANSWERER, **(qa or {})}}
    data.update(over)
    return Experiment.from_dict(data)


def question_text(messages: list[Message]) -> str:
    return messages[-1].concat_text().split("\n", 1)[0]


def echo_expected(session_id: str = "shop-1") -> ScriptedModel:
    """An answerer that answers every question with its expected answer."""
    expected = {q.text: q.expected for q in build_questions(manifest_session(session_id),
                                                             per_session=None).questions}

    def respond(system: str, messages: list[Message]) -> str:
        value = expected.get(question_text(messages), "unknown")
        return "\n".join(value) if isinstance(value, list) else value
    return ScriptedModel(respond=respond, usage=USAGE)


def factory(models: dict[str, Any]) -> Any:
    return lambda cell, role: models[role]


def cells(out: Path) -> list[dict[str, Any]]:
    db = sqlite3.connect(out / "results.sqlite")
    db.row_factory = sqlite3.Row
    return [dict(r) for r in db.execute("SELECT * FROM cells ORDER BY rowid")]


def attempts(out: Path) -> list[dict[str, Any]]:
    db = sqlite3.connect(out / "results.sqlite")
    db.row_factory = sqlite3.Row
    return [dict(r) for r in db.execute("SELECT * FROM attempts ORDER BY attempt_no")]


def metrics(out: Path) -> dict[str, Any]:
    (row,) = cells(out)
    return json.loads(row["metrics_json"])


def test_an_answerer_that_knows_nothing_scores_zero(tmp_path: Path) -> None:
    write_session(tmp_path)
    run_experiment(experiment(tmp_path), tmp_path / "run", progress=False,
                   qa_model_factory=factory({"answerer": ScriptedModel(["unknown"])}))
    m = metrics(tmp_path / "run")
    assert {k: m[k] for k in ("qa_accuracy", "qa_recall", "qa_artifact", "qa_continuation",
                              "qa_decision")} == dict.fromkeys(
        ("qa_accuracy", "qa_recall", "qa_artifact", "qa_continuation", "qa_decision"), 0.0)
    # unknown from the full history too: nothing it answers, so no loss to measure; no gain
    assert "qa_loss_exact" not in m and "qa_loss_open" not in m and m["qa_gain"] == 0.0


def test_an_answerer_that_echoes_the_expected_answers_scores_one(tmp_path: Path) -> None:
    write_session(tmp_path)
    run_experiment(experiment(tmp_path), tmp_path / "run", progress=False,
                   qa_model_factory=factory({"answerer": echo_expected()}))
    m = metrics(tmp_path / "run")
    assert {k: m[k] for k in ("qa_accuracy", "qa_recall", "qa_artifact", "qa_continuation",
                              "qa_decision")} == dict.fromkeys(
        ("qa_accuracy", "qa_recall", "qa_artifact", "qa_continuation", "qa_decision"), 1.0)
    assert m["qa_questions"] == 10 and m["qa_loss_exact"] == m["qa_loss_open"] == 0.0
    table = Results.load(tmp_path / "run").table()
    assert table["qa_accuracy"].tolist() == [1.0]


def test_the_answerer_sees_exactly_the_agent_visible_compacted_context(tmp_path: Path) -> None:
    write_session(tmp_path)
    answerer = ScriptedModel(["unknown"])
    run_experiment(experiment(tmp_path, {"full_context": False}), tmp_path / "run",
                   progress=False, qa_model_factory=factory({"answerer": answerer}))
    summary = (tmp_path / "run" / "summaries").glob("*.md")
    summary_text = next(p for p in summary if p.name.count(".") == 1).read_text()
    system, messages = answerer.calls[0]
    assert system.startswith("You are the coding agent of the conversation above")
    assert all(m.is_agent_visible for m in messages)
    assert summary_text.strip() in messages[0].concat_text()  # the summary comes first
    assert messages[-1].concat_text().startswith(build_questions(
        manifest_session()).questions[0].text)
    assert len(answerer.calls) == 10  # one call per question, none on the full history


def test_the_loss_against_the_full_history_is_what_compaction_cost(tmp_path: Path) -> None:
    write_session(tmp_path)
    expected = {q.text: q.expected for q in build_questions(manifest_session()).questions}

    def respond(system: str, messages: list[Message]) -> str:
        if len(messages) < 10:  # the compacted context: a summary and a kept message or two
            return "unknown"
        value = expected[question_text(messages)]
        return "\n".join(value) if isinstance(value, list) else value

    run_experiment(experiment(tmp_path), tmp_path / "run", progress=False,
                   qa_model_factory=factory({"answerer": ScriptedModel(respond=respond)}))
    m = metrics(tmp_path / "run")
    assert m["qa_loss_exact"] == m["qa_loss_open"] == 1.0 and m["qa_accuracy"] == 0.0
    assert m["qa_gain"] == 0.0


def test_the_judge_grades_open_questions_and_its_reasons_are_saved(tmp_path: Path) -> None:
    write_session(tmp_path)
    rubric = json.dumps({d: {"score": 3 if d == "accuracy" else 5, "reason": f"{d} ok"}
                         for d in DIMENSIONS})
    judge = ScriptedModel([rubric], usage=USAGE)
    run_experiment(experiment(tmp_path, {"judge": ANSWERER}), tmp_path / "run", progress=False,
                   qa_model_factory=factory({"answerer": echo_expected(), "judge": judge}))
    m = metrics(tmp_path / "run")
    assert m["judge_score"] == pytest.approx((3 + 5 * 5) / 6)
    assert m["judge_accuracy"] == 3.0
    (row,) = cells(tmp_path / "run")
    saved = json.loads(read_cell_text(tmp_path / "run", row["cell_id"], "qa.json") or "null")
    judged = [q for q in saved["questions"] if "judge" in q]
    assert len(judged) == len(judge.calls) > 0
    assert judged[0]["judge"]["reasons"]["accuracy"] == "accuracy ok"
    open_ones = [q for q in judged if q["grader"] == "overlap"]
    assert all(q["kind"] in ("artifact", "continuation", "decision") for q in open_ones)
    # and a calibration sample of exact questions (judge_calibration, 4 by default)
    assert len(judged) - len(open_ones) == 4
    assert m["judge_exact_both"] == 4  # right answers, and an accuracy of 3 is a pass
    assert saved["judge"] == ANSWERER


def test_a_malformed_judge_reply_is_an_error_row_naming_the_cell_not_a_zero(
        tmp_path: Path) -> None:
    write_session(tmp_path)
    judge = ScriptedModel(["Looks good to me!"])
    results = run_experiment(experiment(tmp_path, {"judge": ANSWERER}), tmp_path / "run",
                             progress=False,
                             qa_model_factory=factory({"answerer": echo_expected(),
                                                       "judge": judge}))
    (row,) = cells(tmp_path / "run")
    assert (row["status"], row["error_type"], row["outcome_kind"], row["error_class"]) == (
        "error", "ReplyFormatError", "error", "ReplyFormatError")
    assert row["error_message"].startswith(f"cell {row['cell_id']} (shop-1|goose|extractive|")
    assert "the judge's reply holds no JSON object" in row["error_message"]
    assert row["metrics_json"] is None  # no judge_score of 0 anywhere
    assert row["qa_calls"] > 0 and row["qa_input_tokens"] > 0  # what was billed is kept
    assert results.verdict().errors[0].error_class == "ReplyFormatError"


def test_qa_calls_are_billed_with_the_cell_and_in_their_own_columns(tmp_path: Path) -> None:
    write_session(tmp_path)
    run_experiment(experiment(tmp_path), tmp_path / "run", progress=False,
                   qa_model_factory=factory({"answerer": echo_expected()}))
    (row,) = cells(tmp_path / "run")
    qa_rows = [a for a in attempts(tmp_path / "run") if a["purpose"] is not None]
    summary_rows = [a for a in attempts(tmp_path / "run") if a["purpose"] is None]
    assert {a["purpose"] for a in qa_rows} == {"answer", "answer_full"}
    assert len(qa_rows) == row["qa_calls"] == 20
    assert {a["question_id"] for a in qa_rows} == {
        q.id for q in build_questions(manifest_session()).questions}
    assert (row["qa_input_tokens"], row["qa_output_tokens"]) == (20 * 100, 20 * 10)
    assert row["qa_cost"] == pytest.approx(20 * 0.001)
    summary_in = sum(a["input_tokens"] or 0 for a in summary_rows)
    assert row["billed_input_tokens"] == summary_in + 2000
    assert row["cost"] == pytest.approx(20 * 0.001)  # the extractive summary is free
    assert row["reported_tokens"] == 2200  # the scripted answerer reported its usage
    table = Results.load(tmp_path / "run").table()
    assert table["qa_billed_tokens"].tolist() == [2200.0]
    assert table["qa_cost"].tolist() == pytest.approx([0.02])


def test_cells_of_one_session_share_the_full_history_answers(tmp_path: Path) -> None:
    write_session(tmp_path)
    answerer = echo_expected()
    run_experiment(experiment(tmp_path, windows=["none", "32k"]), tmp_path / "run",
                   progress=False, qa_model_factory=factory({"answerer": answerer}))
    rows = cells(tmp_path / "run")
    assert len(rows) == 2
    qa = [a for a in attempts(tmp_path / "run") if a["purpose"] is not None]
    full = [a for a in qa if a["purpose"] == "answer_full"]
    assert sum(a["shared"] for a in full) == 10  # the second cell's ten are shared
    billed = [a for a in qa if not a["shared"]]
    # A shared answer carries the usage of the call that produced it (what the cell used), so
    # each cell's QA share is the same whichever cell sent the call; only one paid for it.
    assert all(a["input_tokens"] == 100 and a["shared_from"] for a in qa if a["shared"])
    assert sum(r["qa_input_tokens"] for r in rows) == len(qa) * 100
    assert len(billed) < len(qa)
    shared = [a for a in attempts(tmp_path / "run") if a["shared"]]
    assert sum(r["calls_shared"] for r in rows) == len(shared) >= len(qa) - len(billed) >= 10


def test_a_run_saves_its_questions_and_a_later_run_reuses_edited_ones(tmp_path: Path) -> None:
    write_session(tmp_path)
    first = tmp_path / "first"
    run_experiment(experiment(tmp_path), first, progress=False,
                   qa_model_factory=factory({"answerer": echo_expected()}))
    saved = first / "qa" / "questions" / "shop-1.json"
    data = json.loads(saved.read_text())
    assert [q["id"] for q in data["questions"]] == [
        q.id for q in build_questions(manifest_session()).questions]
    data["questions"] = [q for q in data["questions"] if q["id"] == "recall-fact-f03"]
    data["questions"][0]["text"] = "Which port does the dev server use now?"
    saved.write_text(json.dumps(data))
    answerer = ScriptedModel(["port 50354"])
    second = tmp_path / "second"
    run_experiment(experiment(tmp_path, {"questions": str(first / "qa" / "questions")}), second,
                   progress=False, qa_model_factory=factory({"answerer": answerer}))
    assert question_text(answerer.calls[0][1]) == "Which port does the dev server use now?"
    assert metrics(second)["qa_questions"] == 1 and metrics(second)["qa_accuracy"] == 1.0
    assert json.loads((second / "qa" / "questions" / "shop-1.json").read_text()) == data


def test_a_probe_authors_questions_join_the_saved_set_and_are_asked(tmp_path: Path) -> None:
    write_session(tmp_path)
    author = ScriptedModel([json.dumps([{"kind": "recall", "question": "Which config file?",
                                         "answer": "config/dev.toml"}])], usage=USAGE)
    answerer = ScriptedModel(["config/dev.toml"])
    run_experiment(experiment(tmp_path, {"probe_author": ANSWERER, "author_questions": 1,
                                         "per_session": 2}),
                   tmp_path / "run", progress=False,
                   qa_model_factory=factory({"answerer": answerer, "probe_author": author}))
    saved = json.loads((tmp_path / "run" / "qa" / "questions" / "shop-1.json").read_text())
    assert saved["author"] == ANSWERER
    assert [q["id"] for q in saved["questions"]][-1] == "author-1"
    assert len(author.calls) == 1 and metrics(tmp_path / "run")["qa_questions"] == 3
    assert {a["purpose"] for a in attempts(tmp_path / "run")} >= {"author", "answer"}
    assert saved["questions"][-1]["evidence"] == [{"message": 8, "quote": "config/dev.toml"}]
    assert metrics(tmp_path / "run")["qa_authored"] == 1.0


def test_an_authored_answer_the_history_does_not_hold_is_dropped_and_counted(
        tmp_path: Path) -> None:
    write_session(tmp_path)
    author = ScriptedModel([json.dumps([
        {"kind": "recall", "question": "Which database?", "answer": "PostgreSQL 16"},
        {"kind": "recall", "question": "Which port now?", "answer": "50354"}])], usage=USAGE)
    run_experiment(experiment(tmp_path, {"probe_author": ANSWERER, "author_questions": 2,
                                         "per_session": 1}),
                   tmp_path / "run", progress=False,
                   qa_model_factory=factory({"answerer": ScriptedModel(["50354"] * 4),
                                             "probe_author": author}))
    saved = json.loads((tmp_path / "run" / "qa" / "questions" / "shop-1.json").read_text())
    assert saved["dropped"] == {"author": 1}
    assert [q["expected"] for q in saved["questions"] if q["id"].startswith("author")] == [
        "50354"]


def test_a_dry_run_estimates_the_qa_calls(tmp_path: Path) -> None:
    write_session(tmp_path)
    estimate = run_experiment(experiment(tmp_path, {"judge": ANSWERER},
                                         windows=["none", "32k"]),
                              tmp_path / "run", dry_run=True, progress=False)
    # 2 cells x 10 questions on the compacted context + 10 on the full history once (shared)
    # + 2 cells x (the 4 open questions among the 10 judged + 4 exact ones as a calibration).
    judged = sum(q.judged for q in build_questions(manifest_session()).questions)
    assert judged == 4 and estimate.qa_calls == 2 * 10 + 10 + 2 * (judged + 4)
    assert estimate.qa_tokens > 0 and estimate.qa_cost is not None and estimate.qa_cost > 0
    assert estimate.estimated_tokens >= estimate.qa_tokens
    assert "of which QA: 46 calls" in str(estimate)
    assert not (tmp_path / "run").exists()


def test_the_budget_reserves_qa_calls_like_summary_calls(tmp_path: Path) -> None:
    write_session(tmp_path)
    write_session(tmp_path, "shop-2")
    results = run_experiment(experiment(tmp_path, budget={"max_cost": 0.005}), tmp_path / "run",
                             progress=False,
                             qa_model_factory=factory({"answerer": echo_expected()}))
    assert results.status == "budget_reached"
    spent = sum(r["cost"] or 0 for r in cells(tmp_path / "run"))
    assert spent <= 0.005 + 0.001 + 1e-9  # at most one call over


def test_lookup_answers_offline_with_no_call(tmp_path: Path) -> None:
    write_session(tmp_path)
    run_experiment(experiment(tmp_path, {"answerer": "lookup"}, strategies=["none"]),
                   tmp_path / "run", progress=False)
    m = metrics(tmp_path / "run")
    (row,) = cells(tmp_path / "run")
    assert (row["qa_calls"], row["qa_input_tokens"], row["qa_cost"]) == (0, 0, 0.0)
    assert m["qa_accuracy"] == 1.0 and m["qa_loss_exact"] == pytest.approx(0.0)


CLAUDE = ("claude-code", "test", "fixtures", "transcripts",
          "ae4a77f8-aedd-4bc1-888f-c94edc91af04.jsonl")


@pytest.mark.parametrize(("reply", "match"), [("TOOL Bash git status --short", 1.0),
                                              ("TOOL Read mix.exs", 0.0)])
def test_next_action_is_compared_with_the_recorded_one_at_a_real_boundary(
        tmp_path: Path, shared_sessions: Path, reply: str, match: float) -> None:
    full_reply = "TOOL Bash git status"

    def respond(system: str, messages: list[Message]) -> str:
        if system.startswith("You are the coding agent of this conversation"):
            return full_reply if len(messages) > 100 else reply
        return "unknown"

    exp = Experiment.from_dict({
        "name": "na", "sessions": [str(shared_sessions.joinpath(*CLAUDE))],
        "models": ["extractive"], "strategies": ["reference"], "base_dir": str(tmp_path),
        "qa": {"answerer": ANSWERER, "per_session": 2}})
    answerer = ScriptedModel(respond=respond)
    run_experiment(exp, tmp_path / "run", progress=False,
                   qa_model_factory=factory({"answerer": answerer}))
    (row,) = cells(tmp_path / "run")
    m = json.loads(row["metrics_json"])
    assert m["next_action_match"] == match and m["next_action_match_full"] == match
    saved = json.loads(read_cell_text(tmp_path / "run", row["cell_id"], "qa.json") or "null")
    assert saved["next_action"]["recorded"] == {"tool": "Bash", "kind": "command",
                                                "argument": "git status"}
    assert saved["next_action"]["full_match"] is True and saved["boundary"] == 288
    next_calls = [c for c in answerer.calls if c[0].startswith("You are the coding agent of "
                                                               "this conversation")]
    compacted = next_calls[0][1]
    # The recorded summary, then what the agent saw before acting: no later message.
    assert compacted[0].concat_text().startswith("This session is being continued")
    assert compacted[-1].concat_text() == "continue implementation"
    assert "Bash" in next_calls[0][0] and "Read" in next_calls[0][0]


def test_the_gate_holds_qa_accuracy_to_not_lower(tmp_path: Path) -> None:
    from workbench.regress._compare import compare_metrics
    from workbench.regress._snapshot import Snapshot

    write_session(tmp_path)
    rules = {"qa_accuracy": "not lower"}
    good = run_experiment(experiment(tmp_path), tmp_path / "good", progress=False,
                          qa_model_factory=factory({"answerer": echo_expected()}))
    bad = run_experiment(experiment(tmp_path), tmp_path / "bad", progress=False,
                         qa_model_factory=factory({"answerer": ScriptedModel(["unknown"])}))
    baseline = Snapshot.from_results(good, rules, "qa")
    assert compare_metrics(baseline, Snapshot.from_results(good, rules, "qa"), rules) == []
    (finding,) = compare_metrics(baseline, Snapshot.from_results(bad, rules, "qa"), rules)
    assert (finding.kind, finding.name) == ("metric", "qa_accuracy [default · extractive · none]")
    assert finding.message.startswith("qa_accuracy [default · extractive · none]: baseline 1 -> "
                                      "now 0 (rule 'not lower'")


def test_the_verdict_decides_qa_accuracy_when_it_is_present(tmp_path: Path) -> None:
    for n in range(5):
        write_session(tmp_path, f"shop-{n}")
    exp = experiment(tmp_path, {"answerer": "lookup"}, templates=["default", "lean-facts"])
    results = run_experiment(exp, tmp_path / "run", progress=False)
    (stratum,) = results.verdict().strata
    names = [m.metric for m in stratum.metrics]
    assert "qa_accuracy" in names and "next_action_match" not in names  # no recorded boundary
    line = next(m.to_text() for m in stratum.metrics if m.metric == "qa_accuracy")
    assert line.startswith("questions answered (exact) (5 sessions): best ")
    table = results.table()
    assert {"qa_accuracy", "qa_recall", "qa_artifact", "qa_continuation", "qa_decision",
            "qa_loss_exact", "qa_loss_open", "qa_gain", "qa_billed_tokens",
            "qa_cost"} <= set(table.columns)
    assert "judge_score" not in table.columns  # no judge: not a column of zeros
