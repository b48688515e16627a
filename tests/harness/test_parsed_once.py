"""The manifest and a variant's ``variant.toml`` are parsed once per content: a file edited
between two reads is read anew, and a caller's change to what it got never reaches the next."""

from __future__ import annotations

import json
from pathlib import Path

from workbench.harness.experiment._cells import read_manifest
from workbench.harness.experiment._variants import read_variant_options, read_variant_params


def test_an_edited_manifest_is_read_anew(tmp_path: Path) -> None:
    manifest = tmp_path / "datasets" / "manifest.json"
    manifest.parent.mkdir()
    manifest.write_text(json.dumps({"sessions": [{"name": "a"}]}), encoding="utf-8")
    first = read_manifest(tmp_path)
    assert list(first) == ["a"]
    first.clear()  # the caller's copy
    assert list(read_manifest(tmp_path)) == ["a"]
    manifest.write_text(json.dumps({"sessions": [{"name": "b", "format": "codex"}]}),
                        encoding="utf-8")  # same length, same second
    assert read_manifest(tmp_path) == {"b": ((tmp_path / "datasets" / "b.json").resolve(),
                                             "codex")}


def test_an_edited_variant_file_is_read_anew(tmp_path: Path) -> None:
    toml = tmp_path / "variant.toml"
    toml.write_text('removal = "elide"\n[params.limit]\ndefault = 3\nmin = 1\nmax = 5\n',
                    encoding="utf-8")
    assert read_variant_options(tmp_path) == {"removal": "elide"}
    assert read_variant_params(tmp_path)["limit"].default == 3
    toml.write_text('removal = "drop"\n[params.limit]\ndefault = 4\nmin = 1\nmax = 5\n',
                    encoding="utf-8")
    assert read_variant_options(tmp_path) == {"removal": "drop"}
    assert read_variant_params(tmp_path)["limit"].default == 4
