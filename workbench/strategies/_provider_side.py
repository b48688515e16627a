"""What the two provider-side policies share: finding the live litellm model they need, and
saying why they cannot run when there is none.

A provider-side compaction happens on the provider's servers: no offline model can stand in for
it, so without a live model of that provider (offline, no key, a replay-only recording) the
strategy is ``n/a`` with the reason (`ProviderSide.unavailable`), never simulated.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, ClassVar

from workbench.errors import StrategyUnavailable
from workbench.strategies._base import Strategy

if TYPE_CHECKING:
    from workbench.models._litellm import LiteLLMModel

__all__ = ["ProviderSide", "find_litellm"]


def find_litellm(model: object) -> LiteLLMModel | None:
    """The `LiteLLMModel` inside `model`'s wrapper chain (``.inner``), or None."""
    # the litellm adapter's module loads when a provider-side policy looks, not with the registry
    from workbench.models._litellm import LiteLLMModel

    seen = set()
    while model is not None and id(model) not in seen:
        seen.add(id(model))
        if isinstance(model, LiteLLMModel):
            return model
        model = getattr(model, "inner", None)
    return None


def _replay_only(model: object) -> bool:
    seen = set()
    while model is not None and id(model) not in seen:
        seen.add(id(model))
        if getattr(model, "mode", None) == "replay":
            return True
        model = getattr(model, "inner", None)
    return False


class ProviderSide(Strategy):
    """Base of a provider-side policy: `provider` names the litellm provider prefix it needs
    and `key_env` the variable its key is read from."""

    provider: ClassVar[str] = ""
    key_env: ClassVar[str] = ""
    feature: ClassVar[str] = ""
    uses_template = False

    def unavailable(self, model: object, window: int | None = None) -> str | None:
        """Why this policy cannot run with `model` (a model object or a model string) at
        `window`, or None when it can."""
        name = model if isinstance(model, str) else str(getattr(model, "model", "") or "")
        need = (f"{self.feature} runs on {self.provider}'s servers: it needs a live "
                f"{self.provider} model through litellm")
        if isinstance(model, str):
            if not name.startswith(f"{self.provider}/"):
                return f"{need}, not {name or 'no model'}"
        else:
            live = find_litellm(model)
            if live is None:
                return f"{need} (this run's summarizer is {name or 'none'}, which is offline)"
            if not str(live.model).startswith(f"{self.provider}/"):
                return f"{need}, not {live.model}"
            if _replay_only(model):
                return f"{need}; a replay-only run sends no request"
            params = getattr(live, "params", {}) or {}
            if params.get("api_key") or params.get("api_base"):
                return self.limit(window)
        if not os.environ.get(self.key_env):
            return f"{need}; set {self.key_env} to run it"
        return self.limit(window)

    def limit(self, window: int | None) -> str | None:
        """Why the provider refuses this policy's settings at `window`, or None."""
        return None

    def _live(self, model: object, window: int | None = None) -> LiteLLMModel:
        reason = self.unavailable(model, window)
        if reason is not None:
            raise StrategyUnavailable(f"{self.name}: n/a: {reason}")
        live = find_litellm(model)
        if live is None:  # `unavailable` names this case first; kept for the type's sake
            raise StrategyUnavailable(f"{self.name}: n/a: not a litellm model")
        return live
