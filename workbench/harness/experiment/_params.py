"""Template parameters: declared with domains in ``variant.toml``, read by templates as Jinja variables.

A variant folder declares parameters under ``[params.<name>]``::

    [params.intent_limit]
    default = 3
    values = [1, 2, 3, 5, 10]        # a list of allowed values, or for ints: min, max, step
    description = "user goals rendered"

A boolean default needs no domain (``false``/``true``). Values may be ints, strings, booleans or
lists of those (a list-valued parameter lists its allowed lists under ``values``).

A *point* is one assignment of values; its label is ``name{k=v,...}`` listing only the values that
differ from the defaults (so the defaults point is labelled by the bare name). Templates receive
the values as render variables (`Templates.params`), so every point of a variant renders through
one compiled template per source. Exporting a point writes them in as ``{% set k = v %}`` lines
(`bake`), for Goose, which knows nothing of parameters; baked or not, a point renders the same
text, so the prompt (and the response-cache key over it) does not depend on which. A prompt that
does not read a parameter renders byte-identically across its values, so summary-only
parameters never change the prompt sent to the model.
"""

from __future__ import annotations

import itertools
import json
import random
import re
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TypeAlias

from workbench.compaction._templates import bake, jinja_literal
from workbench.compaction._templates import template_variables as _sandbox_variables
from workbench.errors import ConfigError
from workbench.harness.experiment._toml import TOMLValue

__all__ = ["MAX_DOMAIN", "MAX_POINTS", "PARAMS_KEY", "RESERVED", "Param", "bake", "expand_points",
           "format_value", "jinja_literal", "parse_label", "parse_param", "parse_params",
           "point_label", "resolve_point", "template_variables"]

PARAMS_KEY = "params"
MAX_DOMAIN = 10_000
"""Largest domain one parameter may declare (ints by min/max/step expand to a list)."""
MAX_POINTS = 100_000
"""Largest grid a tune may expand (product of the searched domains)."""
RESERVED = frozenset({"messages", "user_intent", "technical_concepts", "files", "errors_and_fixes",
                      "problem_solving", "user_messages", "pending_tasks", "current_work",
                      "next_step", "loop", "range", "true", "false", "none"})
"""Names a parameter may not take: the templates' own variables and Jinja words."""
_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_BARE_VALUE = re.compile(r"^[A-Za-z0-9_.-]+$")

ParamValue: TypeAlias = TOMLValue
"""A parameter's value: what ``variant.toml`` declares, or a label's ``k=v`` reads as TOML."""


@dataclass(frozen=True)
class Param:
    """One declared template parameter.

    Attributes:
        name: The Jinja variable name.
        default: Its value when a point does not set it.
        domain: Every allowed value, in declaration order.
        description: What it changes (shown in READMEs).
    """

    name: str
    default: ParamValue
    domain: tuple[ParamValue, ...]
    description: str = ""

    def check(self, value: ParamValue, where: str) -> ParamValue:
        """`value` when it is in the domain (ints accept a whole float such as 3.0).

        Raises:
            ConfigError: the value is outside the domain; names `where` and the allowed values.
        """
        if isinstance(value, float) and value.is_integer() and not isinstance(self.default, bool):
            value = int(value)
        for allowed in self.domain:
            if type(allowed) is type(value) and allowed == value:
                return allowed
        shown = ", ".join(format_value(v) for v in self.domain[:12])
        more = ", ..." if len(self.domain) > 12 else ""
        raise ConfigError(f"{where}: {self.name} = {format_value(value)} is not allowed "
                          f"(domain: {shown}{more})")


def _same_kind(value: ParamValue, default: ParamValue) -> bool:
    if isinstance(default, bool) or isinstance(value, bool):
        return isinstance(value, bool) and isinstance(default, bool)
    if isinstance(default, list):
        return isinstance(value, list)
    return type(value) is type(default)


def parse_param(name: str, spec: TOMLValue, where: str) -> Param:
    """Validate one ``[params.<name>]`` table.

    Args:
        name: The parameter name.
        spec: Its table (``default`` plus ``values`` or ``min``/``max``/``step``), or a bare
            default value (a boolean, or any value with a one-point domain).
        where: The file, for messages.

    Raises:
        ConfigError: bad name, missing default, empty or mistyped domain, default outside it.
    """
    at = f"{where}: params.{name}"
    if not _NAME.match(name) or name in RESERVED:
        raise ConfigError(f"{at}: not a usable parameter name (letters, digits, underscore; "
                          f"not one of the templates' own variables)")
    if not isinstance(spec, dict):
        spec = {"default": spec}
    unknown = set(spec) - {"default", "values", "min", "max", "step", "description"}
    if unknown:
        raise ConfigError(f"{at}: unknown key {sorted(unknown)[0]!r}; use default, values, "
                          "min, max, step, description")
    if "default" not in spec:
        raise ConfigError(f"{at}: needs a default")
    default = spec["default"]
    if "values" in spec:
        domain = list(spec["values"]) if isinstance(spec["values"], list) else None
        if not domain:
            raise ConfigError(f"{at}: values must be a non-empty list")
    elif "min" in spec or "max" in spec:
        lo, hi, step = spec.get("min"), spec.get("max"), spec.get("step", 1)
        if not (isinstance(lo, int) and isinstance(hi, int) and isinstance(step, int)) \
                or any(isinstance(v, bool) for v in (lo, hi, step)) or step <= 0 or hi < lo:
            raise ConfigError(f"{at}: min/max/step must be integers with min <= max, step > 0")
        if (hi - lo) // step + 1 > MAX_DOMAIN:
            raise ConfigError(f"{at}: more than {MAX_DOMAIN} values; raise step")
        domain = list(range(lo, hi + 1, step))
    elif isinstance(default, bool):
        domain = [False, True]
    else:
        domain = [default]
    if len(domain) > MAX_DOMAIN:
        raise ConfigError(f"{at}: more than {MAX_DOMAIN} values")
    for value in domain:
        if not _same_kind(value, default):
            raise ConfigError(f"{at}: value {format_value(value)} is not of the default's type "
                              f"({type(default).__name__})")
    param = Param(name, default, tuple(domain), str(spec.get("description", "")))
    param.check(default, f"{at} (default)")
    return param


def parse_params(table: object, where: str) -> dict[str, Param]:
    """The ``[params]`` table of a ``variant.toml``, in declaration order."""
    if not isinstance(table, dict):
        raise ConfigError(f"{where}: params must be a table of [params.<name>] tables")
    return {name: parse_param(name, spec, where) for name, spec in table.items()}


# ---- labels ----------------------------------------------------------------------------------

def format_value(value: ParamValue) -> str:
    """A value as written in a label: ``3``, ``true``, ``lean``, ``"two words"``, ``[a,b]``."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return str(value)
    if isinstance(value, list):
        return "[" + ",".join(format_value(v) for v in value) + "]"
    text = str(value)
    if _BARE_VALUE.match(text) and text not in ("true", "false") and not _is_number(text):
        return text
    return json.dumps(text, ensure_ascii=False)


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def point_label(base: str, values: dict[str, ParamValue], params: dict[str, Param]) -> str:
    """``base{k=v,...}`` with the values that differ from the defaults, in declaration order."""
    changed = [f"{name}={format_value(values[name])}" for name, p in params.items()
               if name in values and values[name] != p.default]
    return f"{base}{{{','.join(changed)}}}" if changed else base


def _split_top(text: str) -> list[str]:
    parts, depth, quote, current = [], 0, "", ""
    for ch in text:
        if quote:
            current += ch
            if ch == quote:
                quote = ""
            continue
        if ch in "\"'":
            quote = ch
        elif ch == "[":
            depth += 1
        elif ch == "]":
            depth -= 1
        elif ch == "," and depth == 0:
            parts.append(current)
            current = ""
            continue
        current += ch
    parts.append(current)
    return [p.strip() for p in parts if p.strip()]


def _parse_value(text: str) -> ParamValue:
    try:
        return tomllib.loads(f"v = {text}")["v"]
    except tomllib.TOMLDecodeError:
        pass
    if text.startswith("[") and text.endswith("]"):
        return [_parse_value(p) for p in _split_top(text[1:-1])]
    return text  # a bare word: a string


def parse_label(text: str) -> tuple[str, dict[str, ParamValue]]:
    """Split ``"lean-facts{intent_limit=3,key_code=false}"`` into the name and raw values.

    Raises:
        ConfigError: unbalanced braces or an assignment without ``=``.
    """
    text = text.strip()
    if "{" not in text:
        if "}" in text:
            raise ConfigError(f"templates: {text!r}: '}}' without '{{'")
        return text, {}
    if not text.endswith("}"):
        raise ConfigError(f"templates: {text!r}: a parameter point ends with '}}', "
                          "as in lean-facts{intent_limit=3}")
    base, _, inner = text[:-1].partition("{")
    values: dict[str, ParamValue] = {}
    for part in _split_top(inner):
        key, eq, raw = part.partition("=")
        if not eq or not key.strip():
            raise ConfigError(f"templates: {text!r}: {part!r} is not name=value")
        values[key.strip()] = _parse_value(raw.strip())
    return base.strip(), values


def resolve_point(params: dict[str, Param], raw: dict[str, ParamValue],
                  where: str) -> dict[str, ParamValue]:
    """Defaults overlaid with `raw`, every value checked against its domain.

    Raises:
        ConfigError: an unknown parameter (the message lists the declared ones) or a value
            outside its domain.
    """
    for name in raw:
        if name not in params:
            known = ", ".join(params) or "none declared"
            raise ConfigError(f"{where}: unknown parameter {name!r} (declared: {known})")
    return {name: p.check(raw[name], where) if name in raw else p.default
            for name, p in params.items()}


# ---- templates -------------------------------------------------------------------------------

def template_variables(source: str, name: str = "<template>") -> set[str]:
    """The undeclared variables a template reads, found by the renderer's own sandbox under
    its limits (a plain Jinja environment would fold constants such as ``'x'|center(10**9)``
    while it parses, with no limit in force).

    Raises:
        TemplateError: the template does not parse, or crosses a limit while parsing (nesting
            depth, length, time); names the template.
    """
    return _sandbox_variables(source, name)


# ---- grids -----------------------------------------------------------------------------------

def expand_points(params: dict[str, Param], search: Mapping[str, object], *, sample: int | None = None,
                  seed: int = 0, where: str = "tune") -> list[dict[str, ParamValue]]:
    """Every point of the grid `search` spans (or a seeded random sample of it).

    Args:
        params: The declared parameters.
        search: Parameter -> list of values to try, or ``"all"`` for its declared domain. Empty:
            every declared parameter over its whole domain.
        sample: Draw this many distinct points at random instead of the full grid.
        seed: The sampling seed.
        where: Context for messages.

    Returns:
        Full value assignments (unsearched parameters at their defaults), grid order, the
        defaults point first when it is part of the grid.

    Raises:
        ConfigError: unknown parameters, values outside domains, or a grid over `MAX_POINTS`
            without `sample`.
    """
    chosen = search or {name: "all" for name in params}
    axes: list[tuple[str, list[ParamValue]]] = []
    for name, values in chosen.items():
        if name not in params:
            raise ConfigError(f"{where}: unknown parameter {name!r} "
                              f"(declared: {', '.join(params) or 'none'})")
        if values == "all":
            domain = list(params[name].domain)
        elif isinstance(values, list) and values:
            domain = list(dict.fromkeys(params[name].check(v, where) for v in values)) \
                if not isinstance(params[name].default, list) else \
                [params[name].check(v, where) for v in values]
        else:
            raise ConfigError(f"{where}: {name}: give a non-empty list of values or \"all\"")
        axes.append((name, domain))
    total = 1
    for _, domain in axes:
        total *= len(domain)
    if sample is None and total > MAX_POINTS:
        raise ConfigError(f"{where}: the grid has {total} points (over {MAX_POINTS}); "
                          "set sample = N to draw a random subset")
    defaults = {name: p.default for name, p in params.items()}
    if sample is not None and sample < total:
        rng = random.Random(seed)
        picks = sorted(rng.sample(range(total), sample))
        combos = [_combo_at(axes, i) for i in picks]
    else:
        combos = [tuple(c) for c in itertools.product(*(d for _, d in axes))]
    points = [{**defaults, **dict(zip((n for n, _ in axes), combo, strict=True))}
              for combo in combos]
    points.sort(key=lambda p: p != defaults)  # stable: the defaults point (if any) first
    return points


def _combo_at(axes: list[tuple[str, list[ParamValue]]],
              index: int) -> tuple[ParamValue, ...]:
    out = []
    for _, domain in reversed(axes):
        index, rem = divmod(index, len(domain))
        out.append(domain[rem])
    return tuple(reversed(out))
