"""Strategies in the harness: experiment entries, cells, goose unchanged behind the interface,
baselines and the recorded reference row in runs, and the [replay] table."""

from __future__ import annotations

import asyncio
import sqlite3
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from tests.conftest import ROOT
from workbench.errors import ConfigError
from workbench.harness import Experiment, expand_cells, run_experiment
from workbench.messages import Message
from workbench.sessions import Session, load_session
from workbench.strategies import CompactionRequest, get_strategy


def _spec(tmp_path: Path, **over: Any) -> Experiment:
    data: dict[str, Any] = {"name": "t", "sessions": ["gen-005k-s1"], "models": ["extractive"],
                            "base_dir": str(tmp_path)}
    data.update(over)
    return Experiment.from_dict(data)


def test_strategy_entries_take_names_settings_and_short_labels(tmp_path: Path) -> None:
    exp = _spec(tmp_path, strategies=["goose", {"name": "mask", "keep_last": 2},
                                      {"name": "truncate", "label": "trunc",
                                       "target_ratio": 0.4}])
    assert [s.display for s in exp.strategies] == ["goose", "mask[keep_last=2]", "trunc"]
    assert exp.strategies[0] == "goose"
    assert exp.to_dict()["strategies"] == [
        "goose", {"name": "mask", "keep_last": 2},
        {"name": "truncate", "label": "trunc", "target_ratio": 0.4}]
    again = Experiment.from_dict({**exp.to_dict(), "base_dir": str(tmp_path)})
    assert [s.display for s in again.strategies] == ["goose", "mask[keep_last=2]", "trunc"]


def test_a_strategy_setting_typo_names_the_entry_and_the_key(tmp_path: Path) -> None:
    spec = tmp_path / "e.toml"
    spec.write_text('sessions = ["a"]\nmodels = ["extractive"]\n'
                    'strategies = ["goose", { name = "mask", keep = 2 }]\n')
    with pytest.raises(ConfigError) as err:
        Experiment.from_toml(spec)
    assert str(err.value) == (f"{spec}: strategies[1]: strategy 'mask': keep: Extra inputs are "
                              "not permitted")


def test_replay_settings_are_checked(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"replay: Value error, thresholds: 1.2 is not in"):
        _spec(tmp_path, replay={"thresholds": [1.2]})
    with pytest.raises(ConfigError, match="needs a finite window"):
        _spec(tmp_path, replay={"windows": ["none"]})
    exp = _spec(tmp_path, replay={"windows": ["8k"], "strategies": ["none"]})
    assert exp.replay is not None and exp.replay.windows == [8192]
    assert exp.to_dict()["replay"]["strategies"] == ["none"]


def test_model_free_strategies_run_once_per_session_and_window(tmp_path: Path) -> None:
    exp = _spec(tmp_path, strategies=["goose", "mask", "none"],
                models=["extractive", "replay:local/x"], templates=["default", "lean-facts"],
                windows=["8k", "32k"])
    cells = expand_cells(exp)
    counts: dict[str, int] = {}
    for c in cells:
        counts[c.strategy] = counts.get(c.strategy, 0) + 1
    assert counts == {"goose": 2 * 2 * 2, "mask": 2, "none": 2}
    mask = [c for c in cells if c.strategy == "mask"]
    assert {(c.model, c.template, c.uses_model) for c in mask} == {("none", "default", False)}
    goose = [c for c in cells if c.strategy == "goose"]
    assert goose[0].key == "gen-005k-s1|goose|extractive|default|8k|0"


def test_the_reference_strategy_only_expands_for_sessions_with_a_recorded_summary(
        tmp_path: Path) -> None:
    exp = _spec(tmp_path, strategies=["reference"])
    assert expand_cells(exp) == []


def test_goose_behind_the_interface_gives_what_compact_messages_gives() -> None:
    from workbench.context_mgmt import compact_messages
    from workbench.models import load_model

    session = load_session(ROOT / "datasets" / "gen-012k-s2.json")
    model = load_model("extractive@8k")
    direct = asyncio.run(compact_messages(model, session.messages, manual_compact=True))
    via = asyncio.run(get_strategy("goose").compact(CompactionRequest(
        messages=session.messages, model=model, window=8192)))
    assert via.summary_text == direct.summary.message.concat_text()
    assert via.retained_tokens == direct.retained_context_tokens
    # The two compactions ran a moment apart: their new messages' `created` (whole seconds)
    # and ids may differ; everything else must not.
    def stable(messages: list) -> list:
        return [{k: v for k, v in m.to_goose().items() if k not in ("created", "id")}
                for m in messages][-2:]

    assert stable(via.context) == stable(direct.conversation)
    assert [a.removal_percent for a in via.attempts] == [
        a.removal_percent for a in direct.summary.attempt_records]
    assert via.parse_outcome == direct.summary.parse_outcome == "structured"


def test_a_run_compares_strategies_in_one_table(tmp_path: Path) -> None:
    exp = _spec(tmp_path, strategies=["goose", {"name": "mask", "keep_last": 2}, "truncate",
                                      "none"], windows=["4k"])
    results = run_experiment(exp, tmp_path / "run", progress=False)
    cells = results.cells.set_index("strategy")
    assert set(cells.index) == {"goose", "mask[keep_last=2]", "truncate", "none"}
    assert (cells["status"] == "ok").all()
    for name in ("mask[keep_last=2]", "truncate", "none"):
        row = cells.loc[name]
        assert (row["model"], row["billed_input_tokens"], row["attempts"]) == ("none", 0, 0)
        assert pd.isna(row["parse_outcome"])
    assert cells.loc["goose", "billed_input_tokens"] > 0
    assert cells.loc["none", "retained_tokens"] == cells.loc["none", "original_tokens"]
    assert cells.loc["truncate", "retained_tokens"] <= 2048
    table = results.table()
    assert list(table.columns[:4]) == ["strategy", "template", "model", "window"]
    assert list(table["strategy"]) == sorted(["goose", "mask[keep_last=2]", "truncate", "none"])


def test_the_reference_row_appears_for_claude_code_sessions_with_a_compaction(
        tmp_path: Path, shared_sessions: Path) -> None:
    folder = shared_sessions / "claude-code" / "test" / "fixtures" / "transcripts"
    exp = Experiment.from_dict({"name": "ref", "sessions": [str(folder / "*.jsonl")],
                                "models": ["extractive"],
                                "strategies": ["reference", "none",
                                               {"name": "truncate", "at": "recorded"}],
                                "windows": ["32k"], "base_dir": str(tmp_path)})
    results = run_experiment(exp, tmp_path / "run", progress=False)
    ref = results.cells[results.cells["strategy"] == "reference"].set_index("session_id")
    assert sorted(ref.index) == ["4d5611e5-241a-462a-8d15-5122611a9569",
                                 "ae4a77f8-aedd-4bc1-888f-c94edc91af04"]
    assert (ref["status"] == "ok").all() and (ref["model"] == "none").all()
    from workbench.tokens import default_estimator

    for sid, boundary in (("4d5611e5-241a-462a-8d15-5122611a9569", 132),
                          ("ae4a77f8-aedd-4bc1-888f-c94edc91af04", 288)):
        session = load_session(folder / f"{sid}.jsonl")
        recorded = session.meta["reference_summaries"][0]
        assert recorded["index"] == boundary
        # Scored against the prefix the recorded summary covers.
        assert ref.loc[sid, "original_tokens"] == default_estimator().count_context_tokens(
            session.messages[:boundary])
        text = (tmp_path / "run" / ref.loc[sid, "summary_path"]).read_text(encoding="utf-8")
        assert text.rstrip("\n") == recorded["text"].rstrip("\n")
        assert 0 < ref.loc[sid, "probe_recall"] <= 1
    # A strategy compacted "at recorded" faces the same prefix and the same probes.
    at = results.cells[results.cells["strategy"] == "truncate@recorded"].set_index("session_id")
    assert sorted(at.index) == sorted(ref.index)
    assert (at["original_tokens"] == ref["original_tokens"]).all()
    assert (at["retained_tokens"] <= 16384).all()
    assert set(results.table()["strategy"]) == {"reference", "none", "truncate@recorded"}


def test_the_reference_strategy_cuts_at_the_recorded_boundary() -> None:
    messages = [Message.user("one"), Message.assistant("two"), Message.user("SUMMARY"),
                Message.user("three")]
    session = Session("s", "test", "-", messages, meta={"reference_summaries": [
        {"index": 2, "source": "compact_summary", "text": "SUMMARY"}]})
    result = asyncio.run(get_strategy("reference").compact(
        CompactionRequest(messages=messages, session=session)))
    assert [m.concat_text() for m in result.context] == ["SUMMARY", "three"]
    assert result.detail["boundary"] == 2 and result.detail["scored_messages"] == messages[:2]
    with pytest.raises(ConfigError, match="session s carries no recorded summary from 'agent-'"):
        asyncio.run(get_strategy("reference", source="agent-").compact(
            CompactionRequest(messages=messages, session=session)))


def test_a_replay_table_runs_after_the_cells_and_resumes(tmp_path: Path) -> None:
    exp = _spec(tmp_path, sessions=["gen-012k-s2"], strategies=["none"],
                replay={"strategies": ["goose", "truncate", "none"], "windows": [4096],
                        "thresholds": [0.8, 0.5]})
    out = tmp_path / "run"
    results = run_experiment(exp, out, progress=False)
    replays = results.replays
    assert len(replays) == 6 and set(replays["status"]) == {"ok"}
    table = results.replay_table()
    assert list(zip(table["strategy"], table["threshold"], strict=True)) == [
        ("goose", 0.8), ("goose", 0.5), ("truncate", 0.8), ("truncate", 0.5), ("none", 0.8),
        ("none", 0.5)]
    assert set(replays.loc[replays["strategy"] == "goose", "model"]) == {"extractive"}
    stored = results.replay_results("gen-012k-s2")
    assert [r.billed_input_tokens for r in stored] == list(replays["billed_input_tokens"])
    before = list(replays["finished_at"])
    again = run_experiment(exp, out, progress=False)
    assert list(again.replays["finished_at"]) == before
    db = sqlite3.connect(out / "results.sqlite")
    assert db.execute("SELECT COUNT(*) FROM replays").fetchone() == (6,)
    db.close()
    from workbench.harness import write_report

    paths = write_report(again)
    assert paths["replay_csv"].read_text().startswith("strategy,window,threshold,sessions")
    assert "## Whole-session replay" in paths["markdown"].read_text()
    assert (paths["markdown"].parent / "replay-1.png").stat().st_size > 0


def test_goose_on_the_automatic_path_keeps_the_recorded_prompt_as_goose_archives_it() -> None:
    from workbench.context_mgmt import compact_messages
    from workbench.models import load_model

    session = load_session(ROOT / "datasets" / "gen-012k-s2.json")
    model = load_model("extractive@8k")
    direct = asyncio.run(compact_messages(model, session.messages, manual_compact=False))
    via = asyncio.run(get_strategy("goose").compact(CompactionRequest(
        messages=session.messages, model=model, window=8192, manual_compact=False)))
    archived = len(session.messages)  # Goose keeps every recorded message, then appends
    assert [m.to_goose() for m in via.context][:archived] == [
        m.to_goose() for m in direct.conversation][:archived]
    assert via.summary_text == direct.summary.message.concat_text()
    assert via.retained_tokens == direct.retained_context_tokens


def test_the_reference_row_is_counted_and_probed_as_goose_at_the_recorded_boundary(
        tmp_path: Path) -> None:
    from workbench.context_mgmt import compacted_conversation
    from workbench.tokens import context_tokens, default_estimator

    # A constructed recording whose agent summarized after three messages.
    recorded = "Summary: fix the parser in src/app.py; ValueError: bad token"
    messages = [Message.user("please fix the parser in src/app.py"),
                Message.assistant("looking").with_tool_request("t1", "shell",
                                                               {"command": "cat src/app.py"}),
                Message.user().with_tool_response("t1", "ValueError: bad token"),
                Message.user(recorded), Message.user("now add a test for it"),
                Message.assistant("done")]
    session = Session("s1", "goose-json", str(tmp_path / "s1.json"), messages, meta={
        "reference_summaries": [{"index": 3, "source": "compact_summary", "text": recorded}]})
    session.write_goose_json(tmp_path / "s1.json")
    exp = Experiment.from_dict({"name": "ref", "sessions": ["s1.json"], "models": ["extractive"],
                                "strategies": ["reference", {"name": "goose", "at": "recorded"}],
                                "base_dir": str(tmp_path)})
    results = run_experiment(exp, tmp_path / "run", progress=False)
    cells = results.cells.set_index("strategy")
    ref, goose = cells.loc["reference"], cells.loc["goose@recorded"]
    # Retained: the recorded summary in Goose's compacted context (continuation note, kept
    # prompt), not the summary alone.
    estimator = default_estimator()
    summary = Message.user(recorded)
    alone = context_tokens([summary], estimator)
    as_goose = context_tokens(compacted_conversation(messages[:3], summary), estimator)
    assert ref["retained_tokens"] == as_goose > alone
    # Both faced the same prefix and the same probe items.
    assert ref["original_tokens"] == goose["original_tokens"]
    for probe in ("files_total", "errors_total", "requests_total"):
        assert ref[probe] == goose[probe] == 1, probe
    assert ref["files_recall"] == ref["errors_recall"] == 1.0
    # A model-free row has no reply to parse: n/a, not 0 %.
    from workbench.harness.results._table import not_applicable

    row = results.table().set_index("strategy").loc["reference"]
    assert pd.isna(row["parse_success_pct"]) and "parse_success_pct" in not_applicable(row)


def test_the_run_command_says_which_rows_the_reference_row_compares_with(
        tmp_path: Path) -> None:
    from click.testing import CliRunner

    from workbench.cli import cli

    recorded = "Summary: fix the parser"
    messages = [Message.user("please fix the parser in src/app.py"), Message.assistant("ok"),
                Message.user(recorded), Message.user("now add a test"), Message.assistant("done")]
    Session("s1", "goose-json", str(tmp_path / "s1.json"), messages, meta={
        "reference_summaries": [{"index": 2, "source": "compact_summary", "text": recorded}]},
    ).write_goose_json(tmp_path / "s1.json")
    spec = tmp_path / "e.toml"
    spec.write_text('name = "r"\nsessions = ["s1.json"]\nmodels = ["extractive"]\n'
                    'strategies = ["goose", "reference"]\n', encoding="utf-8")
    result = CliRunner().invoke(cli, ["run", str(spec), "--out", str(tmp_path / "run"),
                                      "--no-progress"])
    assert result.exit_code == 0, result.output
    assert ("reference: the recorded agent's own summary at its recorded boundary, counted and "
            "probed as goose@recorded is;\ncompare it with the @recorded rows") in result.output
    row = next(line for line in result.output.splitlines() if line.startswith("reference"))
    assert row.split()[:3] == ["reference", "default", "none"] and "n/a" in row.split()
