"""Export a run's winner with its evidence as a Jinja comment; the export history and restores."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from workbench.cli import cli
from workbench.compaction import render
from workbench.errors import ConfigError
from workbench.export import (
    EXPORT_HISTORY,
    export_from_run,
    export_history,
    export_template,
    restore_all_exports,
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
                              f"  template hash: sha256:{evidence.template_hash}\n"
                              f"  run: {run_dir.resolve()}\n"
                              "  rule: min-retained: the fewest retained tokens among the points "
                              "whose mean probe recall is within 2.0 pts of the best\n")
    assert "  vs baseline default: probe_recall: top3-intent{intent_limit=1} - default = " \
        in summary
    assert export_history(dest)[0]["hash"] == evidence.template_hash
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

    export_template("top3-intent", dest=dest)
    (dest / "compaction_summary.md").write_text("edited by hand", encoding="utf-8")

    with pytest.raises(ConfigError, match="compaction_summary.md changed since the export of "
                                          "'top3-intent'; not restoring over it; its backup is"):
        restore_last_export(dest)
    assert len(export_history(dest)) == 2  # nothing was undone


def test_cli_dry_run_from_a_run_shows_the_evidence_and_a_diff_and_writes_nothing(
        run_dir: Path, tmp_path: Path) -> None:
    dest = tmp_path / "goose"

    result = CliRunner().invoke(cli, ["export", "--from-run", str(run_dir), "--rule",
                                      "min-retained", "--dest", str(dest), "--dry-run"])

    assert result.exit_code == 0, result.output
    assert f"Winner of {run_dir} (recomputed from its stored cells by the rule):" in result.stdout
    assert "  variant: top3-intent{intent_limit=1}" in result.stdout
    assert "+{% set intent_limit = 1 %}" in result.stdout
    assert not dest.exists()
    restore = CliRunner().invoke(cli, ["export", "--restore", "--dest", str(dest)])
    assert restore.exit_code == 1 and "nothing to restore" in restore.output
    both = CliRunner().invoke(cli, ["export", "lean-facts", "--restore"])
    assert both.exit_code == 2 and ("give exactly one of VARIANT, --from-run RUN_DIR, --restore or "
                                    "--history") in both.output


def test_one_restore_undoes_one_export_and_restore_all_gives_back_the_original_bytes(
        tmp_path: Path) -> None:
    dest = tmp_path / "goose"
    dest.mkdir()
    original = b"my own prompt \xe2\x80\x94 {{ messages }}\r\n"
    (dest / "compaction.md").write_bytes(original)
    export_template("lean-facts", dest=dest)
    after_first = {p.name: p.read_bytes() for p in dest.glob("compaction*.md")}
    export_template("top3-intent", dest=dest)
    assert [e["variant"] for e in export_history(dest)] == ["lean-facts", "top3-intent"]

    restore_last_export(dest)  # one step: the folder as the first export left it

    assert {p.name: p.read_bytes() for p in dest.glob("compaction*.md")} == after_first
    assert [e["variant"] for e in export_history(dest)] == ["lean-facts"]
    export_template("jsonl-transcript", dest=dest)

    lines = restore_all_exports(dest)  # back before the first export, byte for byte

    assert (dest / "compaction.md").read_bytes() == original
    assert not (dest / "compaction_summary.md").exists()  # the first export created it
    assert lines[-1] == f"undid all 2 export(s): {dest} is as it was before the first"
    assert export_history(dest) == [] and not (dest / EXPORT_HISTORY).exists()
    with pytest.raises(ConfigError, match="nothing to restore"):
        restore_all_exports(dest)


def test_the_cli_lists_the_history_and_restores_one_step_or_all(tmp_path: Path) -> None:
    dest = tmp_path / "goose"
    dest.mkdir()
    (dest / "compaction.md").write_text("original {{ messages }}", encoding="utf-8")
    runner = CliRunner()
    for variant in ("lean-facts", "top3-intent"):
        assert runner.invoke(cli, ["export", variant, "--dest", str(dest)]).exit_code == 0

    listed = runner.invoke(cli, ["export", "--history", "--dest", str(dest)])

    assert listed.exit_code == 0, listed.output
    lines = listed.stdout.splitlines()
    assert lines[0] == f"exports into {dest}, oldest first (2):"
    assert lines[1].startswith("  1. ") and "'lean-facts', template hash " in lines[1]
    assert lines[1].endswith(": compaction.md (replaced), compaction_summary.md (new)")
    assert lines[2].startswith("  2. ") and "'top3-intent', template hash " in lines[2]
    assert lines[2].endswith(": compaction.md (replaced), compaction_summary.md (replaced)")
    one = runner.invoke(cli, ["export", "--restore", "--dest", str(dest)])
    assert one.exit_code == 0 and "undid the export of 'top3-intent' (1 earlier export left" \
        in one.stdout
    assert (dest / "compaction_summary.md").is_file()
    every = runner.invoke(cli, ["export", "--restore", "--all", "--dest", str(dest)])
    assert every.exit_code == 0, every.output
    assert (dest / "compaction.md").read_text(encoding="utf-8") == "original {{ messages }}"
    assert not (dest / "compaction_summary.md").exists()
    bad = runner.invoke(cli, ["export", "--all", "--dest", str(dest)])
    assert bad.exit_code == 2 and "--all goes with --restore" in bad.output


def test_a_record_from_an_older_workbench_is_read_as_a_history_of_one(tmp_path: Path) -> None:
    import json

    from workbench.export import LAST_EXPORT

    dest = tmp_path / "goose"
    dest.mkdir()
    export_template("lean-facts", dest=dest)
    record = dest / EXPORT_HISTORY
    legacy = export_history(dest)[0]
    record.unlink()
    (dest / LAST_EXPORT).write_text(json.dumps(legacy), encoding="utf-8")

    assert [e["variant"] for e in export_history(dest)] == ["lean-facts"]
    restore_last_export(dest)
    assert not (dest / "compaction.md").exists() and not (dest / LAST_EXPORT).exists()
