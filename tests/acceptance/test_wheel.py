"""The wheel, away from the clone: it ships what the main job and the tour need, and runs them.

A wheel is built from a copy of the source tree (``pip wheel --no-deps --no-build-isolation``:
no network) and installed with ``--no-deps --target`` into a folder of its own, ahead of the
dev environment's packages on ``PYTHONPATH``. From an empty folder elsewhere, with every socket
refused, ``workbench run --limit 3``, ``workbench init proj`` and ``workbench run --limit 3``
inside ``proj`` must succeed and print the table the clone prints for the same cells.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from tests.conftest import ROOT

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

OFFLINE = (
    "import runpy, socket, sys\n"
    "def refuse(*args, **kwargs):\n"
    "    raise OSError('network refused by the test')\n"
    "socket.socket.connect = refuse\n"
    "socket.create_connection = refuse\n"
    "sys.argv = ['workbench', *sys.argv[1:]]\n"
    "runpy.run_module('workbench', run_name='__main__')\n")
"""``python -c`` program: ``python -m workbench ARGS`` with every network connection refused."""
COPY_IGNORE = shutil.ignore_patterns(".git", "runs", "build", "dist", "*.egg-info", "__pycache__",
                                     ".mypy_cache", ".ruff_cache", ".pytest_cache", "*.db-wal",
                                     "*.db-shm", ".ipynb_checkpoints")


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    if importlib.util.find_spec("wheel") is None or importlib.util.find_spec("setuptools") is None:
        pytest.skip("building a wheel needs setuptools and wheel (the dev extra)")
    base = tmp_path_factory.mktemp("wheel")
    source = base / "src"
    shutil.copytree(ROOT, source, symlinks=True, ignore=COPY_IGNORE)
    done = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps",
                           "--no-build-isolation", "--no-index", "-q", "-w", str(base / "dist"),
                           str(source)], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    return next((base / "dist").glob("compaction_workbench-*.whl"))


@pytest.fixture(scope="module")
def installed(wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    target = tmp_path_factory.mktemp("site")
    done = subprocess.run([sys.executable, "-m", "pip", "install", "--no-deps", "--no-index",
                           "-q", "--target", str(target), str(wheel)],
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    return target


def _env(site: Path | None, user: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    env.pop("PYTHONPATH", None)
    if site is not None:
        env["PYTHONPATH"] = str(site)
    env["WORKBENCH_USER_PATH"] = str(user)
    return env


def _workbench(args: list[str], cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", OFFLINE, *args, "--no-progress"] if args[0] ==
                          "run" else [sys.executable, "-c", OFFLINE, *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=600)


def _table(stdout: str) -> list[str]:
    """The printed table: from its header to the spend line."""
    lines = stdout.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("Per template x model"))
    end = next(i for i, line in enumerate(lines) if line.startswith("spent by this run"))
    return lines[start:end + 1]


def test_the_wheel_carries_the_shipped_data_and_the_starter_project(wheel: Path) -> None:
    names = set(zipfile.ZipFile(wheel).namelist())
    data = "workbench/_data/"
    datasets = {n for n in names if n.startswith(data + "datasets/gen-") and n.endswith(".json")}
    assert len(datasets) == len(list((ROOT / "datasets").glob("gen-*.json"))) == 48
    expected = {
        data + "datasets/manifest.json", data + "datasets/README.md",
        data + "datasets/recordings/local-gemma3-270m.db",
        data + "datasets/recordings/local-smollm2-135m.db",
        data + "experiments/default.toml", data + "experiments/tune.toml",
        data + "experiments/regress.toml", data + "regress/regress/metrics.json",
        data + "prompts/lean-facts/compaction.md", data + "prompts/lean-facts/variant.toml",
        data + "prompts/top3-intent/compaction_summary.md", data + "prompts/default/README.md",
        "workbench/_starter/README.md", "workbench/_starter/sessions/README.md",
        "workbench/_starter/.gitignore", "workbench/_starter/.github/workflows/summaries.yml",
        "workbench/prompts/compaction.md", "workbench/py.typed"}
    assert expected <= names, sorted(expected - names)
    baseline = {n for n in names if n.startswith(data + "regress/regress/summaries/")}
    assert len(baseline) == len(list((ROOT / "regress" / "regress" / "summaries").rglob("*.md")))
    for folder in ("experiments", "prompts"):
        shipped = {n for n in names if n.startswith(f"{data}{folder}/")}
        source = {f"{data}{folder}/{p.relative_to(ROOT / folder).as_posix()}"
                  for p in (ROOT / folder).rglob("*") if p.is_file()}
        assert shipped == source, folder
    assert not [n for n in names if n.endswith(("-wal", "-shm"))]


def test_the_installed_wheel_runs_the_main_job_and_a_starter_project_offline(
        installed: Path, tmp_path: Path) -> None:
    where = subprocess.run([sys.executable, "-c", "import workbench; print(workbench.__file__)"],
                           cwd=tmp_path, env=_env(installed, tmp_path / "user"),
                           capture_output=True, text=True, timeout=120)
    assert Path(where.stdout.strip()).is_relative_to(installed), where.stdout + where.stderr
    assert not Path(where.stdout.strip()).is_relative_to(ROOT)

    # --verbose: the whole table (the default screen prints it only up to 12 rows)
    clone = _workbench(["run", "--limit", "3", "--verbose", "--out", str(tmp_path / "clone-run")],
                       ROOT, _env(None, tmp_path / "user-clone"))
    assert clone.returncode == 0, clone.stderr[-3000:]

    away = tmp_path / "empty"
    away.mkdir()
    env = _env(installed, tmp_path / "user-wheel")
    main = _workbench(["run", "--limit", "3", "--verbose"], away, env)
    assert main.returncode == 0, main.stderr[-3000:]
    assert "overrides: --limit 3 (run folder runs/default-" in main.stdout
    assert _table(main.stdout) == _table(clone.stdout)
    assert "56 cells, 0 failed, 0 errors, status finished" in main.stdout

    init = _workbench(["init", "proj"], away, env)
    assert init.returncode == 0, init.stderr[-3000:]
    assert "Next: cd proj && workbench run" in init.stdout
    project = away / "proj"
    inside = _workbench(["run", "--limit", "3", "--verbose"], project, env)
    assert inside.returncode == 0, inside.stderr[-3000:]
    assert _table(inside.stdout) == _table(clone.stdout)
    spec = (project / "runs").glob("default-*/spec.toml")
    assert 'prompts_dir = "../prompts"' in next(spec).read_text(encoding="utf-8")
    gate = _workbench(["regress"], project, env)
    assert gate.returncode == 0, gate.stdout[-3000:] + gate.stderr[-3000:]
    assert "result: PASSED (24 summaries identical" in gate.stdout
    again = _workbench(["init", "proj"], away, env)
    assert again.returncode == 0 and "0 file(s) written" in again.stdout
