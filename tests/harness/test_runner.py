"""The runner over hand-built sessions with scripted models: rows, errors, the ladder, budget."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from workbench.compaction import Usage
from workbench.errors import ConfigError, ModelCallError
from workbench.harness import (
    Cell,
    DryRunEstimate,
    Experiment,
    Results,
    ResultsStore,
    run_experiment,
    run_experiment_async,
)
from workbench.harness.run._estimate import OUTPUT_TOKENS_ESTIMATE
from workbench.messages import Message
from workbench.sessions import Session
from workbench.testing import ScriptedModel
from workbench.tokens import default_estimator

REPLY = ('<analysis>checked</analysis>\n```json\n{"user_intent": ["fix the bug in app.py"], '
         '"current_work": "editing app.py"}\n```')
USAGE = Usage(model="scripted", input_tokens=100, output_tokens=50, cost=0.001)


def write_session(folder: Path, sid: str, tool_outputs: list[str] | None = None) -> Path:
    messages = [Message.user(f"fix the bug in app.py ({sid})")]
    for i, out in enumerate(tool_outputs or ["print(1)"]):
        messages.append(Message.assistant("looking").with_tool_request(f"t{i}", "shell",
                                                                       {"command": "cat app.py"}))
        messages.append(Message.user().with_tool_response(f"t{i}", out))
    messages.append(Message.assistant("fixed it"))
    path = folder / f"{sid}.json"
    Session(sid, "goose-json", str(path), messages).write_goose_json(path)
    return path


def experiment(folder: Path, **over: Any) -> Experiment:
    data: dict[str, Any] = {"name": "t", "sessions": ["s*.json"], "models": ["extractive"],
                            "base_dir": str(folder)}
    data.update(over)
    return Experiment.from_dict(data)


def scripted(**kw: Any) -> Any:
    def factory(cell: Cell) -> ScriptedModel:
        return ScriptedModel([REPLY], usage=USAGE, **kw)
    return factory


def rows(out: Path, table: str = "cells") -> list[dict[str, Any]]:
    db = sqlite3.connect(out / "results.sqlite")
    db.row_factory = sqlite3.Row
    return [dict(r) for r in db.execute(f"SELECT * FROM {table} ORDER BY rowid")]


def test_ok_cells_record_tokens_usage_and_the_summary(tmp_path: Path) -> None:
    path = write_session(tmp_path, "s1")
    write_session(tmp_path, "s2")
    out = tmp_path / "run"
    results = run_experiment(experiment(tmp_path, windows=[None, "8k"]), out,
                             model_factory=scripted(), progress=False)
    assert isinstance(results, Results)
    assert len(results.cells) == 4 and set(results.cells["status"]) == {"ok"}
    row = rows(out)[0]
    from workbench.sessions import load_session
    session = load_session(path)
    assert row["original_tokens"] == default_estimator().count_context_tokens(session.messages)
    assert (row["attempts"], row["retries"], row["max_removal_percent"]) == (1, 0, 0)
    assert (row["billed_input_tokens"], row["billed_output_tokens"], row["cost"]) == (100, 50, 0.001)
    assert (row["parse_outcome"], row["structured"], row["error_type"]) == ("structured", 1, None)
    summary = (out / row["summary_path"]).read_text()
    assert summary.startswith("# Conversation Summary") and "fix the bug in app.py" in summary
    assert row["summary_tokens"] == default_estimator().count_text_tokens(summary.rstrip("\n"))
    assert row["retained_tokens"] > row["summary_tokens"]
    assert [a["outcome"] for a in rows(out, "attempts")] == ["ok"] * 4
    assert results.status == "finished"


def test_a_run_returns_the_results_a_fresh_load_reads_and_leaves_no_log_beside_the_store(
        tmp_path: Path) -> None:
    import pandas as pd
    from pandas.testing import assert_frame_equal

    write_session(tmp_path, "s1")
    write_session(tmp_path, "s2")
    out = tmp_path / "run"
    returned = run_experiment(experiment(tmp_path, windows=[None, "8k"]), out,
                              model_factory=scripted(), progress=False)
    # the store was closed (its write-ahead log checkpointed into the file) before returning
    assert sorted(p.name for p in out.iterdir() if p.name.startswith("results")) == [
        "results.sqlite"]
    loaded = Results.load(out)
    for name in ("cells", "attempts", "runs"):
        assert_frame_equal(getattr(returned, name), getattr(loaded, name))
    db = sqlite3.connect(out / "results.sqlite")  # the frames are what read_sql_query builds
    for table in ("attempts", "runs"):
        expected = pd.read_sql_query(f"SELECT * FROM {table} ORDER BY rowid", db)
        assert_frame_equal(getattr(loaded, table), expected)
    assert returned.status == "finished" and len(returned.cells) == 4


def test_the_first_call_goes_out_before_the_writer_thread_makes_a_new_folders_store(
        tmp_path: Path) -> None:
    write_session(tmp_path, "s1")
    out = tmp_path / "out"
    seen: list[bool] = []

    class Watching(ScriptedModel):
        async def complete(self, system: str, messages: list[Message]) -> Any:
            seen.append((out / "results.sqlite").exists())
            return await super().complete(system, messages)

    results = run_experiment(experiment(tmp_path, repeats=3), out,
                             model_factory=lambda cell: Watching([REPLY], usage=USAGE),
                             progress=False)
    assert seen[0] is False and len(seen) == 3
    assert list(results.cells["status"]) == ["ok"] * 3 and len(rows(out, "runs")) == 1


def test_the_writer_thread_starts_once_the_first_wave_is_out(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from workbench.harness.results._writer import CellWriter

    write_session(tmp_path, "s1")
    calls: list[int] = []
    started: list[int] = []
    original = CellWriter.start

    def start(self: CellWriter) -> None:
        started.append(len(calls))
        original(self)

    class Counting(ScriptedModel):
        async def complete(self, system: str, messages: list[Message]) -> Any:
            calls.append(1)
            return await super().complete(system, messages)

    monkeypatch.setattr(CellWriter, "start", start)
    run_experiment(experiment(tmp_path, repeats=6, concurrency=3), tmp_path / "out",
                   model_factory=lambda cell: Counting([REPLY], usage=USAGE, latency=0.05),
                   progress=False)
    assert started[0] == 3 and len(calls) == 6  # every slot held, no reply in yet


def _watch_the_writer(monkeypatch: pytest.MonkeyPatch) -> tuple[list[int], list[int],
                                                                  list[int], type]:
    """Patches `CellWriter.start` to note how many calls went out and how many replies came
    back when the writer thread starts; returns (calls, replies, started, a counting model)."""
    from workbench.harness.results._writer import CellWriter

    calls: list[int] = []
    replies: list[int] = []
    started: list[int] = []
    original = CellWriter.start

    def start(self: CellWriter) -> None:
        if not started:
            started.extend([len(calls), len(replies)])
        original(self)

    class Counting(ScriptedModel):
        async def complete(self, system: str, messages: list[Message]) -> Any:
            calls.append(1)
            try:
                return await super().complete(system, messages)
            finally:
                replies.append(1)

    monkeypatch.setattr(CellWriter, "start", start)
    return calls, replies, started, Counting


def test_with_replies_that_come_back_at_once_the_writer_thread_starts_at_the_runs_end(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from workbench.harness.run.executors import _local

    monkeypatch.setattr(_local, "CALLS_OUT_FALLBACK_SECONDS", 60.0)  # not reached
    write_session(tmp_path, "s1")
    calls, replies, started, counting = _watch_the_writer(monkeypatch)
    out = tmp_path / "out"
    results = run_experiment(experiment(tmp_path, repeats=6, concurrency=3), out,
                             model_factory=lambda cell: counting([REPLY], usage=USAGE),
                             progress=False)
    assert started == [6, 6]  # every cell done, and held for the thread until then
    assert list(results.cells["status"]) == ["ok"] * 6 and len(rows(out)) == 6
    assert rows(out, "runs")[0]["status"] == "finished"


def test_when_the_slots_never_all_fill_the_writer_thread_starts_while_the_calls_are_out(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from workbench.harness.run.executors import _local

    monkeypatch.setattr(_local, "CALLS_OUT_FALLBACK_SECONDS", 0.05)
    write_session(tmp_path, "s1")
    calls, replies, started, counting = _watch_the_writer(monkeypatch)
    run_experiment(experiment(tmp_path, repeats=2, concurrency=8), tmp_path / "out",
                   model_factory=lambda cell: counting([REPLY], usage=USAGE, latency=0.5),
                   progress=False)
    assert started == [2, 0] and len(replies) == 2  # both calls out, no reply in yet


def test_a_failing_cell_is_recorded_and_the_run_goes_on(tmp_path: Path) -> None:
    write_session(tmp_path, "s1")
    write_session(tmp_path, "s2")

    def factory(cell: Cell) -> ScriptedModel:
        if cell.session_id == "s2":
            return ScriptedModel(always_raise=ModelCallError("provider exploded", "scripted"))
        return ScriptedModel([REPLY], usage=USAGE)

    out = tmp_path / "run"
    run_experiment(experiment(tmp_path), out, model_factory=factory, progress=False)
    by_session = {r["session_id"]: r for r in rows(out)}
    assert by_session["s1"]["status"] == "ok"
    bad = by_session["s2"]
    assert (bad["status"], bad["error_message"], bad["attempts"]) == ("error", "provider exploded", 1)
    assert bad["error_type"] == "CompactionCallFailed"
    assert "ModelCallError: provider exploded" in bad["traceback"]
    assert bad["parse_outcome"] is None and bad["cost"] is None


def test_a_small_window_drives_the_removal_ladder_and_counts_retries(tmp_path: Path) -> None:
    big = " ".join(["word"] * 1000)
    write_session(tmp_path, "s1", [big, big, big, big])
    out = tmp_path / "run"
    run_experiment(experiment(tmp_path), out, model_factory=scripted(window=3000), progress=False)
    (row,) = rows(out)
    assert (row["status"], row["attempts"], row["retries"], row["max_removal_percent"]) == (
        "ok", 4, 3, 50)
    assert row["tool_responses_removed"] == 2
    attempts = rows(out, "attempts")
    assert [(a["attempt_no"], a["removal_percent"], a["outcome"]) for a in attempts] == [
        (1, 0, "context_length_exceeded"), (2, 10, "context_length_exceeded"),
        (3, 20, "context_length_exceeded"), (4, 50, "ok")]
    assert row["billed_input_tokens"] == 100  # rejected calls billed nothing here


def test_the_budget_stops_scheduling_and_is_recorded(tmp_path: Path,
                                                    caplog: pytest.LogCaptureFixture) -> None:
    for sid in ("s1", "s2", "s3"):
        write_session(tmp_path, sid)
    out = tmp_path / "run"
    results = run_experiment(experiment(tmp_path, concurrency=1, budget={"max_tokens": 100}), out,
                             model_factory=scripted(), progress=False)
    assert len(results.cells) == 1
    assert results.status == "budget_reached"
    assert ("budget reached (150 billed tokens >= max_tokens 100); 2 cell(s) not run. Raise "
            "[budget] in the spec and run again to continue.") in caplog.text


def test_dry_run_estimates_without_calling_or_writing(tmp_path: Path) -> None:
    write_session(tmp_path, "s1")
    calls: list[Cell] = []
    out = tmp_path / "run"
    est = run_experiment(experiment(tmp_path, models=["extractive", "openai/gpt-4o-mini"]), out,
                         dry_run=True, model_factory=calls.append)
    assert isinstance(est, DryRunEstimate)
    assert (est.cells, est.to_run) == (2, 2)
    assert est.estimated_tokens > 2 * OUTPUT_TOKENS_ESTIMATE
    tokens_in = est.estimated_tokens // 2 - OUTPUT_TOKENS_ESTIMATE  # same transcript twice
    # extractive is free; gpt-4o-mini at litellm's bundled prices ($0.15 / $0.60 per 1M)
    assert est.estimated_cost == pytest.approx(tokens_in * 0.15e-6 + OUTPUT_TOKENS_ESTIMATE * 0.6e-6)
    assert calls == [] and not out.exists()


async def test_run_experiment_works_inside_a_running_event_loop(tmp_path: Path) -> None:
    write_session(tmp_path, "s1")
    results = run_experiment(experiment(tmp_path), tmp_path / "run", model_factory=scripted(),
                             progress=False)
    assert list(results.cells["status"]) == ["ok"]
    again = await run_experiment_async(experiment(tmp_path), tmp_path / "run",
                                       model_factory=scripted(), progress=False)
    assert len(again.cells) == 1


def test_api_keys_never_reach_the_run_folder(tmp_path: Path) -> None:
    write_session(tmp_path, "s1")
    out = tmp_path / "run"
    exp = experiment(tmp_path, models=[{"model": "openai/x", "params": {"api_key": "sk-SECRET",
                                                                        "temperature": 0}}])
    run_experiment(exp, out, model_factory=scripted(), progress=False)
    for path in out.rglob("*"):
        if path.is_file():
            assert b"sk-SECRET" not in path.read_bytes(), path
    spec = json.loads(rows(out, "runs")[0]["spec_json"])
    assert spec["models"][0]["params"] == {"temperature": 0}
    assert Results.load(out).spec.models[0].params == {"temperature": 0}


def test_a_variant_toml_transcript_style_reaches_the_summarizer(tmp_path: Path) -> None:
    write_session(tmp_path, "s1")
    variant = tmp_path / "mine"
    variant.mkdir()
    (variant / "variant.toml").write_text('transcript_style = "jsonl"\n')
    models: list[ScriptedModel] = []

    def factory(cell: Cell) -> ScriptedModel:
        models.append(ScriptedModel([REPLY], usage=USAGE))
        return models[-1]

    run_experiment(experiment(tmp_path, templates=["default", "mine"]), tmp_path / "run",
                   model_factory=factory, progress=False)
    systems = [m.calls[0][0] for m in models]
    assert sum('{"role":"user"' in s for s in systems) == 1
    assert sum("[user]: fix the bug" in s for s in systems) == 1


def test_an_unknown_variant_fails_before_any_cell_runs(tmp_path: Path) -> None:
    write_session(tmp_path, "s1")
    with pytest.raises(ConfigError, match=r"^templates: no variant 'nope': looked for a folder "
                                          r"at .*/nope, .*/prompts/nope"):
        run_experiment(experiment(tmp_path, templates=["nope"]), tmp_path / "run",
                       model_factory=scripted(), progress=False)
    assert not (tmp_path / "run").exists()


def test_the_run_command_prints_the_table_folder_and_report_hint(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from workbench.cli import cli

    write_session(tmp_path, "s1")
    spec = tmp_path / "exp.toml"
    spec.write_text('name = "cli"\nsessions = ["s1.json"]\nmodels = ["extractive"]\n')
    out = tmp_path / "run"
    result = CliRunner().invoke(cli, ["run", str(spec), "--out", str(out), "--no-progress"])
    assert result.exit_code == 0, result.output
    assert "extractive" in result.output
    assert f"run folder: {out} (1 cells, 0 failed, 0 errors, status finished)" in result.output
    assert f"report: workbench report {out}" in result.output
    again = CliRunner().invoke(cli, ["run", str(spec), "--out", str(out), "--dry-run"])
    assert "dry run: 1 cells, 0 to run, ~0 tokens, estimated cost $0.0000" in again.output


def test_a_variant_name_resolves_beside_the_spec_then_the_working_folder_then_the_project(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from workbench._resources import shipped
    from workbench.harness.experiment._variants import load_variant

    spec_dir, work = tmp_path / "spec", tmp_path / "work"
    for folder, text in ((spec_dir / "my-top3", "beside the spec"),
                         (work / "prompts" / "my-top3", "in the working folder"),
                         (work / "prompts" / "lean-facts", "a working-folder copy")):
        folder.mkdir(parents=True)
        (folder / "compaction_summary.md").write_text(text, encoding="utf-8")
    (work / "only-here").mkdir()
    (work / "only-here" / "compaction_summary.md").write_text("cwd", encoding="utf-8")
    monkeypatch.chdir(work)
    exp = Experiment.from_dict({"name": "v", "sessions": ["s.json"], "models": ["extractive"],
                                "base_dir": str(spec_dir)})

    mine = load_variant("my-top3", exp)
    assert (mine.name, mine.folder) == ("my-top3", spec_dir / "my-top3")  # the label stays
    assert mine.templates.summary == "beside the spec"
    assert load_variant("only-here", exp).templates.summary == "cwd"
    # The working folder comes before the project's prompts/.
    assert load_variant("lean-facts", exp).templates.summary == "a working-folder copy"
    # then the spec's prompts_dir, by default the shipped variants (the package's data)
    assert load_variant("top3-intent", exp).folder == shipped("prompts", "top3-intent")
    (spec_dir / "my-top3" / "compaction_summary.md").unlink()
    (spec_dir / "my-top3").rmdir()
    assert load_variant("my-top3", exp).templates.summary == "in the working folder"


def test_a_new_folder_whose_executor_cannot_start_keeps_an_interrupted_run_row(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from workbench.harness.run import _runner

    class NoCluster:
        kind = "local"

        def start(self) -> dict[str, Any]:
            raise ConnectionError("no cluster at ray://nowhere:10001")

        def close(self) -> None:
            pass

    write_session(tmp_path, "s1")
    monkeypatch.setattr(_runner, "_executor", lambda *args: NoCluster())
    out = tmp_path / "run"
    with pytest.raises(ConnectionError, match="no cluster"):
        run_experiment(experiment(tmp_path), out, model_factory=scripted(), progress=False)
    runs = rows(out, "runs")
    assert [(r["status"], r["executor"]) for r in runs] == [("interrupted", None)]
    assert rows(out) == []
    # the spec's copy, which a new folder's writer would have written with its store
    assert Experiment.from_toml(out / "spec.toml").name == "t"


def test_a_new_folder_and_a_resumed_one_store_the_same_run_rows(tmp_path: Path) -> None:
    write_session(tmp_path, "s1")
    write_session(tmp_path, "s2")
    fresh, resumed = tmp_path / "fresh", tmp_path / "resumed"
    run_experiment(experiment(tmp_path), fresh, model_factory=scripted(), progress=False)
    resumed.mkdir()
    ResultsStore(resumed / "results.sqlite").close()  # an (empty) store: the runner reads it first
    run_experiment(experiment(tmp_path), resumed, model_factory=scripted(), progress=False)
    volatile = {"run_id", "started_at", "finished_at", "cluster", "attempt_id", "latency_ms"}

    def stable(out: Path, table: str) -> list[dict[str, Any]]:
        kept = [{k: v for k, v in r.items() if k not in volatile} for r in rows(out, table)]
        # rows are stored in the order cells finish, which depends on scheduling
        return sorted(kept, key=lambda r: (r.get("cell_id") or "", r.get("attempt_no") or 0))

    for table in ("runs", "cells", "attempts"):
        assert stable(fresh, table) == stable(resumed, table), table
    assert [r["status"] for r in rows(fresh, "runs")] == ["finished"]


def test_a_resumed_run_and_one_with_an_error_cell_return_what_a_fresh_load_reads(
        tmp_path: Path) -> None:
    from pandas.testing import assert_frame_equal

    write_session(tmp_path, "s1")
    write_session(tmp_path, "s2")
    out = tmp_path / "run"

    def failing(cell: Cell) -> ScriptedModel:  # s2's cell fails; its row keeps the error
        if cell.session_id == "s2":
            return ScriptedModel([ModelCallError("provider down")], usage=USAGE)
        return ScriptedModel([REPLY], usage=USAGE)

    for factory, retry in ((failing, False), (scripted(), True)):  # a new folder, a resumed one
        returned = run_experiment(experiment(tmp_path), out, model_factory=factory,
                                  retry_errors=retry, progress=False)
        loaded = Results.load(out)
        for name in ("cells", "attempts", "runs"):
            assert_frame_equal(getattr(returned, name), getattr(loaded, name))
        statuses = sorted(returned.cells["status"])
        assert statuses == (["error", "ok"] if not retry else ["ok", "ok"])
    assert list(returned.runs["status"]) == ["finished", "finished"]
