"""The data the workbench ships inside its package, found through `importlib.resources`.

The repository's top-level folders are the source: ``datasets/`` (the generated sessions, their
manifest and ``recordings/*.db``), ``experiments/`` (the default experiment, the tune spec, the
regression gate's spec...), ``prompts/`` (the template variants) and ``regress/`` (the gate's
committed baseline). ``workbench/_data/<folder>`` is a relative symlink to each, so an editable
install reads them in place, and a wheel carries copies of them (setuptools follows the links
when it gathers package data). Nothing here walks up from a source file to find them: the
installed package is asked, so a wheel installed anywhere runs as the clone does.

Inside ``_data`` the four folders keep their relative layout, so a path written relative to a
shipped spec (``cache_path = "../datasets/recordings/..."``) resolves to the shipped copy.
"""

from __future__ import annotations

import importlib.resources
from pathlib import Path

from workbench.errors import ConfigError

DATA_DIR = "_data"
"""The package folder holding the shipped data (``workbench/_data``)."""
SHIPPED_FOLDERS = ("datasets", "experiments", "prompts", "regress")
"""The top-level folders of the repository the package ships."""
EXPERIMENTS = "experiments"
SPEC_SUFFIX = ".toml"
NOT_ON_DISK = ("the workbench's shipped data is not on disk ({where}); install the package as "
               "files (pip install, not a zip) to use the shipped experiments and datasets")


def shipped_root() -> Path:
    """The folder holding the shipped data (``<package>/_data``), as a real path.

    Raises:
        ConfigError: the package is not installed as files (a zip import), so SQLite
            recordings and globs could not read it.
    """
    resource = importlib.resources.files("workbench").joinpath(DATA_DIR)
    if not isinstance(resource, Path):
        raise ConfigError(NOT_ON_DISK.format(where=resource))
    return resource


def shipped(*parts: str) -> Path:
    """A shipped file or folder: ``shipped("datasets", "manifest.json")``."""
    return shipped_root().joinpath(*parts)


def shipped_experiments() -> list[str]:
    """Names of the shipped experiments (``default``, ``regress``, ``tune``...), sorted."""
    folder = shipped(EXPERIMENTS)
    if not folder.is_dir():
        return []
    return sorted(p.stem for p in folder.iterdir() if p.suffix == SPEC_SUFFIX and p.is_file())


def shipped_experiment(name: str) -> Path | None:
    """The shipped spec a name stands for, or None.

    Accepts the name (``tune``), the file name (``tune.toml``) or the path as the repository
    writes it (``experiments/tune.toml``), so a command from the README works where the
    clone's files are not in the working folder.
    """
    text = name.replace("\\", "/")
    if text.startswith(f"{EXPERIMENTS}/"):
        text = text[len(EXPERIMENTS) + 1:]
    if "/" in text or not text:
        return None
    stem = text[:-len(SPEC_SUFFIX)] if text.endswith(SPEC_SUFFIX) else text
    return shipped(EXPERIMENTS, stem + SPEC_SUFFIX) if stem in shipped_experiments() else None


def is_shipped(path: str | Path) -> bool:
    """True when `path` lies in the shipped data (links resolved)."""
    try:
        roots = [shipped(folder).resolve() for folder in SHIPPED_FOLDERS]
    except ConfigError:
        return False
    target = Path(path).resolve()
    return any(target == root or root in target.parents for root in roots)
