"""The main job: `workbench run` with no spec replays the default experiment offline.

This is the newcomer's first command, so it is tested end to end through the CLI: the shipped
datasets x shipped variants x the extractive baseline and the recorded local models x two
windows, with no key, no network and no llama.cpp: the run's process cannot import llama_cpp
even where the `local` extra is installed.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


@pytest.fixture(scope="module")
def tuned(tmp_path_factory: pytest.TempPathFactory) -> dict[str, object]:
    """`workbench tune` on the shipped tune spec, run first: the main command must not notice."""
    from workbench.harness import Experiment, expand_cells

    before = {c.cell_id for c in expand_cells(Experiment.default())}
    prompts = sorted(p.name for p in (ROOT / "prompts").iterdir())
    out = tmp_path_factory.mktemp("tune") / "tune"
    return {"cells": before, "prompts": prompts, "stdout": _workbench("tune", out), "out": out}


def _workbench(command: str, out: Path) -> str:
    """``workbench COMMAND --out OUT`` in the clone, offline and without llama.cpp; its stdout."""
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    env["WORKBENCH_USER_PATH"] = str(out.parent / "user")
    done = subprocess.run([sys.executable, "-c", WITHOUT_LLAMA_CPP, command, "--out", str(out),
                           "--no-progress"], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout


@pytest.fixture(scope="module")
def default_run(tmp_path_factory: pytest.TempPathFactory,
                tuned: dict[str, object]) -> tuple[Path, str]:
    out = tmp_path_factory.mktemp("runs") / "default"
    return out, _workbench("run", out)


@pytest.fixture(scope="module")
def verbose_output(default_run: tuple[Path, str]) -> str:
    """``workbench run --verbose`` over the finished default run: everything, printed once."""
    out, _ = default_run
    done = subprocess.run([sys.executable, "-m", "workbench", "run", "--out", str(out),
                           "--no-progress", "--verbose"], cwd=ROOT, capture_output=True,
                          text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout


WITHOUT_LLAMA_CPP = (
    "import runpy, sys\n"
    "sys.modules['llama_cpp'] = None  # any `import llama_cpp` now raises ImportError\n"
    "sys.argv = ['workbench', *sys.argv[1:]]\n"
    "runpy.run_module('workbench', run_name='__main__')\n")
"""``python -c`` program: ``python -m workbench ARGS`` in a process where llama.cpp is missing."""
RECORDINGS = ROOT / "datasets" / "recordings"


def test_after_a_tune_the_main_command_runs_the_same_cells(
        tuned: dict[str, object], default_run: tuple[Path, str]) -> None:
    from workbench.harness import Results

    # the tune wrote its winner into its run folder only, so `workbench run` (exit 0, checked
    # by the fixture) ran exactly the cells it had before the tune
    assert sorted(p.name for p in (ROOT / "prompts").iterdir()) == tuned["prompts"]
    assert set(Results.load(default_run[0]).cells["cell_id"]) == tuned["cells"]
    winner = Path(str(tuned["out"])) / "tune" / "winner" / "lean-tuned"
    assert (winner / "compaction.md").is_file()
    assert "not run: " not in default_run[1]  # no variant the replayed models lack


def test_the_default_run_answers_in_one_screen_of_120_columns(
        default_run: tuple[Path, str]) -> None:
    from workbench.harness import Results

    out, stdout = default_run
    lines = stdout.splitlines()
    assert len(lines) <= 60, len(lines)
    assert max(len(line) for line in lines) <= 120, max(lines, key=len)
    (headline,) = [line for line in lines if line.startswith("Recommendation: ")]
    assert len(headline) < 200 and headline.startswith("Recommendation: lean-facts")
    verdict = Results.load(out).verdict()
    start = next(i for i, line in enumerate(lines) if line.startswith("Per model x window:"))
    strata = lines[start + 1:start + 1 + len(verdict.strata)]
    assert [line.split(":")[0].strip() for line in strata] == [s.title for s in verdict.strata]
    extractive = strata[0]
    assert extractive.startswith("  extractive @ 8k: lean-facts, -") and " tokens (-" in extractive
    assert lines[start].startswith("Per model x window: ") and "against default" in lines[start]
    assert not any(line.endswith("…") for line in lines)  # nothing cut: wrapped, or short
    caveats = [line for line in lines if line.startswith("  caveat: ")]
    assert len(caveats) == len(verdict.recommendation.caveats)
    assert extractive.endswith(")") and "significant (Holm p " in extractive
    assert "\nErrors and failures:\n" in stdout and " x context exhausted (failed)" in stdout
    assert "Verdict: which template wins" not in stdout  # behind --verbose
    assert "run folder:" in stdout and "workbench report" in stdout


def test_verbose_prints_the_table_that_fits_120_columns_and_every_comparison(
        default_run: tuple[Path, str], verbose_output: str) -> None:
    from workbench.harness import Results

    out, _ = default_run
    stdout = verbose_output
    lines = stdout.splitlines()
    header = next(i for i, line in enumerate(lines) if line.strip().startswith("template"))
    assert lines[header].split() == ["template", "model", "window", "cells", "fail", "err", "n",
                                     "retained", "billed", "cost", "parsed", "recall", "qa",
                                     "echo"]  # `useful` is the first column given up for width
    assert lines[header - 1].split() == ["cells", "tokens", "billed/cell", "repl.", "recall",
                                         "QA", "qual."]  # the HTML report's column groups
    table = lines[header - 1:header + 2 + len(Results.load(out).table())]
    assert max(len(line) for line in table) <= 120, max(table, key=len)
    assert "more columns with --wide" in stdout
    assert "run folder:" in stdout and "workbench report" in stdout
    assert "\nVerdict: which template wins, per model x window" in stdout
    assert "\nErrors and failures:\n" in stdout
    assert " x context exhausted (failed): " in stdout
    # every model x window and the run as a whole end with a recommendation and its evidence
    strata = [line for line in lines if line.startswith("  ") and " sessions completed by all):"
              in line]
    recommendations = [line for line in lines if line.startswith("    Recommendation: ")]
    assert len(recommendations) == len(strata) > 0
    run_line = lines[lines.index(next(x for x in lines if x.startswith("Run as a whole ("))) + 1]
    assert run_line.startswith("  Recommendation: ") and "[" in run_line  # with intervals
    # strata are counted by the window they ran at: SmolLM2's 32k cap runs at its 8k context
    assert "\nRun as a whole (10 model x window, 9 by the window each ran at, " in stdout
    assert ("\n    caveat: smollm2-135m/grammar @ 32k ran at 8k: counted with "
            "smollm2-135m/grammar @ 8k\n") in stdout
    # the local models recall nothing: no evidence on recall, never "not significantly worse"
    assert "no evidence on recall in the other 6" in run_line


def test_the_default_run_answers_its_questions_offline_with_lookup(
        default_run: tuple[Path, str]) -> None:
    from workbench.harness import Results

    results = Results.load(default_run[0])
    ok = results.cells[results.cells["status"] == "ok"]
    assert ok["qa_accuracy"].notna().all() and ok["qa_questions"].gt(0).all()
    assert (ok["qa_calls"] == 0).all() and (ok["qa_cost"] == 0).all()  # lookup calls nothing
    extractive = ok[ok["model"] == "extractive"]["qa_accuracy"].mean()
    assert 0 < extractive < 1  # summaries keep some answers, not all
    assert (ok["qa_loss_exact"] > 0).any()  # and the full history answers more
    # where the session does not fit the cell's window there is no full-history reference
    assert ok[ok["original_tokens"] > ok["window"]]["qa_loss_exact"].isna().all()
    questions = sorted(p.stem for p in (default_run[0] / "qa" / "questions").glob("*.json"))
    assert questions == sorted(set(ok["session_id"]))  # sessions with a compacted cell
    assert all(results.cell_text(c, "qa.json") for c in ok["cell_id"])  # kept with each cell


def test_lean_facts_and_default_answer_the_same_questions(
        default_run: tuple[Path, str]) -> None:
    """Issue 33's closing check: the same content in two layouts answers the same questions,
    so no recommendation says `lean-facts` answers fewer than `default`."""
    import json

    from workbench.harness import Results

    out, stdout = default_run
    results = Results.load(out)
    cells = results.cells
    ok = cells[(cells["status"] == "ok") & cells["template"].isin(["default", "lean-facts"])]
    grades: dict[tuple[str, str, int], dict[str, dict[str, float]]] = {}
    for row in ok.itertuples():
        qa = json.loads(results.cell_text(row.cell_id, "qa.json") or "null")
        grades.setdefault((row.session_id, row.model, int(row.window)), {})[row.template] = {
            q["id"]: q["grade"] for q in qa["questions"]}
    pairs = [g for g in grades.values() if len(g) == 2]
    assert len(pairs) > 40  # both templates compacted the session: its cells are compared
    differ = [(key, q) for key, g in grades.items() if len(g) == 2
              for q in g["default"] if g["default"][q] != g["lean-facts"].get(q)]
    assert differ == []
    assert "on questions answered" not in stdout


def test_wide_prints_every_table_column(default_run: tuple[Path, str]) -> None:
    from workbench.harness import Results
    from workbench.harness.report._html_table import column_spec
    from workbench.harness.report._text_table import TEXT_LABELS

    out, _ = default_run
    done = subprocess.run([sys.executable, "-m", "workbench", "run", "--out", str(out),
                           "--no-progress", "--wide", "--verbose"], cwd=ROOT,
                          capture_output=True, text=True,
                          timeout=600)  # resumes: every cell is done, the table is printed
    assert done.returncode == 0, done.stderr[-3000:]
    lines = done.stdout.splitlines()
    header = next(line for line in lines if line.strip().startswith("template"))
    for column in Results.load(out).table().columns:
        label = TEXT_LABELS.get(column, column_spec(column).label)
        assert label in header, column
    assert "more columns with --wide" not in done.stdout


RECORDED = ["gen-005k-s1", "gen-012k-s2", "gen-025k-s3", "gen-050k-s4", "gen-090k-s5",
            "gen-150k-s6"]
"""The sessions the local models were recorded on (their entries' ``sessions``)."""


def test_the_recording_covers_every_local_model_cell(default_run: tuple[Path, str]) -> None:
    import json

    from workbench.harness import Results

    cells = Results.load(default_run[0]).cells
    shipped = [e["name"] for e in json.loads(
        (ROOT / "datasets" / "manifest.json").read_text(encoding="utf-8"))["sessions"]]
    assert len(shipped) >= 48
    # the extractive baseline on every shipped session, each of the 4 local model entries on
    # the 6 it was recorded on; x 4 templates x 2 windows
    assert len(cells) == (len(shipped) + 4 * len(RECORDED)) * 4 * 2
    extractive = cells[cells["model"] == "extractive"]
    assert sorted(set(extractive["session_id"])) == sorted(shipped)
    local = cells[cells["model"] != "extractive"]
    assert sorted(set(local["session_id"])) == RECORDED
    assert local.groupby("model").size().to_dict() == {
        m: 6 * 4 * 2 for m in ("gemma-270m/json-schema", "gemma-270m/no-cue",
                               "gemma-270m/prefill", "smollm2-135m/grammar")}
    misses = cells[cells["error_type"] == "CacheMiss"]
    assert misses.empty, misses[["session_id", "model", "template", "window"]].to_string()


def test_the_default_verdict_compares_templates_on_at_least_40_sessions(
        default_run: tuple[Path, str]) -> None:
    from workbench.harness import Results

    table = Results.load(default_run[0]).table()
    extractive = table[table["model"] == "extractive"]
    at_32k = extractive[extractive["window"] == 32768]
    assert len(at_32k) == 4 and at_32k["n"].nunique() == 1  # one population per window
    assert at_32k["n"].iloc[0] >= 40  # the sessions every template completed
    assert (extractive["cells"] >= 48).all()  # failures are judged over every session


def test_smollm2_under_the_grammar_gives_useful_structured_summaries_at_its_8k_context(
        default_run: tuple[Path, str]) -> None:
    from workbench.harness import Results

    results = Results.load(default_run[0])
    table = results.table()
    rows = table[table["model"] == "smollm2-135m/grammar"]
    assert len(rows) == 4 * 2  # templates x windows
    assert set(rows["window_tokenizer"]) == {"smollm2-135m"}
    assert set(rows["effective_window"]) == {8192}  # the 32k cap runs at the model's 8k
    cells = results.cells
    replies = cells[(cells["model"] == "smollm2-135m/grammar") & (cells["status"] == "ok")]
    useful = results.table(by=("model",), survivors=True).set_index("model").loc[
        "smollm2-135m/grammar", "useful_structured_pct"]
    assert len(replies) >= 8 and useful > 50, rows[["template", "window",
                                                    "useful_structured_pct"]].to_string()


def test_the_default_run_shows_retries_parse_failures_and_real_usage(
        default_run: tuple[Path, str]) -> None:
    from workbench.harness import Results

    results = Results.load(default_run[0])
    cells = results.cells
    ok = cells[cells["status"] == "ok"]
    assert (cells.loc[cells["window"] == 8192, "retries"] > 0).any()
    assert {"structured", "no_candidate"} <= set(ok["parse_outcome"])
    local = ok[ok["model"].str.startswith("gemma-270m/")]
    # Every cell is billed what its summary cost; a cell whose every call was shared (same
    # prompt as another variant or window) paid nothing: the spend sits once, on the call's cell.
    own, shared = local[local["calls_made"] > 0], local[local["calls_made"] == 0]
    assert (local["billed_input_tokens"] > 0).all() and (local["billed_output_tokens"] > 0).all()
    assert len(shared) > 0 and (shared["spent_input_tokens"] == 0).all()
    assert (shared["calls_shared"] > 0).all()
    # Replayed from the recording: nothing was paid by this run at all.
    assert (local["spent_input_tokens"] == 0).all() and len(own) > 0
    assert (ok["retained_tokens"] > 0).all()
    attempts = results.attempts
    assert set(attempts["outcome"]) >= {"ok", "context_length_exceeded"}


def test_report_turns_the_run_folder_into_files(default_run: tuple[Path, str]) -> None:
    out, _ = default_run
    done = subprocess.run([sys.executable, "-m", "workbench", "report", str(out)], cwd=ROOT,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    report = out / "report"
    for name in ("report.md", "report.html", "table.csv", "cells.csv"):
        assert (report / name).stat().st_size > 0, name
    assert "data:image/png;base64," in (report / "report.html").read_text(encoding="utf-8")


def test_rerunning_the_same_command_resumes_without_new_cells(
        default_run: tuple[Path, str]) -> None:
    from workbench.harness import Results

    out, _ = default_run
    before = Results.load(out).cells[["cell_id", "finished_at"]]
    done = subprocess.run([sys.executable, "-m", "workbench", "run", "--out", str(out),
                           "--no-progress"], cwd=ROOT, capture_output=True, text=True,
                          timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    after = Results.load(out).cells[["cell_id", "finished_at"]]
    assert before.sort_values("cell_id").equals(after.sort_values("cell_id"))


def test_every_replayed_attempt_links_to_its_recording_by_prompt_hash(
        default_run: tuple[Path, str]) -> None:
    import sqlite3

    from workbench.harness import Results

    attempts = Results.load(default_run[0]).attempts
    assert attempts["prompt_hash"].notna().all()
    replayed = attempts[(attempts["cache_hit"] == 1)]
    assert not replayed.empty
    recorded: set[str] = set()
    for name in ("local-gemma3-270m.db", "local-smollm2-135m.db"):
        recording = sqlite3.connect(RECORDINGS / name)
        recorded |= {h for (h,) in recording.execute("SELECT prompt_hash FROM responses")}
        recording.close()
    assert set(replayed["prompt_hash"]) <= recorded
    # Each ladder step sends the prompt of what it removed: a different prompt exactly when it
    # removed a different number of tool responses (a session with few tool responses can
    # round two percentages to one count, and Goose then sends that prompt again), and no
    # step removes fewer than the one before.
    for _, steps in attempts.sort_values("attempt_no").groupby("cell_id"):
        pairs = set(zip(steps["prompt_hash"], steps["tool_responses_removed"], strict=True))
        assert len(pairs) == steps["prompt_hash"].nunique() == \
            steps["tool_responses_removed"].nunique()
        assert steps["tool_responses_removed"].is_monotonic_increasing
    repeated = attempts.groupby("cell_id")["prompt_hash"].nunique() < \
        attempts.groupby("cell_id").size()
    assert repeated.any()  # the discussion sessions have so few tool responses


def test_the_default_run_replays_two_sessions_under_five_strategies(
        default_run: tuple[Path, str], verbose_output: str) -> None:
    from workbench.harness import Results

    out, _ = default_run
    stdout = verbose_output
    results = Results.load(out)
    replays = results.replays
    assert set(replays["status"]) == {"ok"}
    assert sorted(set(replays["session_id"])) == ["gen-025k-s3", "gen-050k-s4"]
    table = results.replay_table()
    assert list(dict.fromkeys(table["strategy"])) == [
        "goose", "awaken", "mask[keep_last=3]", "truncate", "none"]
    assert len(table) == 5 * 2  # strategies x thresholds
    assert "whole-session replay" in stdout
    none = table[table["strategy"] == "none"]
    assert (none["compactions"] == 0).all() and (none["overflow_turns"] > 0).all()


def test_the_readme_shows_what_the_default_run_prints(default_run: tuple[Path, str]) -> None:
    """The README's tour quotes the main command's output: it must be what the run prints
    (the spent line depends on which cell reached a shared call first, and the folder differs)."""
    import re

    out, stdout = default_run
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    block = re.search(r"<!-- run-output -->\s*```text\n(.+?)```", readme, re.S)
    assert block, "README.md must mark the default run's output with <!-- run-output -->"

    def comparable(text: str) -> list[str]:
        return [line.replace(str(out), "runs/default") for line in text.splitlines()
                if not line.startswith("spent by this run:")]

    assert comparable(block.group(1)) == comparable(stdout)
