"""Every command the README and the docs/ pages show is run, as a user would type it.

A page's shell blocks (```bash) are read line by line (a trailing backslash joins lines; `#`
lines are comments). Each page runs top to bottom in one project folder made by `workbench
init`, with `../shared` beside it when the shared sessions exist, a private HOME (so an export
to Goose's default folder lands in the test's temp dir) and no API key in the environment.
A command reading `../shared/` is left out, and says so, where the shared sessions are absent.
`cd DIR` moves the page's later commands. A command ending in `# needs: REASON` (an API key,
a cluster, a particular CPU) is skipped with that reason; `# exits N` says the exit code it is
shown to give. The README's marked install lines are run by `.ci/run` itself
(tests/test_ci_matches_readme.py keeps the two in step), so they are not run twice here.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.conftest import ROOT, SHARED

PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
BLOCK = re.compile(r"```bash\n(.*?)```", re.S)
NEEDS = re.compile(r"#\s*needs:\s*(.+)$")
EXITS = re.compile(r"#\s*exits\s+(\d+)\s*$")
MARKED = re.compile(r"<!-- (main-command|test-command|local-install) -->\s*```bash\n(.+?)\n```", re.S)


@dataclass(frozen=True)
class Command:
    """One command line of a page, with what the page says about it."""

    page: str
    line: str
    needs: str | None
    exits: int


def _logical_lines(block: str) -> list[str]:
    lines: list[str] = []
    pending = ""
    for raw in block.splitlines():
        if raw.rstrip().endswith("\\"):
            pending += raw.rstrip()[:-1] + " "
            continue
        lines.append(pending + raw)
        pending = ""
    return [line.strip() for line in lines if line.strip() and not line.strip().startswith("#")]


def installs_run_by_ci() -> set[str]:
    """The README's marked install lines, which `.ci/run` runs (or runs on request)."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    return {match.group(2).strip() for match in MARKED.finditer(text)}


def commands(page: Path) -> list[Command]:
    """The commands `page` shows, in order."""
    found = []
    for block in BLOCK.findall(page.read_text(encoding="utf-8")):
        for line in _logical_lines(block):
            needs = NEEDS.search(line)
            exits = EXITS.search(line)
            found.append(Command(page.relative_to(ROOT).as_posix(), line,
                                 needs.group(1).strip() if needs else None,
                                 int(exits.group(1)) if exits else 0))
    return found


def test_every_shell_line_is_a_command_the_test_can_run_or_says_why_not() -> None:
    installs = installs_run_by_ci()
    unexplained = []
    for page in PAGES:
        for command in commands(page):
            runnable = command.line.split("#")[0].strip()
            if command.needs or runnable in installs or runnable.startswith(("workbench ", "cd ")):
                continue
            unexplained.append(f"{command.page}: {command.line}")
    assert unexplained == []


def _environment(home: Path) -> dict[str, str]:
    env = {key: value for key, value in os.environ.items()
           if not key.endswith(("_API_KEY", "_TOKEN", "_SECRET")) and key != "RAY_ADDRESS"}
    env["HOME"] = str(home)
    env["XDG_CONFIG_HOME"] = str(home / ".config")
    env["WORKBENCH_USER_PATH"] = str(home / "workbench")
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    env["COLUMNS"] = "120"
    env["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"
    return env


@pytest.fixture(scope="module")
def workspace(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder with a fresh `workbench init` project, and ../shared beside it when present."""
    base = tmp_path_factory.mktemp("docs")
    if SHARED.is_dir():
        (base / "shared").symlink_to(SHARED.resolve(), target_is_directory=True)
    done = subprocess.run(["workbench", "init", "project"], cwd=base, env=_environment(base / "home"),
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    return base


def _shown(page: Path) -> list[Command]:
    installs = installs_run_by_ci()
    return [command for command in commands(page)
            if command.line.split("#")[0].strip() not in installs]


@pytest.mark.parametrize("page", [page for page in PAGES if _shown(page)],
                         ids=lambda page: page.relative_to(ROOT).as_posix())
def test_page_commands_run(page: Path, workspace: Path) -> None:
    shown = _shown(page)
    env = _environment(workspace / "home")
    cwd = workspace / "project"
    skipped = []
    for command in shown:
        if command.needs:
            skipped.append(f"{command.line.split('#')[0].strip()} (needs {command.needs})")
            continue
        if "../shared/" in command.line and not SHARED.is_dir():
            skipped.append(f"{command.line} (needs the shared sessions at {SHARED})")
            continue
        for part in command.line.split("#")[0].split("&&"):
            part = part.strip()
            if part.startswith("cd "):
                cwd = (cwd / shlex.split(part)[1]).resolve()
                continue
            done = subprocess.run(part, shell=True, cwd=cwd, env=env, capture_output=True,
                                  text=True, timeout=900)
            assert done.returncode == command.exits, (
                f"{command.page}: `{part}` exited {done.returncode}, the page says "
                f"{command.exits}\n--- stdout\n{done.stdout[-3000:]}\n--- stderr\n{done.stderr[-3000:]}")
    if skipped:
        print(f"{page.name}: not run here: " + "; ".join(skipped))


def test_the_readme_is_one_page_that_links_every_docs_page() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert len(readme.splitlines()) <= 250
    linked = set(re.findall(r"\]\((docs/[^)#]+\.md)", readme))
    pages = {page.relative_to(ROOT).as_posix() for page in (ROOT / "docs").glob("*.md")}
    assert pages - linked == set()
    assert linked - pages == set()


def test_every_relative_link_in_the_docs_resolves() -> None:
    broken = []
    for page in PAGES:
        for target in re.findall(r"\]\(([^)\s]+)\)", page.read_text(encoding="utf-8")):
            if "://" in target or target.startswith(("#", "mailto:")):
                continue
            path = target.split("#")[0]
            if not (page.parent / path).exists():
                broken.append(f"{page.relative_to(ROOT)}: {target}")
    assert broken == []
