"""A pydantic validation error as the spec's own words: ``source: models[1].concurrency: why``.

An unknown key names the closest key a spec may hold, in any of its tables.
"""

from __future__ import annotations

from pydantic import BaseModel, ValidationError

from workbench._suggest import did_you_mean


def describe_errors(exc: ValidationError, source: str, root: type[BaseModel]) -> str:
    """One line per error, prefixed with `source` and the key path.

    Args:
        exc: The validation error.
        source: The file (or ``command line``) the values came from.
        root: The model validated (its fields and its tables' fields are the known keys).
    """
    lines = []
    for err in exc.errors(include_url=False):
        where = _loc_path(list(err["loc"]))
        msg = err["msg"]
        if err["type"] == "extra_forbidden" and err["loc"]:
            msg += did_you_mean(str(err["loc"][-1]), field_names(root))
        # A check of the whole spec names its own key in the message.
        lines.append(f"{source}: {where}: {msg}" if where else f"{source}: {msg}")
    return "\n".join(lines)


def field_names(root: type[BaseModel]) -> set[str]:
    """Every key `root` may hold, in any of its nested tables."""
    names: set[str] = set()
    stack: list[type[BaseModel]] = [root]
    seen: set[type[BaseModel]] = set()
    while stack:
        model = stack.pop()
        if model in seen:
            continue
        seen.add(model)
        for name, info in model.model_fields.items():
            names.add(name)
            for arg in (getattr(info.annotation, "__args__", None) or (info.annotation,)):
                inner = getattr(arg, "__args__", None) or (arg,)
                stack.extend(t for t in inner if isinstance(t, type) and issubclass(t, BaseModel))
    return names


def _loc_path(loc: list[int | str]) -> str:
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += ("." if out else "") + str(part)
    return out
