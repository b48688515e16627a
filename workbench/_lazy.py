"""`lazy_exports`: a package's public names imported on first use (PEP 562).

A package lists ``name -> module`` and gets the module-level ``__getattr__`` and ``__dir__``
that import a name's module the first time the name is read and keep the value in the
package's namespace, so ``import workbench.harness`` stays light.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping

__all__ = ["lazy_exports"]


def lazy_exports(package: str, exports: Mapping[str, str], namespace: dict[str, object]
                 ) -> tuple[Callable[[str], object], Callable[[], list[str]]]:
    """The ``(__getattr__, __dir__)`` pair for `package` (its ``globals()`` as `namespace`).

    Reading a name not in `exports` raises ``AttributeError("module '<package>' has no
    attribute '<name>'")``, as Python's own lookup does.
    """
    def __getattr__(name: str) -> object:
        module = exports.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module), name)
        namespace[name] = value
        return value

    def __dir__() -> list[str]:
        public = namespace.get("__all__", ())
        return sorted(set(namespace) | set(public if isinstance(public, (list, tuple)) else ()))

    return __getattr__, __dir__
