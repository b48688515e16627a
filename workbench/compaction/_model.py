"""What the compaction core needs from a model: `Usage` and the one-method `CompactionModel`.

Mirrors the crate's ``model.rs``. Every model the workbench runs (litellm, the embedded local
model, the extractive baseline, caches and window caps, test fakes) implements this protocol.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, replace
from typing import Protocol, TypedDict, TypeVar, Unpack, runtime_checkable

from workbench._json_types import JSONObject, JSONValue
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
    extra: JSONObject = field(default_factory=dict)
    """Provider details kept for the record (finish reason, resolved model version...)."""

    def to_dict(self) -> JSONObject:
        """A plain dict (JSON-ready)."""
        return asdict(self)

    @classmethod
    def from_dict(cls, d: JSONObject) -> Usage:
        """Inverse of `to_dict`; unknown keys go to `extra`.

        A field of another JSON type than `to_dict` writes (a count that is not an integer,
        a cost that is not a number) reads as unreported (None).
        """
        names = set(cls.__dataclass_fields__)
        kept = d.get("extra")
        extra = dict(kept) if isinstance(kept, dict) else {}
        extra.update({k: v for k, v in d.items() if k not in names})
        model = d.get("model", "")
        cost = d.get("cost")
        return cls(model=model if isinstance(model, str) else "",
                   **{name: _count(d.get(name)) for name in _COUNTS},
                   cost=cost if isinstance(cost, (int, float)) and not isinstance(cost, bool)
                   else None,
                   extra=extra)

    def copy(self, **changes: Unpack[UsageChanges]) -> Usage:
        """A copy with fields replaced (as `dataclasses.replace`, which costs about three times
        as much: a call's usage is copied several times on its way through the pipeline)."""
        if type(self) is not Usage or not _FIELDS.issuperset(changes):
            return replace(self, **changes)  # a subclass, or a name replace() rejects
        new = object.__new__(Usage)
        fields = new.__dict__
        fields.update(self.__dict__)
        fields.update(changes)
        return new

    def __add__(self, other: Usage) -> Usage:
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


_FIELDS = frozenset(Usage.__dataclass_fields__)
"""`Usage`'s field names (what `Usage.copy` may replace)."""

_N = TypeVar("_N", int, float)


def add(a: _N | None, b: _N | None) -> _N | None:
    """Sum of two reported figures, where None (unreported) adds nothing."""
    if a is None:
        return b
    if b is None:
        return a
    return a + b


_COUNTS = ("input_tokens", "output_tokens", "total_tokens", "cache_read_input_tokens",
           "cache_write_input_tokens")


def _count(value: JSONValue) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


class UsageChanges(TypedDict, total=False):
    """The fields `Usage.copy` may replace."""

    model: str
    input_tokens: int | None
    output_tokens: int | None
    total_tokens: int | None
    cache_read_input_tokens: int | None
    cache_write_input_tokens: int | None
    cost: float | None
    extra: JSONObject


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
