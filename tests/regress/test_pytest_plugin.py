"""The pytest plugin: ``--workbench-regress`` adds the gate as one test item that fails with the
gate's own report. Run in a pytester sandbox with ``-p`` (entry-point autoload off, so an
installed copy of the plugin is not registered twice)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

# Imported here, before any sandboxed run: pytester drops modules first imported inside a run,
# and numpy's C extension cannot be loaded a second time in one process.
import workbench.regress._gate  # noqa: F401
import workbench.regress._record  # noqa: F401
from tests.conftest import ROOT

pytest_plugins = ["pytester"]

PLUGIN = "workbench.regress._pytest_plugin"
SPEC = ROOT / "experiments" / "regress.toml"


@pytest.fixture
def sandbox(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    monkeypatch.setenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "1")
    pytester.makepyfile(test_small="def test_one():\n    assert True\n")
    shutil.copytree(ROOT / "regress" / "regress", pytester.path / "regress" / "regress")
    (pytester.path / "experiments").mkdir()
    spec = SPEC.read_text(encoding="utf-8")
    # the spec's relative paths (the recording) resolve against the repository
    (pytester.path / "experiments" / "regress.toml").write_text(
        f"base_dir = {json.dumps(str(SPEC.parent))}\n" + spec, encoding="utf-8")
    return pytester


def test_without_the_flag_the_plugin_adds_nothing(sandbox: pytest.Pytester) -> None:
    result = sandbox.runpytest("-p", PLUGIN)
    result.assert_outcomes(passed=1)


def test_the_flag_adds_a_passing_gate_item_on_a_clean_tree(sandbox: pytest.Pytester) -> None:
    # spec and baseline found under the rootdir by default
    result = sandbox.runpytest("-p", PLUGIN, "--workbench-regress", "-v")
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(["*workbench-regress PASSED*"])


def test_a_regression_fails_the_item_with_the_gates_report(sandbox: pytest.Pytester) -> None:
    summary = sandbox.path / "regress/regress/summaries/default/extractive--8k--gen-005k-s1.md"
    summary.write_text(summary.read_text(encoding="utf-8").replace(
        "# Conversation Summary", "# Old heading"), encoding="utf-8")
    result = sandbox.runpytest("-p", PLUGIN, "--workbench-regress")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines([
        "REGRESSED summaries/default/extractive--8k--gen-005k-s1.md: rendered summary changed",
        "--- baseline/summaries/default/extractive--8k--gen-005k-s1.md",
        "+++ current/summaries/default/extractive--8k--gen-005k-s1.md",
        "-# Old heading",
        "+# Conversation Summary",
        "result: REGRESSED (1 summary file(s), 0 metric(s))*",
    ])
    assert "Traceback" not in result.stdout.str()


def test_spec_and_baseline_options_point_the_gate_elsewhere(sandbox: pytest.Pytester,
                                                            tmp_path: Path) -> None:
    result = sandbox.runpytest("-p", PLUGIN, "--workbench-regress",
                               "--workbench-regress-spec", str(SPEC),
                               "--workbench-regress-baseline", str(tmp_path / "missing"))
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines([f"ERROR no baseline at {tmp_path / 'missing'}*",
                                 "result: COULD NOT RUN (exit 2)"])


def test_the_plugin_is_registered_under_the_pytest11_entry_point_group() -> None:
    import importlib
    import tomllib

    data = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    assert data["project"]["entry-points"]["pytest11"] == {"workbench_regress": PLUGIN}
    module = importlib.import_module(PLUGIN)
    assert callable(module.pytest_addoption) and callable(module.pytest_collection_modifyitems)


def test_importing_the_plugin_does_not_import_pandas() -> None:
    import subprocess
    import sys

    code = f"import sys, {PLUGIN}; print(int('pandas' in sys.modules), int('numpy' in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         cwd=ROOT)
    assert out.stdout.split() == ["0", "0"]
