"""A hostile or damaged regress baseline is a clear error naming the file and the shape it must
have, through the real ``workbench regress`` command (exit 2: the gate could not run)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT
from workbench.errors import ConfigError
from workbench.regress._snapshot import BASELINE_SHAPE, Snapshot

SPEC = ROOT / "experiments" / "regress.toml"
BASELINE = ROOT / "regress" / "regress"
REWRITE = "(rewrite it with `workbench regress SPEC --update`)"


def _baseline(tmp_path: Path, metrics: str | bytes) -> Path:
    folder = Path(shutil.copytree(BASELINE, tmp_path / "baseline"))
    data = metrics.encode() if isinstance(metrics, str) else metrics
    (folder / "metrics.json").write_bytes(data)
    return folder


@pytest.mark.parametrize(("metrics", "problem"), [
    ('{"groups": ' + "[" * 100_000 + "]" * 100_000 + "}",
     "line 1 nests deeper than 8 levels"),
    ("[1, 2, 3]", "the top level is a JSON list, not an object"),
    ('{"experiment": "regress", "groups": {"template": "default"}}', '"groups" is not a list'),
    ('{"experiment": "regress", "groups": [["default"]]}', "groups[0] is not an object"),
    ('{"experiment": "regress", "groups": [{"template": "d", "model": "m"}]}',
     'groups[0] has no "window" string'),
    ('{"experiment": "regress", "groups": [{"template": "d", "model": "m", "window": "8k", '
     '"cells": "many"}]}', "groups[0].cells is not a number or null"),
    ('{"experiment": 5, "groups": []}', 'no "experiment" name (a string)'),
    ('{"experiment": "regress", "rules": ["x"], "groups": []}',
     '"rules" is not an object of metric -> tolerance strings'),
    ('{"experiment": "regress", "groups": [}', "invalid JSON (Expecting value: line 1 column"),
    (b'{"experiment": "r\xff"}', "cannot read it as UTF-8 text"),
])
def test_a_damaged_metrics_file_names_the_file_and_the_expected_shape(
        tmp_path: Path, metrics: str | bytes, problem: str) -> None:
    folder = _baseline(tmp_path, metrics)
    with pytest.raises(ConfigError) as info:
        Snapshot.read(folder)
    message = str(info.value)
    assert message.startswith(f"{folder / 'metrics.json'}: not a regress baseline: {problem}")
    assert message.endswith(f"; expected {BASELINE_SHAPE} {REWRITE}")


def test_the_gate_command_reports_a_hostile_baseline_and_exits_2(tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    for metrics, problem in (("[" * 200_000 + "]" * 200_000, "nests deeper than 8 levels"),
                             (json.dumps([{"template": "x"}]), "the top level is a JSON list")):
        folder = _baseline(tmp_path / str(len(metrics)), metrics)
        done = subprocess.run([sys.executable, "-m", "workbench", "regress", str(SPEC),
                               "--baseline", str(folder)], cwd=ROOT, env=env,
                              capture_output=True, text=True, timeout=600)
        output = done.stdout + done.stderr
        assert done.returncode == 2, output[-2000:]
        assert f"{folder / 'metrics.json'}: not a regress baseline: " in output
        assert problem in output and BASELINE_SHAPE in output
        assert "RecursionError" not in output and "list indices must be" not in output
        assert "Traceback" not in output
