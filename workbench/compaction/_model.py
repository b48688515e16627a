"""What the compaction core needs from a model: `Usage` and the one-method `CompactionModel`.

Mirrors the crate's ``model.rs``. Every model the workbench runs (litellm, the embedded local
model, the extractive baseline, caches and window caps, test fakes) implements this protocol.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, replace
from typing import Any, Protocol, runtime_checkable

from workbench.messages import Message


@dataclass
class Usage:
    """Billable usage of one model call (Goose's ``ProviderUsage``).

    Token fields are None when the provider did not report them; `cost` is None when no price
    is known (never a made-up number).
    """

    model: str = ""
    input_tokens: int | None = None
    output_tokens: int | None = None
    total_tokens: int | None = None
    cache_read_input_tokens: int | None = None
    cache_write_input_tokens: int | None = None
    cost: float | None = None
    extra: dict[str, Any] = field(default_factory=dict)
    """Provider details kept for the record (finish reason, resolved model version...)."""

    def to_dict(self) -> dict[str, Any]:
        """A plain dict (JSON-ready)."""
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Usage:
        """Inverse of `to_dict`; unknown keys go to `extra`."""
        names = set(cls.__dataclass_fields__)
        known = {k: v for k, v in d.items() if k in names}
        extra = dict(known.pop("extra", {}) or {})
        extra.update({k: v for k, v in d.items() if k not in names})
        return cls(**known, extra=extra)

    def copy(self, **changes: Any) -> Usage:
        """A copy with fields replaced."""
        return replace(self, **changes)

    def __add__(self, other: Usage) -> Usage:
        def add(a: Any, b: Any) -> Any:
            if a is None:
                return b
            if b is None:
                return a
            return a + b

        return Usage(
            model=self.model or other.model,
            input_tokens=add(self.input_tokens, other.input_tokens),
            output_tokens=add(self.output_tokens, other.output_tokens),
            total_tokens=add(self.total_tokens, other.total_tokens),
            cache_read_input_tokens=add(self.cache_read_input_tokens, other.cache_read_input_tokens),
            cache_write_input_tokens=add(self.cache_write_input_tokens,
                                         other.cache_write_input_tokens),
            cost=add(self.cost, other.cost),
        )


@runtime_checkable
class CompactionModel(Protocol):
    """A model the summarizer can call: the conversation goes in `system`, the request in `messages`."""

    async def complete(self, system: str, messages: list[Message]) -> tuple[Message, Usage]:
        """Return the assistant reply and the billable usage of the call.

        Raises:
            ContextLengthExceeded: the prompt does not fit the model's window.
            ModelCallError: any other failure.
        """
        ...
