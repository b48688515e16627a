"""``workbench tune SPEC`` prints the front and the winner, and writes only into its run folder."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest
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


def test_tune_prints_the_front_and_winner_and_writes_only_into_its_run_folder(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    spec = tmp_path / "tune.toml"
    spec.write_text(SPEC, encoding="utf-8")
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)

    result = CliRunner().invoke(cli, ["tune", str(spec), "--out", str(tmp_path / "run"),
                                      "--no-progress"])

    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert lines[0].split() == ["template", "cells", "retained_tokens", "recall",
                                "parse_success_pct", "calls_made", "calls_shared", "front"]
    assert "winner: top3-intent{intent_limit=1}" in lines
    assert ("rule: min-retained: the fewest retained tokens among the points whose mean probe "
            "recall is within 2.0 pts of the best") in lines
    assert "winner against the baseline top3-intent (paired by session, 2 sessions of the " \
           "final rung):" in lines
    assert any(line.startswith("  retained_tokens: top3-intent{intent_limit=1} - top3-intent = ")
               for line in lines)
    assert "model calls made: 2 (2 by the points above), shared: 2; status finished" in lines
    winner = tmp_path / "run" / "tune" / "winner" / "top3-lean"
    assert f"winner folder (in the run folder only): {winner}" in lines
    assert (winner / "README.md").is_file()
    assert list(work.iterdir()) == []  # nothing outside the run folder


@pytest.mark.parametrize("option", ["--prompts-dir", "--overwrite", "--no-write",
                                    "--winner-name"])
def test_the_winner_writing_options_left_the_tune(option: str) -> None:
    result = CliRunner().invoke(cli, ["tune", "x.toml", option])
    assert result.exit_code == 2 and f"No such option '{option}'" in result.output


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


def test_the_shipped_tune_spec_runs_offline_and_names_no_worse_point_winner(
        tmp_path: Path) -> None:
    import sqlite3

    import pandas as pd

    from workbench.harness import Results, verdict

    result = CliRunner().invoke(cli, ["tune", "--out", str(tmp_path / "run"), "--no-progress"])

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
    # Every point of the final rung keeps fewer tokens than the baseline and is significantly
    # worse on recall (the old rule crowned the one 7.6 points lower): nothing beats lean-facts.
    cells = Results.load(tmp_path / "run").cells
    final = cells[cells["template"].isin(front["template"])]
    recall = next(m for m in verdict(final).strata[0].metrics if m.metric == "probe_recall")
    assert recall.best == "lean-facts"
    assert sorted(recall.worse) == sorted(set(front["template"]) - {"lean-facts"})
    assert ("winner: lean-facts (the baseline): nothing beats the baseline lean-facts under the "
            "rule min-retained-safe; keep it as it is") in lines
    winner = tmp_path / "run" / "tune" / "winner" / "lean-tuned"
    assert f"winner folder (in the run folder only): {winner}" in lines
    # the export is that winner, never a point successive halving dropped on fewer sessions
    exported = CliRunner().invoke(cli, ["export", "--from-run", str(tmp_path / "run"),
                                        "--dest", str(tmp_path / "goose")])
    assert exported.exit_code == 0, exported.output
    assert "  variant: lean-facts" in exported.stdout.splitlines()
    assert ("  vs baseline lean-facts: the winner is the baseline: nothing beat it under the "
            "rule") in exported.stdout.splitlines()


def test_the_tune_takes_the_command_line_overrides(tmp_path: Path) -> None:
    result = CliRunner().invoke(cli, ["tune", "experiments/tune.toml", "--limit", "2",
                                      "--set", "tune.params.drop_fields=[[]]",
                                      "--out", str(tmp_path / "run"), "--no-progress"])

    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines()[0].startswith("overrides: --set tune.params.drop_fields=[[]]"
                                                    " --limit 2 (run folder ")
    front = pd.read_csv(tmp_path / "run" / "tune" / "front.csv")
    assert set(front["cells"]) == {2}  # two sessions, one window, one model
    spec = (tmp_path / "run" / "spec.toml").read_text(encoding="utf-8")
    assert "limit = 2" in spec


def test_export_from_a_tune_run_exports_exactly_the_winner_its_rows_give_by_the_rule(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import json

    from workbench.compaction import render
    from workbench.harness import Results
    from workbench.harness.experiment._variants import load_variant
    from workbench.tune import Objective

    spec = tmp_path / "tune.toml"
    spec.write_text(SPEC, encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    runner = CliRunner()
    tuned = runner.invoke(cli, ["tune", str(spec), "--out", "run", "--no-progress"])
    assert tuned.exit_code == 0, tuned.output

    exported = runner.invoke(cli, ["export", "--from-run", "run", "--dest", "goose"])

    assert exported.exit_code == 0, exported.output
    # recomputed here from the stored rows, by the rule and the final rung tune.json names
    record = json.loads((tmp_path / "run" / "tune" / "tune.json").read_text(encoding="utf-8"))
    objective = Objective.parse(record["rule_name"], record["recall_tolerance"])
    pick = objective.pick(Results.load(tmp_path / "run").cells, **record["final"])
    assert pick.winner == record["winner"] == "top3-intent{intent_limit=1}"
    point = load_variant(pick.winner)
    lines = exported.stdout.splitlines()
    assert f"  variant: {pick.winner}" in lines
    assert "  parameters: " + json.dumps(point.params) in lines
    digest = next(line for line in lines if line.startswith("  template hash: sha256:"))
    summary = (tmp_path / "goose" / "compaction_summary.md").read_text(encoding="utf-8")
    body = summary.split("#}\n", 1)[1]
    assert body.startswith("{% set intent_limit = 1 %}\n{% set show_concepts = true %}\n")
    context = {"user_intent": ["a", "b", "c"], "technical_concepts": ["x"]}
    assert render(body, context) == render(point.templates.summary,
                                           {**context, **point.templates.params})
    assert digest.split("sha256:")[1] in summary
    # --as-variant writes the same templates as prompts/<winner_name>/ instead
    variant = runner.invoke(cli, ["export", "--from-run", "run", "--as-variant"])
    assert variant.exit_code == 0, variant.output
    folder = tmp_path / "prompts" / "top3-lean"
    assert "wrote the variant folder prompts/top3-lean (use it as templates = [\"top3-lean\"])" \
        in variant.stdout
    assert (folder / "compaction_summary.md").read_text(encoding="utf-8").split("#}\n", 1)[1] \
        == body
    assert load_variant("top3-lean").templates.params == {}  # the values are baked in
    again = runner.invoke(cli, ["export", "--from-run", "run", "--as-variant"])
    assert again.exit_code == 1 and "exists; pass another --as-variant NAME or --overwrite" \
        in again.output
