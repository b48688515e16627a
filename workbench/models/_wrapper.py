"""`ModelWrapper`: what a model wrapper answers for the model it wraps.

The response cache, the shared-call table and the local executor's call slots each wrap a
model and change how it is called, never what it answers. Each has to say the same things
about the model inside: its id, its identity (what keys its answers), its context window, its
label, and its simulated window's check, found down the wrapper chain (``.inner``).
"""

from __future__ import annotations

from typing import Any

from workbench.messages import Message
from workbench.models._identity import model_identity, model_label, model_name

__all__ = ["ModelWrapper", "find_window_check"]


def find_window_check(model: Any) -> Any:
    """The ``check_window`` of `model` or of the first wrapper under it that has one, or None."""
    seen = set()
    while model is not None and id(model) not in seen:
        seen.add(id(model))
        check = getattr(model, "check_window", None)
        if callable(check):
            return check
        model = getattr(model, "inner", None)
    return None


class ModelWrapper:
    """Mixin for a wrapper: call `_wrap` in ``__init__``; the rest answers for ``inner``."""

    inner: Any

    def _wrap(self, inner: Any) -> None:
        self.inner = inner
        self._identity = model_identity(inner)
        self._check = find_window_check(inner)

    @property
    def model(self) -> str:
        """The inner model's id."""
        return model_name(self.inner)

    def check_window(self, system: str, messages: list[Message]) -> None:
        """The inner simulated window's check (none: every prompt fits)."""
        if self._check is not None:
            self._check(system, messages)

    def cache_identity(self) -> Any:
        """The inner model's identity (wrapping does not change answers)."""
        return self._identity

    def context_window(self) -> int | None:
        """The inner model's context window, when it reports one."""
        fn = getattr(self.inner, "context_window", None)
        return fn() if callable(fn) else None

    def describe(self) -> str:
        """The inner model's label."""
        return model_label(self.inner)
