"""The strategy registry: ``@strategy("name")`` registers a `Strategy` class by name.

Built-in strategies register when `workbench.strategies` is imported (which always runs before
this module, its parent package, is imported); `get_strategy` builds
one from a name and a settings mapping, validating the settings against the class's pydantic
``Settings`` (unknown keys are errors that name the key).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TypeVar

from pydantic import BaseModel, ValidationError

from workbench._suggest import did_you_mean
from workbench.errors import ConfigError
from workbench.strategies._base import Strategy

__all__ = ["STRATEGIES", "get_strategy", "strategy", "strategy_class", "strategy_names"]

STRATEGIES: dict[str, type[Strategy]] = {}
"""Registered strategy classes by name, in registration order."""

S = TypeVar("S", bound=type[Strategy])


def strategy(name: str) -> Callable[[S], S]:
    """Register a `Strategy` subclass under `name` (the name experiment files use).

    Raises:
        ConfigError: `name` is already registered by another class.
    """

    def register(cls: S) -> S:
        known = STRATEGIES.get(name)
        if known is not None and known is not cls:
            raise ConfigError(f"strategy {name!r} is already registered by {known.__qualname__}")
        cls.name = name
        STRATEGIES[name] = cls
        return cls

    return register


def strategy_names() -> list[str]:
    """Names of every registered strategy."""
    return list(STRATEGIES)


def strategy_class(name: str) -> type[Strategy]:
    """The class registered as `name`.

    Raises:
        ConfigError: unknown name; the message lists the known ones (sorted).
    """
    try:
        return STRATEGIES[name]
    except KeyError:
        known = ", ".join(sorted(STRATEGIES))
        raise ConfigError(f"unknown strategy {name!r}{did_you_mean(name, STRATEGIES)} (known: "
                          f"{known})") from None


def validate_settings(name: str, settings: Mapping[str, object] | None = None) -> BaseModel:
    """`settings` validated by strategy `name`'s ``Settings`` model.

    Raises:
        ConfigError: unknown strategy, unknown key or bad value (named by key).
    """
    cls = strategy_class(name)
    try:
        return cls.Settings.model_validate(dict(settings or {}))
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in err['loc']) or '(settings)'}: {err['msg']}"
            for err in exc.errors(include_url=False))
        raise ConfigError(f"strategy {name!r}: {problems}") from None


def get_strategy(name: str, settings: Mapping[str, object] | None = None, /,
                 **kwargs: object) -> Strategy:
    """Build strategy `name` with `settings` (a mapping and/or keywords).

    Example: ``get_strategy("mask", keep_last=3)``.

    Raises:
        ConfigError: unknown strategy or invalid settings.
    """
    merged = {**dict(settings or {}), **kwargs}
    return strategy_class(name)(validate_settings(name, merged))
