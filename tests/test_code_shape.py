"""The shape of the package's source: small modules, `Any` only at the boundaries, imports at the
top (issue "One model pipeline", item 5).

Modules over `MAX_LINES` fail outright. `Any` and imports inside functions are held by two
lists: a short allowlist of boundary modules, each with its reason (`ANY_BOUNDARY`), and the
debt still to pay (``code_shape_debt.json``: per module, how many uses are left). The debt may
only shrink: a module that gains a use, or a module not in either list that uses one, fails; a
module whose count went down fails until its entry is lowered, so the file stays true.
"""

from __future__ import annotations

import ast
import json
from collections import Counter
from pathlib import Path

from tests.conftest import ROOT

PACKAGE = ROOT / "workbench"
DEBT_FILE = Path(__file__).with_name("code_shape_debt.json")

MAX_LINES = 400
"""The most lines a module may have (STYLE.md: aim for 100-400)."""

ANY_BOUNDARY: dict[str, str] = {
    "workbench/models/_convert.py": "provider JSON in and out of litellm's message shapes",
    "workbench/compaction/_sandbox_env.py": "a user's template values, whatever they hold",
    "workbench/compaction/_growth.py": "Jinja filter arguments: any value a template passes",
    "workbench/compaction/_limits.py": "Jinja filter arguments: any value a template passes",
    "workbench/sessions/importers/_readers.py": "decoded JSON of a recorded session file",
    "workbench/_memo_tables.py": "generic tables keyed by any hashable the memo fields choose",
    "workbench/models/_local_load.py": "llama-cpp-python's objects: an optional extra, untyped",
    "workbench/models/_local.py": "llama.cpp's Llama, grammars and completion dicts (untyped extra)",
    "workbench/models/_local_prompt.py": "a loaded llama.cpp model and its chat formatter (untyped)",
    "workbench/models/_provider_compact.py": "the providers' compaction replies, read by name",
}
"""Modules where `Any` is the honest type: data whose shape the workbench does not choose."""


def _modules() -> list[Path]:
    return sorted(PACKAGE.rglob("*.py"))


def _name(path: Path) -> str:
    return path.relative_to(ROOT).as_posix()


def _any_uses(tree: ast.AST) -> int:
    return sum(1 for n in ast.walk(tree)
               if (isinstance(n, ast.Name) and n.id == "Any")
               or (isinstance(n, ast.Attribute) and n.attr == "Any"))


def _uncommented_lazy_imports(tree: ast.AST, lines: list[str]) -> int:
    """Imports inside a function with no comment on their line or the line above (a lazy
    import says why it is lazy: the light start, an optional extra)."""
    found = 0
    for node in ast.walk(tree):
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        for inner in ast.walk(node):
            if isinstance(inner, (ast.Import, ast.ImportFrom)):
                line = lines[inner.lineno - 1]
                above = lines[inner.lineno - 2].strip() if inner.lineno > 1 else ""
                if "#" not in line and not above.startswith("#"):
                    found += 1
    return found


def _measure() -> tuple[Counter[str], Counter[str]]:
    any_uses: Counter[str] = Counter()
    lazy: Counter[str] = Counter()
    for path in _modules():
        text = path.read_text(encoding="utf-8")
        tree = ast.parse(text)
        any_uses[_name(path)] = _any_uses(tree)
        lazy[_name(path)] = _uncommented_lazy_imports(tree, text.splitlines())
    return +any_uses, +lazy


def _debt() -> dict[str, dict[str, int]]:
    return dict(json.loads(DEBT_FILE.read_text(encoding="utf-8")))


def test_no_module_is_over_the_line_limit() -> None:
    long = {_name(p): n for p in _modules()
            if (n := len(p.read_text(encoding="utf-8").splitlines())) > MAX_LINES}
    assert long == {}, f"split by concern: modules over {MAX_LINES} lines: {long}"


def test_any_appears_only_in_boundary_modules_and_the_shrinking_debt() -> None:
    uses, _ = _measure()
    debt = _debt()["any"]
    over = {m: (n, debt.get(m, 0)) for m, n in uses.items()
            if m not in ANY_BOUNDARY and n > debt.get(m, 0)}
    assert over == {}, f"Any added outside the boundary modules (uses, allowed): {over}"
    stale = {m: (uses.get(m, 0), n) for m, n in debt.items() if uses.get(m, 0) < n}
    assert stale == {}, f"lower these entries of {DEBT_FILE.name} (now, listed): {stale}"
    assert not set(debt) & set(ANY_BOUNDARY), "a boundary module is not debt"
    assert all((PACKAGE.parent / m).is_file() for m in ANY_BOUNDARY), "allowlist names a module gone"


def test_imports_inside_functions_say_why() -> None:
    _, lazy = _measure()
    debt = _debt()["lazy_imports"]
    over = {m: (n, debt.get(m, 0)) for m, n in lazy.items() if n > debt.get(m, 0)}
    assert over == {}, ("an import inside a function needs a comment saying why it is lazy, or "
                        f"belongs at the top (uncommented, allowed): {over}")
    stale = {m: (lazy.get(m, 0), n) for m, n in debt.items() if lazy.get(m, 0) < n}
    assert stale == {}, f"lower these entries of {DEBT_FILE.name} (now, listed): {stale}"


def test_the_measures_see_what_they_count() -> None:
    source = ("from typing import Any\nimport typing\n\n"
              "def f(x: Any) -> typing.Any:\n"
              "    import json\n"
              "    # the light start\n"
              "    import csv\n"
              "    import re  # an optional extra\n"
              "    return x\n")
    tree = ast.parse(source)
    assert _any_uses(tree) == 2
    assert _uncommented_lazy_imports(tree, source.splitlines()) == 1
