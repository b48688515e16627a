"""The notebooks use the public API only: no ``workbench.*._private`` module, no ``_name``.

A notebook is what a user copies from; an import of a private module there would be the first
thing a refactor breaks for them.
"""

from __future__ import annotations

import ast
import importlib
import importlib.util
import json
from pathlib import Path

import pytest

from tests.conftest import ROOT

NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))


def _code(notebook: Path) -> str:
    cells = json.loads(notebook.read_text(encoding="utf-8"))["cells"]
    lines = []
    for cell in cells:
        if cell["cell_type"] != "code":
            continue
        source = "".join(cell["source"])
        # IPython magics and shell escapes are not Python; the imports are.
        lines += [line for line in source.splitlines()
                  if not line.lstrip().startswith(("%", "!"))]
    return "\n".join(lines)


def workbench_imports(source: str) -> list[tuple[str, str | None]]:
    """``(module, name)`` for every import of `workbench` in `source` (name None: the module)."""
    found: list[tuple[str, str | None]] = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found += [(a.name, None) for a in node.names if a.name.split(".")[0] == "workbench"]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0 \
                and node.module.split(".")[0] == "workbench":
            found += [(node.module, a.name) for a in node.names]
    return found


def private_imports(source: str) -> list[str]:
    """The imports in `source` that reach a private module or a private name of `workbench`."""
    bad = []
    for module, name in workbench_imports(source):
        parts = module.split(".") + ([name] if name else [])
        if any(p.startswith("_") for p in parts):
            bad.append(f"{module}.{name}" if name else module)
    return bad


def test_the_check_catches_a_private_module_and_a_private_name() -> None:
    source = ("import workbench as wb\nfrom workbench.harness.experiment._params import "
              "point_label\nfrom workbench.tune import _search\nimport workbench._redact\n"
              "from os import _exit\n")
    assert private_imports(source) == ["workbench.harness.experiment._params.point_label",
                                       "workbench.tune._search", "workbench._redact"]


def test_the_project_ships_notebooks() -> None:
    assert {p.name for p in NOTEBOOKS} >= {"compare_templates.ipynb", "tune_templates.ipynb"}


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=lambda p: p.name)
def test_a_notebook_imports_only_public_workbench_names(notebook: Path) -> None:
    source = _code(notebook)
    assert private_imports(source) == [], notebook.name
    for module, name in workbench_imports(source):
        mod = importlib.import_module(module)
        if name is not None:
            listed = getattr(mod, "__all__", ())
            assert name in listed or importlib.util.find_spec(f"{module}.{name}") is not None, (
                f"{notebook.name}: {name} is not in {module}.__all__")
