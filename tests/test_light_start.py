"""`workbench --help` and every subcommand's ``--help`` start light: the CLI imports a
subcommand's machinery only when that subcommand runs."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

HEAVY = ("pandas", "matplotlib", "litellm", "ray", "numpy", "tiktoken", "llama_cpp")

PROBE = """
import json, sys
from workbench.cli import cli
try:
    cli.main(args=sys.argv[1:], prog_name="workbench", standalone_mode=False)
except SystemExit:
    pass
print(json.dumps(sorted(m for m in sys.modules if m.split(".")[0] in {heavy!r})))
"""


def _heavy_after(*args: str) -> list[str]:
    done = subprocess.run([sys.executable, "-c", PROBE.format(heavy=set(HEAVY)), *args],
                          capture_output=True, text=True, check=True, timeout=120)
    return json.loads(done.stdout.strip().splitlines()[-1])


def _subcommands() -> list[list[str]]:
    from workbench.cli import cli

    found = []
    for name, command in cli.commands.items():
        found.append([name])
        for sub in getattr(command, "commands", {}):
            found.append([name, sub])
    return found


def test_the_group_help_imports_no_heavy_package() -> None:
    assert _heavy_after("--help") == []


@pytest.mark.parametrize("words", _subcommands(), ids=" ".join)
def test_each_subcommand_help_imports_no_heavy_package(words: list[str]) -> None:
    assert _heavy_after(*words, "--help") == [], words


def test_the_probe_sees_a_heavy_import() -> None:
    # `sessions inspect` of a real file runs the command, which loads tiktoken to count tokens.
    from tests.conftest import ROOT

    assert "tiktoken" in _heavy_after("sessions", "inspect", str(ROOT / "datasets" / "gen-005k-s1.json"))
