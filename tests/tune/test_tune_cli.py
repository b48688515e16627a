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
    assert "model calls made: 2, shared: 2; status finished" in lines
    assert f"winner written to {tmp_path / 'prompts' / 'top3-lean'}" in lines
    assert (tmp_path / "prompts" / "top3-lean" / "README.md").is_file()


def test_a_spec_without_a_tune_table_is_a_clear_error(tmp_path: Path) -> None:
    spec = tmp_path / "plain.toml"
    spec.write_text('sessions = ["gen-005k-s1"]\nmodels = ["extractive"]\n', encoding="utf-8")

    result = CliRunner().invoke(cli, ["tune", str(spec), "--out", str(tmp_path / "run")])

    assert result.exit_code == 1
    assert "tune: the spec has no [tune] table; add one naming the variant" in result.output
