"""Export writes the template pair together or not at all, writes through symlinks, and
refuses a folder that holds no templates."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import ROOT
from workbench.compaction import builtin_template
from workbench.errors import ConfigError
from workbench.export import _export, export_template

LEAN = ROOT / "prompts" / "lean-facts"
STAMP = "20250102T030405Z"
NAMES = ("compaction.md", "compaction_summary.md")


@pytest.fixture
def dest(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setattr(_export, "_utc_stamp", lambda: STAMP)
    folder = tmp_path / "prompts"
    folder.mkdir()
    return folder


def fail_on_rename(monkeypatch: pytest.MonkeyPatch, number: int) -> list[tuple[str, str]]:
    """Make the `number`-th os.replace fail; returns the renames seen."""
    real = os.replace
    seen: list[tuple[str, str]] = []

    def replace(src: Any, dst: Any) -> None:
        seen.append((str(src), str(dst)))
        if len(seen) == number:
            raise OSError(28, "No space left on device")
        real(src, dst)

    monkeypatch.setattr(_export.os, "replace", replace)
    return seen


def test_a_failure_renaming_the_second_file_puts_the_first_back(
        dest: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for name in NAMES:
        (dest / name).write_text(f"old {name}\n", encoding="utf-8")
    seen = fail_on_rename(monkeypatch, 2)
    with pytest.raises(ConfigError, match=r"^cannot write to .*No space left on device"):
        export_template("lean-facts", dest=dest)
    assert [Path(dst).name for _, dst in seen[:2]] == list(NAMES)
    for name in NAMES:
        assert (dest / name).read_text(encoding="utf-8") == f"old {name}\n"
    assert sorted(p.name for p in dest.iterdir()) == sorted(NAMES)  # no temp files, no backups


def test_a_failure_on_a_fresh_folder_leaves_no_half_pair(
        dest: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fail_on_rename(monkeypatch, 2)
    with pytest.raises(ConfigError):
        export_template("lean-facts", dest=dest)
    assert list(dest.iterdir()) == []


def test_a_symlinked_template_is_written_through_to_its_target_and_backed_up_there(
        dest: Path, tmp_path: Path) -> None:
    dotfiles = tmp_path / "dotfiles"
    dotfiles.mkdir()
    real = dotfiles / "goose-compaction.md"
    real.write_text("my own prompt\n", encoding="utf-8")
    (dest / "compaction.md").symlink_to(real)

    result = export_template("lean-facts", dest=dest)

    assert (dest / "compaction.md").is_symlink()
    assert os.readlink(dest / "compaction.md") == str(real)
    assert real.read_bytes() == (LEAN / "compaction.md").read_bytes()
    backup = dotfiles / f"goose-compaction.md.bak-{STAMP}"
    assert backup.read_text(encoding="utf-8") == "my own prompt\n"
    assert result.backups == [backup]
    assert result.written == [dest / n for n in NAMES]
    assert sorted(p.name for p in dotfiles.iterdir()) == sorted([real.name, backup.name])
    assert result.lines()[0] == (
        f"wrote {dest / 'compaction.md'} (through the symlink, to {real}) (backed up the old "
        f"file to {backup.name})")


def test_a_folder_without_template_files_is_refused(dest: Path, tmp_path: Path) -> None:
    folder = tmp_path / "not-a-variant"
    folder.mkdir()
    (folder / "notes.txt").write_text("hello", encoding="utf-8")
    with pytest.raises(ConfigError) as err:
        export_template(folder, dest=dest)
    assert str(err.value) == (
        f"{folder} holds neither compaction.md nor compaction_summary.md, so it is not a "
        "template variant; pass a folder with at least one of them, or 'default' for the "
        "built-in templates")
    assert list(dest.iterdir()) == []


def test_default_still_exports_the_built_in_templates(dest: Path) -> None:
    export_template("default", dest=dest)
    for name in NAMES:
        assert (dest / name).read_text(encoding="utf-8") == builtin_template(name)
