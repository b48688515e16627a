"""The shape of the package's source: small modules, `Any` only at the boundaries, imports at the
top (issue "One model pipeline", item 5).

Modules over `MAX_LINES` fail outright. `Any` appears only in the boundary modules of
`ANY_BOUNDARY`, each with its reason, and under no other name (`X = Any`). An import inside a
function carries a comment saying why it is lazy (the light start, an optional extra, a circle),
not only a tool's pragma.
"""

from __future__ import annotations

import ast
import re
from collections import Counter
from pathlib import Path

from tests.conftest import ROOT

PACKAGE = ROOT / "workbench"

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
    "workbench/sessions/importers/_goose_db.py": "rows of Goose's own sessions.db (its schema)",
    "workbench/sessions/importers/_goose_db_rows.py": "rows of Goose's own sessions.db (its schema)",
    "workbench/probes/_questions.py": "a question file's decoded JSON, checked field by field",
}
"""Modules where `Any` is the honest type: data whose shape the workbench does not choose."""


PRAGMA = re.compile(r"noqa(:\s*[A-Z]+[0-9]+(,\s*[A-Z]+[0-9]+)*)?|type:\s*ignore(\[[^\]]*\])?|pragma:[^#]*")


def _says_why(comment: str) -> bool:
    """A comment that gives a reason: words left once a tool's pragmas (noqa, type: ignore,
    pragma: no cover) are taken out."""
    return len(re.findall(r"[A-Za-z]{2,}", PRAGMA.sub("", comment))) >= 2


def _any_aliases(tree: ast.AST) -> list[str]:
    """Names bound to `Any` itself (`X = Any`, `X: TypeAlias = Any`): `Any` under another name
    would carry it out of the boundary modules unseen."""
    found = []
    for node in ast.walk(tree):
        value = node.value if isinstance(node, (ast.Assign, ast.AnnAssign)) else None
        if value is not None and ((isinstance(value, ast.Name) and value.id == "Any")
                                  or (isinstance(value, ast.Attribute) and value.attr == "Any")):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            found += [ast.unparse(t) for t in targets]
    return found


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
                comment = line.split("#", 1)[1] if "#" in line else ""
                if above.startswith("#"):
                    comment += " " + above[1:]
                if not _says_why(comment):
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


def test_no_module_is_over_the_line_limit() -> None:
    long = {_name(p): n for p in _modules()
            if (n := len(p.read_text(encoding="utf-8").splitlines())) > MAX_LINES}
    assert long == {}, f"split by concern: modules over {MAX_LINES} lines: {long}"


def test_any_appears_only_in_boundary_modules() -> None:
    uses, _ = _measure()
    outside = {m: n for m, n in uses.items() if m not in ANY_BOUNDARY}
    assert outside == {}, f"Any outside the boundary modules (uses): {outside}"
    assert all((PACKAGE.parent / m).is_file() for m in ANY_BOUNDARY), "allowlist names a module gone"
    unused = sorted(m for m in ANY_BOUNDARY if not uses.get(m))
    assert unused == [], f"boundary modules that no longer use Any: drop them from the list: {unused}"


def test_any_is_never_renamed() -> None:
    aliases = {_name(p): names for p in _modules()
               if (names := _any_aliases(ast.parse(p.read_text(encoding="utf-8"))))}
    assert aliases == {}, f"Any bound to another name (it would leave the boundary unseen): {aliases}"


def test_imports_inside_functions_say_why() -> None:
    _, lazy = _measure()
    assert dict(lazy) == {}, ("an import inside a function needs a comment saying why it is lazy, "
                              f"or belongs at the top (uncommented, per module): {dict(lazy)}")


def test_the_measures_see_what_they_count() -> None:
    source = ("from typing import Any\nimport typing\n\n"
              "def f(x: Any) -> typing.Any:\n"
              "    import json\n"
              "    # the light start\n"
              "    import csv\n"
              "    import re  # an optional extra\n"
              "    import os  # noqa: F401\n"
              "    return x\n"
              "Loose = Any\n"
              "Spelled: typing.TypeAlias = typing.Any\n")
    tree = ast.parse(source)
    assert _any_uses(tree) == 4
    assert _uncommented_lazy_imports(tree, source.splitlines()) == 2  # json, and os's pragma
    assert _any_aliases(tree) == ["Loose", "Spelled"]
    assert _says_why("the light start") and not _says_why(" noqa: PLC0415")
    assert not _says_why(" type: ignore[attr-defined]")
