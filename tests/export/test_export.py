"""Exporting template variants to Goose's prompt override folder."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from workbench.cli import cli
from workbench.compaction import Templates, builtin_template
from workbench.errors import ConfigError, TemplateError
from workbench.export import _export, export_template, restore_backup

ROOT = Path(__file__).resolve().parents[2]
PROMPTS = ROOT / "prompts"
STAMP = "20250102T030405Z"
JSONL_WARNING = ("transcript_style = 'jsonl' cannot be expressed in Goose's templates alone: "
                 "Goose's baseline transcript format will be used")


@pytest.fixture
def goose_root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An absolute GOOSE_PATH_ROOT; returns the prompts folder Goose reads under it."""
    monkeypatch.setenv("GOOSE_PATH_ROOT", str(tmp_path / "goose-root"))
    monkeypatch.setattr(_export, "_utc_stamp", lambda: STAMP)
    return tmp_path / "goose-root" / "config" / "prompts"


def _variant(tmp_path: Path, **files: str) -> Path:
    folder = tmp_path / "my-variant"
    folder.mkdir()
    for name, text in files.items():
        (folder / f"{name}.md").write_text(text, encoding="utf-8")
    return folder


def test_export_writes_both_templates_under_an_absolute_goose_path_root(goose_root: Path) -> None:
    result = export_template("lean-facts")

    assert result.dest == goose_root
    assert result.written == [goose_root / "compaction.md", goose_root / "compaction_summary.md"]
    assert result.unchanged == [] and result.backups == [] and result.warnings == []
    for name in ("compaction.md", "compaction_summary.md"):
        assert (goose_root / name).read_bytes() == (PROMPTS / "lean-facts" / name).read_bytes()


def test_a_file_the_variant_lacks_is_exported_as_the_built_in(goose_root: Path) -> None:
    export_template("top3-intent")

    assert (goose_root / "compaction.md").read_text(encoding="utf-8") == \
        builtin_template("compaction.md")
    assert (goose_root / "compaction_summary.md").read_bytes() == \
        (PROMPTS / "top3-intent" / "compaction_summary.md").read_bytes()


def test_export_goes_to_xdg_config_home_when_goose_path_root_is_unset(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))

    result = export_template("lean-facts")

    assert result.dest == tmp_path / "xdg" / "goose" / "prompts"
    assert sorted(p.name for p in result.dest.iterdir()) == [
        ".workbench-export-history.json", "compaction.md", "compaction_summary.md"]


def test_a_relative_goose_path_root_is_ignored_like_goose_does(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GOOSE_PATH_ROOT", "relative/root")
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))

    assert export_template("lean-facts").dest == tmp_path / "xdg" / "goose" / "prompts"


def test_dest_overrides_the_goose_folder(goose_root: Path, tmp_path: Path) -> None:
    result = export_template("lean-facts", dest=tmp_path / "elsewhere")

    assert result.dest == tmp_path / "elsewhere"
    assert (tmp_path / "elsewhere" / "compaction.md").is_file()
    assert not goose_root.exists()


def test_replacing_a_file_backs_up_the_old_content_next_to_it(goose_root: Path) -> None:
    goose_root.mkdir(parents=True)
    (goose_root / "compaction.md").write_text("my old prompt {{ messages }}", encoding="utf-8")

    result = export_template("lean-facts")

    backup = goose_root / f"compaction.md.bak-{STAMP}"
    assert result.backups == [backup]
    assert backup.read_text(encoding="utf-8") == "my old prompt {{ messages }}"
    assert (goose_root / "compaction.md").read_bytes() == \
        (PROMPTS / "lean-facts" / "compaction.md").read_bytes()


def test_a_backup_is_never_overwritten_by_a_later_one_with_the_same_timestamp(
        goose_root: Path) -> None:
    export_template("lean-facts")
    export_template("top3-intent")
    export_template("lean-facts")

    first = goose_root / f"compaction_summary.md.bak-{STAMP}"
    second = goose_root / f"compaction_summary.md.bak-{STAMP}-1"
    assert first.read_bytes() == (PROMPTS / "lean-facts" / "compaction_summary.md").read_bytes()
    assert second.read_bytes() == (PROMPTS / "top3-intent" / "compaction_summary.md").read_bytes()


def test_identical_content_is_reported_unchanged_and_neither_written_nor_backed_up(
        goose_root: Path) -> None:
    export_template("lean-facts")
    before = {p.name: p.stat().st_mtime_ns for p in goose_root.iterdir()}

    result = export_template("lean-facts")

    assert result.written == [] and result.backups == []
    assert result.unchanged == [goose_root / "compaction.md", goose_root / "compaction_summary.md"]
    assert {p.name: p.stat().st_mtime_ns for p in goose_root.iterdir()} == before


def test_dry_run_reports_the_plan_and_writes_nothing(goose_root: Path) -> None:
    goose_root.mkdir(parents=True)
    (goose_root / "compaction.md").write_text("old", encoding="utf-8")

    result = export_template("lean-facts", dry_run=True)

    assert result.dry_run is True
    assert result.written == [goose_root / "compaction.md", goose_root / "compaction_summary.md"]
    assert result.backups == [goose_root / f"compaction.md.bak-{STAMP}"]
    assert sorted(p.name for p in goose_root.iterdir()) == ["compaction.md"]
    assert (goose_root / "compaction.md").read_text(encoding="utf-8") == "old"


def test_a_jsonl_variant_warns_that_goose_uses_its_own_transcript_format(
        goose_root: Path) -> None:
    assert export_template("jsonl-transcript").warnings == [JSONL_WARNING]


def test_a_template_that_does_not_compile_is_refused_and_nothing_is_written(
        goose_root: Path, tmp_path: Path) -> None:
    folder = _variant(tmp_path, compaction_summary="{% if %}")

    with pytest.raises(TemplateError) as info:
        export_template(folder)

    assert info.value.template == str(folder / "compaction_summary.md")
    assert str(info.value) == (
        f"template '{folder / 'compaction_summary.md'}': does not compile: Expected an "
        "expression, got 'end of statement block' (line 1); fix the template syntax")
    assert not goose_root.exists()


def test_a_template_reaching_python_internals_is_refused_and_existing_files_stay(
        goose_root: Path, tmp_path: Path) -> None:
    goose_root.mkdir(parents=True)
    (goose_root / "compaction_summary.md").write_text("kept", encoding="utf-8")
    folder = _variant(tmp_path, compaction="{{ messages.__class__ }}")

    with pytest.raises(TemplateError) as info:
        export_template(folder)

    assert info.value.template == str(folder / "compaction.md")
    assert sorted(p.name for p in goose_root.iterdir()) == ["compaction_summary.md"]
    assert (goose_root / "compaction_summary.md").read_text(encoding="utf-8") == "kept"


def test_a_prompt_without_the_conversation_is_exported_with_a_warning(
        goose_root: Path, tmp_path: Path) -> None:
    folder = _variant(tmp_path, compaction="Summarize.")

    result = export_template(folder)

    assert result.variant == "my-variant"
    assert result.warnings == [
        f"{folder / 'compaction.md'} never shows the conversation ({{{{ messages }}}}), "
        "so Goose's summarizer would not see the history"]


def test_an_unknown_variant_is_a_config_error_listing_the_known_ones(goose_root: Path) -> None:
    with pytest.raises(ConfigError, match=r"no variant 'nope'.*\(variants in .*prompts: "
                                          r"default, jsonl-transcript"):
        export_template("nope")
    with pytest.raises(ConfigError, match=r"no variant 'lean-fact' \(did you mean 'lean-facts'\?\)"):
        export_template("lean-fact")


def test_exported_files_are_what_goose_overrides_loads(goose_root: Path) -> None:
    export_template("lean-facts")

    loaded = Templates.goose_overrides()
    expected = Templates.from_dir(PROMPTS / "lean-facts")
    assert (loaded.compaction, loaded.summary) == (expected.compaction, expected.summary)
    assert loaded.content_hash() == expected.content_hash()


def test_restore_backup_puts_the_old_file_back_and_keeps_the_current_one(
        goose_root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    goose_root.mkdir(parents=True)
    (goose_root / "compaction.md").write_text("mine {{ messages }}", encoding="utf-8")
    backup = export_template("lean-facts").backups[0]
    monkeypatch.setattr(_export, "_utc_stamp", lambda: "20250102T030406Z")

    restored = restore_backup(backup)

    assert restored == goose_root / "compaction.md"
    assert restored.read_text(encoding="utf-8") == "mine {{ messages }}"
    assert (goose_root / "compaction.md.bak-20250102T030406Z").read_bytes() == \
        (PROMPTS / "lean-facts" / "compaction.md").read_bytes()
    assert backup.is_file()


def test_restore_backup_refuses_a_file_that_is_not_a_backup(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as info:
        restore_backup(tmp_path / "compaction.md")
    assert str(info.value) == (f"{tmp_path / 'compaction.md'} is not a backup made by "
                               "`workbench export` (expected <name>.bak-YYYYMMDDTHHMMSSZ)")


def test_cli_export_prints_what_it_wrote_and_the_backup(goose_root: Path) -> None:
    goose_root.mkdir(parents=True)
    (goose_root / "compaction.md").write_text("old", encoding="utf-8")

    result = CliRunner().invoke(cli, ["export", "lean-facts"])

    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines() == [
        f"Exporting 'lean-facts' to {goose_root}",
        f"  wrote       {goose_root / 'compaction.md'}  (old file saved to "
        f"compaction.md.bak-{STAMP})",
        f"  wrote       {goose_root / 'compaction_summary.md'}",
        "Goose uses these templates from its next compaction.",
        "Undo with: workbench export --restore (--history lists the exports; --restore --all "
        "undoes every one)",
    ]


def test_cli_export_dry_run_with_dest_writes_nothing_and_warns_on_stderr(tmp_path: Path) -> None:
    dest = tmp_path / "out"

    result = CliRunner().invoke(cli, ["export", "jsonl-transcript", "--dest", str(dest),
                                      "--dry-run"])

    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines() == [
        f"Exporting 'jsonl-transcript' to {dest} (dry run: nothing written)",
        f"  would write {dest / 'compaction.md'}",
        f"  would write {dest / 'compaction_summary.md'}",
    ]
    assert result.stderr == f"Warning: {JSONL_WARNING}\n"
    assert not dest.exists()


def test_cli_export_of_unchanged_templates_says_there_is_nothing_to_do(goose_root: Path) -> None:
    export_template("lean-facts")

    result = CliRunner().invoke(cli, ["export", "lean-facts"])

    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines()[-1] == "Nothing to do: Goose already uses these templates."


def test_cli_export_of_a_broken_template_fails_naming_the_file(
        goose_root: Path, tmp_path: Path) -> None:
    folder = _variant(tmp_path, compaction="{{ 1 / 0 }}")

    result = CliRunner().invoke(cli, ["export", str(folder)])

    assert result.exit_code == 1
    assert result.stderr == (f"Error: template '{folder / 'compaction.md'}': failed to render: "
                             "ZeroDivisionError: division by zero; check the variables it uses\n")
    assert not goose_root.exists()
