"""``workbench tune SPEC`` prints the front and the winner and writes the winner's folder."""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner

from workbench.cli import cli

SPEC = """name = "cli-tune"
sessions = ["gen-005k-s1", "gen-012k-s2"]
models = ["extractive"]

[tune]
variant = "top3-intent"
params = { intent_limit = [1, 3] }
objective = "min-retained"
winner_name = "top3-lean"
"""


def test_tune_prints_the_front_and_winner_and_writes_its_folder(tmp_path: Path) -> None:
    spec = tmp_path / "tune.toml"
    spec.write_text(SPEC, encoding="utf-8")

    result = CliRunner().invoke(cli, ["tune", str(spec), "--out", str(tmp_path / "run"),
                                      "--prompts-dir", str(tmp_path / "prompts"),
                                      "--no-progress"])

    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert lines[0].split() == ["template", "cells", "retained_tokens", "recall",
                                "parse_success_pct", "calls_made", "calls_shared", "front"]
    assert "winner: top3-intent{intent_limit=1}" in lines
    assert ("rule: minimise retained_tokens; ties: higher probe_recall, then the label"
            in lines)
    assert "model calls made: 2 (2 by the points above), shared: 2; status finished" in lines
    assert f"winner written to {tmp_path / 'prompts' / 'top3-lean'}" in lines
    assert (tmp_path / "prompts" / "top3-lean" / "README.md").is_file()


def test_a_spec_without_a_tune_table_is_a_clear_error(tmp_path: Path) -> None:
    spec = tmp_path / "plain.toml"
    spec.write_text('sessions = ["gen-005k-s1"]\nmodels = ["extractive"]\n', encoding="utf-8")

    result = CliRunner().invoke(cli, ["tune", str(spec), "--out", str(tmp_path / "run")])

    assert result.exit_code == 1
    assert "tune: the spec has no [tune] table; add one naming the variant" in result.output


def test_the_shipped_tune_spec_is_the_readmes_example() -> None:
    import re

    from tests.conftest import ROOT

    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    block = re.search(r"<!-- tune-example -->\s*```toml\n(.+?)```", readme, re.S)
    assert block, "README.md must mark its tune example with <!-- tune-example -->"
    assert block.group(1) == (ROOT / "experiments" / "tune.toml").read_text(encoding="utf-8")


def test_the_shipped_tune_spec_runs_offline_says_what_halving_dropped_and_agrees_on_calls(
        tmp_path: Path) -> None:
    import sqlite3

    import pandas as pd

    from tests.conftest import ROOT

    result = CliRunner().invoke(cli, ["tune", str(ROOT / "experiments" / "tune.toml"),
                                      "--out", str(tmp_path / "run"),
                                      "--prompts-dir", str(tmp_path / "prompts"),
                                      "--no-progress"])

    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    # 4 prompt groups (4 render-only points each) on 2 sessions keep 2, then 1 on 4 sessions.
    dropped = [line.split(": ")[0] for line in lines if line.startswith("rung ")]
    assert dropped == ["rung 1 (2 sessions, 4 prompt groups)",
                       "rung 2 (4 sessions, 2 prompt groups)"]
    assert "successive halving dropped 8 points: " in lines[lines.index(next(
        line for line in lines if line.startswith("rung 1 ")))]
    # The total counts every cell the tune wrote; the table's column is its first part.
    front = pd.read_csv(tmp_path / "run" / "tune" / "front.csv")
    db = sqlite3.connect(tmp_path / "run" / "results.sqlite")
    made, shared = db.execute("SELECT SUM(calls_made), SUM(calls_shared) FROM cells").fetchone()
    by_table = int(front["calls_made"].sum())
    assert 0 < by_table < made
    assert (f"model calls made: {made} ({by_table} by the points above, {made - by_table} by "
            f"the points successive halving dropped), shared: {shared}; status finished") in lines
    assert "winner: lean-facts" not in lines  # fewer tokens at recall >= 0.75 than the baseline
    assert f"winner written to {tmp_path / 'prompts' / 'lean-tuned'}" in lines


def test_no_winner_folder_is_written_when_the_winner_is_the_baseline(tmp_path: Path) -> None:
    spec = tmp_path / "tune.toml"
    # The point min-retained picks (intent_limit = 1) is named as the baseline itself.
    spec.write_text(SPEC + 'baseline = "top3-intent{intent_limit=1}"\n', encoding="utf-8")

    result = CliRunner().invoke(cli, ["tune", str(spec), "--out", str(tmp_path / "run"),
                                      "--prompts-dir", str(tmp_path / "prompts"),
                                      "--no-progress"])

    assert result.exit_code == 0, result.output
    assert "winner: top3-intent{intent_limit=1}" in result.stdout.splitlines()
    assert ("no winner folder written: the winner is the baseline top3-intent{intent_limit=1} "
            "itself (use it as it is)") in result.stdout
    assert not (tmp_path / "prompts").exists()
