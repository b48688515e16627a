"""The package's import layering, as data: each layer and the layers it may import.

Every ``import`` and ``from ... import`` in ``workbench/`` counts, at module level or inside a
function (a lazy import is still an arrow), and so do ``TYPE_CHECKING`` imports. A layer may
import itself and what its row lists; nothing else. On top of that no two modules may import
each other in a circle, the importer plug-in registry aside (importers register themselves
with ``sessions._registry``, which loads them).
"""

from __future__ import annotations

import ast
import sys
from collections import defaultdict
from pathlib import Path

from tests.conftest import ROOT

PACKAGE = ROOT / "workbench"

BASE = {"errors", "_version", "_paths", "_offline", "_redact", "_sync", "_lazy", "_sqlite",
        "_resources", "_suggest", "_memo", "_memo_tables", "_storage", "_json_types", "_ulid"}
"""The foundation: no workbench imports beyond each other."""

MAY_IMPORT: dict[str, set[str]] = {
    "errors": set(),
    "_version": set(),
    "_paths": {"errors"},
    "_resources": {"errors"},
    "_suggest": set(),
    "_offline": set(),
    "_sync": set(),
    "_lazy": set(),
    "_sqlite": set(),
    "_memo": {"_memo_tables"},
    "_memo_tables": set(),
    "_redact": {"errors", "_memo"},
    "_storage": {"errors"},
    "_json_types": set(),
    "_ulid": set(),
    "messages": BASE,
    "tokens": BASE | {"messages"},
    "compaction": BASE | {"messages", "tokens"},
    "context_mgmt": BASE | {"messages", "tokens", "compaction"},
    "models": BASE | {"messages", "tokens", "compaction"},
    "sessions": BASE | {"messages", "tokens", "compaction"},
    "metrics": BASE | {"messages", "tokens", "compaction", "sessions"},
    # Functional probes (questions, graders, the model-free lookup answerer, reply parsers)
    # build on the string probes' extractors; the run stage sends their questions to models,
    # so they sit beside metrics, below every harness stage, and import no model code.
    "probes": BASE | {"messages", "tokens", "sessions", "metrics"},
    "strategies": BASE | {"messages", "tokens", "compaction", "context_mgmt", "models",
                          "sessions", "metrics"},
    # The harness pipeline: experiment -> run -> results -> report. The run writes through the
    # results stage's store; the report reads results and never the run.
    "harness.experiment": BASE | {"messages", "tokens", "compaction", "context_mgmt", "models",
                                  "sessions", "metrics", "probes", "strategies"},
    "harness.results": BASE | {"messages", "tokens", "compaction", "context_mgmt", "models",
                               "sessions", "metrics", "probes", "strategies",
                               "harness.experiment"},
    "harness.run": BASE | {"messages", "tokens", "compaction", "context_mgmt", "models",
                           "sessions", "metrics", "probes", "strategies", "harness.experiment",
                           "harness.results"},
    "harness.report": BASE | {"messages", "tokens", "compaction", "context_mgmt", "models",
                              "sessions", "metrics", "probes", "strategies",
                              "harness.experiment", "harness.results"},
    "harness": {"_lazy", "metrics", "harness.experiment", "harness.run", "harness.results",
                "harness.report"},
    "regress": BASE | {"messages", "tokens", "compaction", "models", "sessions", "metrics",
                       "probes", "strategies", "harness", "harness.experiment", "harness.run",
                       "harness.results"},
    "tune": BASE | {"messages", "tokens", "compaction", "models", "sessions", "metrics",
                    "probes", "strategies", "harness", "harness.experiment", "harness.run",
                    "harness.results"},
    "export": BASE | {"messages", "tokens", "compaction", "models", "sessions", "harness",
                      "harness.experiment", "harness.results", "tune"},
    "testing": BASE | {"messages", "tokens", "compaction", "models"},
    "_project": BASE,
    "cli": BASE | {"messages", "tokens", "compaction", "models", "sessions", "probes",
                   "strategies",
                   "harness", "harness.experiment", "harness.run", "harness.results",
                   "harness.report", "regress", "tune", "export", "_project"},
    "__main__": {"cli"},
}
"""Layer -> the layers it may import (its own is always allowed). ``workbench`` itself, the
package's lazy public surface, may import every layer."""

REGISTRY_CIRCLE = "workbench.sessions"
"""The one circle allowed: the importer plug-in registry and the importers it loads."""


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _modules() -> dict[str, Path]:
    return {_module_name(p): p for p in PACKAGE.rglob("*.py")}


def _imports(modules: dict[str, Path]) -> dict[str, set[str]]:
    """Module -> the workbench modules it imports (a package's submodule, not the package,
    when ``from pkg import submodule``)."""
    graph: dict[str, set[str]] = defaultdict(set)
    for name, path in modules.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    parent = package.split(".")[:len(package.split(".")) - node.level + 1]
                    base = ".".join(parent + ([node.module] if node.module else []))
                for alias in node.names:
                    sub = f"{base}.{alias.name}"
                    targets.append(sub if sub in modules else base)
            for target in targets:
                while target and target not in modules:
                    target = target.rpartition(".")[0]
                if target.startswith("workbench") and target != name:
                    graph[name].add(target)
    return graph


def _layer(module: str) -> str:
    rest = module.removeprefix("workbench").lstrip(".")
    best = ""
    for layer in MAY_IMPORT:
        if (rest == layer or rest.startswith(layer + ".")) and len(layer) > len(best):
            best = layer
    return best or rest


def test_every_module_belongs_to_a_listed_layer() -> None:
    unlisted = sorted({m for m in _modules() if m != "workbench" and _layer(m) not in MAY_IMPORT})
    assert unlisted == [], "add these to MAY_IMPORT (or move them into a layer)"


def test_no_import_goes_against_the_layering() -> None:
    broken = []
    for module, targets in _imports(_modules()).items():
        if module == "workbench":
            continue  # the lazy public surface re-exports every layer
        mine = _layer(module)
        for target in targets:
            theirs = _layer(target)
            if theirs != mine and theirs not in MAY_IMPORT.get(mine, set()):
                broken.append(f"{module} ({mine}) imports {target} ({theirs})")
    assert broken == []


def _circles(graph: dict[str, set[str]]) -> list[list[str]]:
    sys.setrecursionlimit(max(sys.getrecursionlimit(), 10_000))
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(graph.get(node, ())):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                top = stack.pop()
                on_stack.discard(top)
                component.append(top)
                if top == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def test_no_import_circle_remains_outside_the_importer_registry() -> None:
    circles = _circles(_imports(_modules()))
    outside = [c for c in circles
               if not all(m.startswith(REGISTRY_CIRCLE + "._registry")
                          or m.startswith(REGISTRY_CIRCLE + ".importers") for m in c)]
    assert outside == []


def test_the_checker_sees_a_lazy_upward_import_and_a_circle() -> None:
    graph = {"workbench.strategies._x": {"workbench.harness.run._runner"},
             "workbench.harness.run._runner": {"workbench.strategies._x"}}
    assert _layer("workbench.harness.run._runner") == "harness.run"
    assert "harness.run" not in MAY_IMPORT["strategies"]
    assert _circles(graph) == [["workbench.harness.run._runner", "workbench.strategies._x"]]
