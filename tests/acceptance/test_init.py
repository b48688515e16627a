"""`workbench init`: a starter project the user owns, which runs at once and offline; a variant
added by hand runs on the extractive baseline and is "not recorded" for the replayed models."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from tests.conftest import ROOT
from workbench.cli import cli
from workbench.harness import Results

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(cli, ["init", "proj"])
    assert result.exit_code == 0, result.output
    monkeypatch.chdir(tmp_path / "proj")
    return tmp_path / "proj"


def test_init_writes_the_starter_project(project: Path) -> None:
    files = sorted(p.relative_to(project).as_posix() for p in project.rglob("*") if p.is_file())
    for expected in ("README.md", ".gitignore", ".github/workflows/summaries.yml",
                     "sessions/README.md", "experiments/default.toml", "experiments/tune.toml",
                     "experiments/regress.toml", "recordings/local-gemma3-270m.db",
                     "recordings/local-smollm2-135m.db", "regress/regress/metrics.json",
                     "prompts/lean-facts/compaction.md", "prompts/top3-intent/variant.toml"):
        assert expected in files, expected
    spec = (project / "experiments" / "default.toml").read_text(encoding="utf-8")
    assert 'prompts_dir = "../prompts"' in spec
    assert 'cache_path = "../recordings/local-smollm2-135m.db"' in spec
    assert "../datasets/recordings" not in spec
    assert (project / "recordings" / "local-gemma3-270m.db").read_bytes() == \
        (ROOT / "datasets" / "recordings" / "local-gemma3-270m.db").read_bytes()
    workflow = (project / ".github" / "workflows" / "summaries.yml").read_text(encoding="utf-8")
    assert "- run: workbench regress experiments/regress.toml" in workflow
    readme = (project / "README.md").read_text(encoding="utf-8")
    assert "workbench regress --update" in readme  # the baseline command
    sessions = (project / "sessions" / "README.md").read_text(encoding="utf-8")
    assert 'sessions = ["../sessions/*.jsonl"]' in sessions
    assert "workbench sessions inspect" in sessions and "Claude Code" in sessions


def test_init_refuses_to_overwrite_without_force(project: Path, tmp_path: Path) -> None:
    spec = project / "experiments" / "default.toml"
    spec.write_text(spec.read_text(encoding="utf-8") + "# mine\n", encoding="utf-8")
    runner = CliRunner()

    refused = runner.invoke(cli, ["init", str(project)])

    assert refused.exit_code == 1
    assert (f"workbench init: 1 file(s) exist with other content: {spec}; nothing was written. "
            "Pass --force to replace them") in " ".join(refused.output.split())
    assert spec.read_text(encoding="utf-8").endswith("# mine\n")
    again = runner.invoke(cli, ["init", str(project), "--force"])
    assert again.exit_code == 0 and "1 file(s) written" in again.output
    assert not spec.read_text(encoding="utf-8").endswith("# mine\n")


def test_a_variant_added_by_hand_runs_on_the_baseline_and_is_not_recorded_for_replays(
        project: Path) -> None:
    runner = CliRunner()
    before = runner.invoke(cli, ["run", "--limit", "3", "--out", "runs/before", "--no-progress"])
    assert before.exit_code == 0, before.output
    mine = project / "prompts" / "mine"
    shutil.copytree(project / "prompts" / "lean-facts", mine)
    prompt = mine / "compaction.md"
    prompt.write_text(prompt.read_text(encoding="utf-8") + "\nKeep it short.\n",
                      encoding="utf-8")

    after = runner.invoke(cli, ["run", "--limit", "3", "--out", "runs/before", "--no-progress"])

    assert after.exit_code == 0, after.output
    said = " ".join(after.output.split())
    assert ("not run: mine not recorded for smollm2-135m/grammar, gemma-270m/prefill, "
            "gemma-270m/json-schema, gemma-270m/no-cue (a model entry's `templates` lists the "
            "variants it runs; a replayed model runs only those it was recorded with") in said
    cells = Results.load(project / "runs" / "before").cells
    added = cells[cells["template"] == "mine"]
    assert set(added["model"]) == {"extractive"} and len(added) == 3 * 2  # sessions x windows
    assert set(added["status"]) == {"ok"}
    old = cells[cells["template"] != "mine"]
    assert len(old) == 56 and set(old["outcome_kind"]) <= {"ok", "failed"}
