"""Prompt sizes in a model's own tokenizer, recorded so that every machine judges a window alike.

A simulated window in front of a model that counts in its own tokenizer (the local llama.cpp
models) needs that tokenizer, which only the ``local`` extra provides. So the count the cap
computed for a prompt is kept in the recording beside the replies (`ResponseCache`, table
``prompt_tokens``) and a replay uses it first, on a machine with the tokenizer or without: the
same recording takes the same ladder steps everywhere. Recording counts exactly (no prefix
shortcut), so one count serves every window.

`RecordedCounts` reads and writes a recording; `SnapshotCounts` holds a recording's counts in
memory (what a Ray worker gets, since it never opens the file) and hands new ones to a sink.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence
from typing import Protocol

from workbench.messages import Message
from workbench.models._cache_keys import canonical_json, prompt_hash
from workbench.models._recording import ResponseCache

__all__ = ["PromptCounts", "RecordedCounts", "SnapshotCounts", "count_key"]

COUNT_KEY_VERSION = 1
"""Bump when the count key recipe changes."""


class PromptCounts(Protocol):
    """Where a window cap finds and keeps prompt sizes in a model's own tokenizer."""

    writable: bool
    """New counts are recorded (a read-write cache), so they are computed exactly."""

    def get(self, key: str) -> int | None:
        """The recorded count for `key`, or None."""
        ...

    def put(self, key: str, tokenizer: str, tokens: int) -> None:
        """Record a count (only called when `writable`)."""
        ...


def count_key(identity: object, tokenizer: str, system: str, messages: Sequence[Message]) -> str:
    """sha256 hex naming one prompt's size: the tokenizer, the model identity (which settles
    anything the model adds to the prompt, such as a cue) and the prompt's own hash."""
    body = canonical_json({"v": COUNT_KEY_VERSION, "tokenizer": tokenizer, "model": identity,
                           "prompt": prompt_hash(system, messages)})
    return hashlib.sha256(body.encode()).hexdigest()


class RecordedCounts:
    """Counts kept in a recording (a `ResponseCache` file).

    Args:
        cache: The recording.
        writable: Record new counts (the cache is read-write); a replay only reads.
    """

    def __init__(self, cache: ResponseCache, writable: bool) -> None:
        self.cache = cache
        self.writable = writable and not getattr(cache, "read_only", False)

    def get(self, key: str) -> int | None:
        """The recorded count, or None."""
        return self.cache.get_tokens(key)

    def put(self, key: str, tokenizer: str, tokens: int) -> None:
        """Record a count (kept when one exists)."""
        if self.writable:
            self.cache.put_tokens(key, tokenizer, tokens)

    def __repr__(self) -> str:
        return f"RecordedCounts({self.cache!r}, writable={self.writable})"


class SnapshotCounts:
    """A recording's counts held in memory; new counts go to `sink` when one is given.

    Args:
        counts: Count by key, as `ResponseCache.all_tokens` returns them.
        sink: Called with (key, tokenizer, tokens) for each new count; None makes it read-only.
    """

    def __init__(self, counts: dict[str, int],
                 sink: Callable[[str, str, int], object] | None = None) -> None:
        self.counts = dict(counts)
        self.sink = sink
        self.writable = sink is not None

    def get(self, key: str) -> int | None:
        """The count, or None."""
        return self.counts.get(key)

    def put(self, key: str, tokenizer: str, tokens: int) -> None:
        """Keep the count here and hand it to the sink."""
        if key not in self.counts:
            self.counts[key] = tokens
            if self.sink is not None:
                self.sink(key, tokenizer, tokens)

    def __repr__(self) -> str:
        return f"SnapshotCounts({len(self.counts)} counts, writable={self.writable})"
