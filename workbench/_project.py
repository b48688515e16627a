"""``workbench init [DIR]``: a starter project the user owns, runnable at once and offline.

The project mirrors the repository's layout, so every command works in it as in the clone:

- ``experiments/``: the shipped ``default``, ``tune``, ``regress`` and ``record-*`` specs,
  pointed at the project's own ``prompts/`` (``prompts_dir = "../prompts"``) and
  ``recordings/`` instead of the package's;
- ``prompts/``: copies of the shipped template variants, to edit;
- ``recordings/``: copies of the local models' recordings the specs replay;
- ``regress/regress/``: the gate's baseline (the shipped one: the project starts identical);
- ``sessions/README.md``, ``README.md``, ``.gitignore`` and ``.github/workflows/summaries.yml``
  from the package's ``_starter/`` folder.

Nothing is overwritten unless asked: a file that exists with other bytes stops `init_project`
before it writes anything (`force` replaces them); identical files are left alone.
"""

from __future__ import annotations

import importlib.resources
from dataclasses import dataclass, field
from pathlib import Path

from workbench._resources import shipped
from workbench._storage import write_atomic
from workbench.errors import ConfigError

STARTER_DIR = "_starter"
"""The package folder holding the project's own files (README, sessions/README, CI workflow)."""
EXPERIMENTS = ("default", "tune", "regress", "record-local", "record-smollm2")
"""The shipped experiments a project gets (``shared-sessions`` needs the clone's neighbours)."""
RECORDINGS = "recordings"
SHIPPED_RECORDINGS = "../datasets/recordings/"
PROMPTS_LINE = ('\n# Template variants: the project\'s own prompts/ ("all" in templates = every '
                'folder there).\nprompts_dir = "../prompts"\n')
SHOWN = 8
"""Existing files a refusal names."""


@dataclass
class InitResult:
    """What `init_project` wrote.

    Attributes:
        root: The project folder.
        written: Files written (new, or replaced with `force`).
        unchanged: Files already holding the same bytes.
    """

    root: Path
    written: list[Path] = field(default_factory=list)
    unchanged: list[Path] = field(default_factory=list)


def _spec_text(name: str) -> str:
    text = shipped("experiments", f"{name}.toml").read_text(encoding="utf-8")
    text = text.replace(SHIPPED_RECORDINGS, f"../{RECORDINGS}/")
    lines = text.splitlines(keepends=True)
    at = next(i for i, line in enumerate(lines) if line.startswith("name = "))
    lines.insert(at + 1, PROMPTS_LINE)
    return "".join(lines)


def _tree(root: Path, rel: Path, out: dict[Path, bytes]) -> None:
    for path in sorted(root.rglob("*")):
        if path.is_file() and not path.name.endswith(("-wal", "-shm", "-journal")):
            out[rel / path.relative_to(root)] = path.read_bytes()


def starter_files() -> dict[Path, bytes]:
    """Every file of a new project (relative path -> bytes)."""
    files: dict[Path, bytes] = {}
    for name in EXPERIMENTS:
        files[Path("experiments") / f"{name}.toml"] = _spec_text(name).encode("utf-8")
    _tree(shipped("prompts"), Path("prompts"), files)
    for db in sorted(shipped("datasets", "recordings").glob("*.db")):
        files[Path(RECORDINGS) / db.name] = db.read_bytes()
    _tree(shipped("regress"), Path("regress"), files)
    starter = importlib.resources.files("workbench").joinpath(STARTER_DIR)
    if not isinstance(starter, Path):
        raise ConfigError(f"the workbench's starter files are not on disk ({starter})")
    _tree(starter, Path("."), files)
    return files


def init_project(root: str | Path = ".", *, force: bool = False) -> InitResult:
    """Write a starter project into `root` (created if missing).

    Raises:
        ConfigError: files exist with other content and `force` is false (nothing is written;
            the message names them), or `root` is a file.
    """
    folder = Path(root)
    if folder.exists() and not folder.is_dir():
        raise ConfigError(f"{folder} is a file; pass a folder to `workbench init`")
    files = starter_files()
    result = InitResult(folder)
    clashes = []
    for rel, data in files.items():
        target = folder / rel
        if target.is_file() and target.read_bytes() == data:
            result.unchanged.append(target)
        elif target.exists():
            clashes.append(target)
    if clashes and not force:
        shown = ", ".join(str(p) for p in clashes[:SHOWN])
        more = f" and {len(clashes) - SHOWN} more" if len(clashes) > SHOWN else ""
        raise ConfigError(f"workbench init: {len(clashes)} file(s) exist with other content: "
                          f"{shown}{more}; nothing was written. Pass --force to replace them, "
                          "or init another folder")
    for rel, data in files.items():
        target = folder / rel
        if target in result.unchanged:
            continue
        if target.is_dir():
            raise ConfigError(f"{target} is a folder where the project needs a file; move it "
                              "away first")
        target.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(target, data, keep_mode=True)
        result.written.append(target)
    return result
