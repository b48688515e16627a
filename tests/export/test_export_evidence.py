"""Export a run's winner with its evidence as a Jinja comment, and undo the last export."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from workbench.cli import cli
from workbench.compaction import render
from workbench.errors import ConfigError
from workbench.export import (
    LAST_EXPORT,
    export_from_run,
    export_template,
    record_export,
    restore_last_export,
)
from workbench.harness import Experiment, run_experiment
from workbench.harness.experiment._variants import load_variant


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("export") / "run"
    run_experiment(Experiment.from_dict({
        "name": "ev", "sessions": ["gen-005k-s1", "gen-012k-s2"], "models": ["extractive"],
        "templates": ["default", "top3-intent{intent_limit=1}"]}), out,
        progress=False)
    return out


def test_the_winner_is_exported_with_its_evidence_as_a_jinja_comment(run_dir: Path,
                                                                      tmp_path: Path) -> None:
    dest = tmp_path / "goose"

    result, evidence = export_from_run(run_dir, "min-retained", dest=dest)

    assert evidence.variant == "top3-intent{intent_limit=1}"
    assert evidence.params == {"intent_limit": 1, "show_concepts": True}
    summary = (dest / "compaction_summary.md").read_text()
    assert summary.startswith("{#\n  Exported by `workbench export --from-run`.\n"
                              "  variant: top3-intent{intent_limit=1}\n"
                              '  parameters: {"intent_limit": 1, "show_concepts": true}\n'
                              f"  run: {run_dir.resolve()}\n"
                              "  rule: minimise retained_tokens; ties: higher probe_recall, "
                              "then the label\n")
    assert "  vs baseline default: probe_recall: top3-intent{intent_limit=1} - default = " \
        in summary
    assert "#}\n{% set intent_limit = 1 %}\n" in summary
    point = load_variant("top3-intent{intent_limit=1}")
    assert render(summary, {"user_intent": ["a", "b"]}) == \
        render(point.templates.summary, {"user_intent": ["a", "b"], **point.templates.params}) == "# Conversation Summary\n\n## User Intent\n- a"
    assert [p.name for p in result.written] == ["compaction.md", "compaction_summary.md"]


def test_restore_undoes_the_last_export_and_only_once(run_dir: Path, tmp_path: Path) -> None:
    dest = tmp_path / "goose"
    dest.mkdir()
    (dest / "compaction.md").write_text("mine", encoding="utf-8")
    export_from_run(run_dir, "max-recall", dest=dest)

    lines = restore_last_export(dest)

    assert (dest / "compaction.md").read_text() == "mine"
    assert not (dest / "compaction_summary.md").exists()
    assert lines[0].startswith(f"restored {dest / 'compaction.md'} from compaction.md.bak-")
    assert lines[1] == f"removed {dest / 'compaction_summary.md'} (the export created it)"
    with pytest.raises(ConfigError, match=f"nothing to restore: no export recorded in {dest}"):
        restore_last_export(dest)


def test_restore_refuses_to_overwrite_a_file_edited_after_the_export(tmp_path: Path) -> None:
    dest = tmp_path / "goose"
    dest.mkdir()
    (dest / "compaction.md").write_text("mine", encoding="utf-8")
    export_template("lean-facts", dest=dest)

    result = export_template("top3-intent", dest=dest)
    record_export(result)
    (dest / "compaction_summary.md").write_text("edited by hand", encoding="utf-8")

    with pytest.raises(ConfigError, match="compaction_summary.md changed since the export of "
                                          "'top3-intent'; not restoring over it; its backup is"):
        restore_last_export(dest)
    assert (dest / LAST_EXPORT).is_file()


def test_cli_dry_run_from_a_run_shows_the_evidence_and_a_diff_and_writes_nothing(
        run_dir: Path, tmp_path: Path) -> None:
    dest = tmp_path / "goose"

    result = CliRunner().invoke(cli, ["export", "--from-run", str(run_dir), "--rule",
                                      "min-retained", "--dest", str(dest), "--dry-run"])

    assert result.exit_code == 0, result.output
    assert f"Winner of {run_dir}:" in result.stdout
    assert "  variant: top3-intent{intent_limit=1}" in result.stdout
    assert "+{% set intent_limit = 1 %}" in result.stdout
    assert not dest.exists()
    restore = CliRunner().invoke(cli, ["export", "--restore", "--dest", str(dest)])
    assert restore.exit_code == 1 and "nothing to restore" in restore.output
    both = CliRunner().invoke(cli, ["export", "lean-facts", "--restore"])
    assert both.exit_code == 2 and "give exactly one of VARIANT, --from-run RUN_DIR or --restore" \
        in both.output
