"""A Ray run's response cache: the driver's file, shipped to the coordinator and written back.

Neither the coordinator nor a worker ever opens a recording. Under Ray Client the driver is
not a node of the cluster, and a cluster's nodes need not share a disk, so a path names a
file on the driver's machine only. The driver opens each recording the run's models use (the
same process-wide connection a local run uses: a recording that may not be written replays
read-only, and recording into it is a `ConfigError` before any cell starts), and puts its
answers and prompt sizes into Ray's object store once (`snapshot`). The coordinator serves
lookups from that copy (`Recording`) and keeps what the run records; the driver takes it back
each time it ends a cell (`Recording.drain`) and writes it to its file (`write_back`), and
the workers return the prompt sizes they counted with each cell. So a Ray run needs nothing
on the head but the workbench itself, and leaves the recording as a local run would.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from workbench.compaction._model import Usage
from workbench.messages import Message
from workbench.models._cache import (
    Refusal,
    ResponseCache,
    decode_response,
    refusal_row,
    response_row,
)
from workbench.models._spec import shared_cache

Row = tuple[str, str, str | None]
"""A stored answer as the coordinator holds it: (message_json, usage_json, refusal)."""
ResponseRow = dict[str, str | int | float | None]
"""A ``responses`` row as `response_row` and `refusal_row` build it: column -> SQLite value."""


@dataclass
class Batch:
    """What the run recorded since the last drain: new ``responses`` rows and lookup counts."""

    rows: list[ResponseRow] = field(default_factory=list)
    hits: dict[str, int] = field(default_factory=dict)


class Recording:
    """One recording in the coordinator's memory: the driver's snapshot plus this run's answers.

    Args:
        rows: The snapshot, as `ResponseCache.all_responses` returns it.
    """

    def __init__(self, rows: dict[str, Row] | None = None) -> None:
        self._rows: dict[str, Row] = dict(rows or {})
        self._pending = Batch()

    def __len__(self) -> int:
        return len(self._rows)

    def get(self, key: str, *, count_hit: bool = True) -> tuple[Message, Usage] | Refusal | None:
        """The recorded reply and usage (fresh objects), a recorded `Refusal`, or None.

        Args:
            key: A `cache_key`.
            count_hit: Count the lookup in the row's ``hits`` (read-write mode, as locally).
        """
        row = self._rows.get(key)
        if row is None:
            return None
        if count_hit:
            self._pending.hits[key] = self._pending.hits.get(key, 0) + 1
        return decode_response(*row)

    def put(self, key: str, *, model: str, prompt_sha256: str, message: Message, usage: Usage,
            latency_ms: float | None = None) -> None:
        """Record a reply (the first recording of a key stays, as in the file)."""
        self._keep(response_row(key, model=model, prompt_sha256=prompt_sha256, message=message,
                                usage=usage, latency_ms=latency_ms))

    def put_refusal(self, key: str, *, model: str, prompt_sha256: str, error: str) -> None:
        """Record that the real model refused this prompt as too long."""
        self._keep(refusal_row(key, model=model, prompt_sha256=prompt_sha256, error=error))

    def _keep(self, row: ResponseRow) -> None:
        key, message_json, usage_json, refusal = (row["key"], row["message_json"],
                                                  row["usage_json"], row["refusal"])
        if key in self._rows:
            return
        # as `response_row` and `refusal_row` build them
        assert isinstance(key, str) and isinstance(message_json, str)
        assert isinstance(usage_json, str) and (refusal is None or isinstance(refusal, str))
        self._rows[key] = (message_json, usage_json, refusal)
        self._pending.rows.append(row)

    def drain(self) -> Batch | None:
        """What was recorded and looked up since the last drain (None when nothing was)."""
        if not self._pending.rows and not self._pending.hits:
            return None
        batch, self._pending = self._pending, Batch()
        return batch


# -- the driver's side ------------------------------------------------------------------------

def open_recordings(plans: Iterable[tuple[str, str | None]]) -> dict[str, ResponseCache]:
    """The driver's connection to every recording the planned models use, opened for the
    strongest mode any of them needs (read-write over replay).

    Args:
        plans: (cache mode, recording file or None) of each planned model.

    Raises:
        ConfigError: a recording that may not be written is to be recorded into.
    """
    modes: dict[str, str] = {}
    for mode, path in plans:
        if path is not None and mode != "off":
            modes[path] = "rw" if "rw" in (mode, modes.get(path)) else "replay"
    return {path: shared_cache(path, mode) for path, mode in modes.items()}


def snapshot(cache: ResponseCache) -> tuple[dict[str, Row], dict[str, int]]:
    """A recording's answers and prompt sizes, as they travel to the cluster."""
    return cache.all_responses(), cache.all_tokens()


def write_back(cache: ResponseCache, batch: Batch | None = None,
               counts: Sequence[tuple[str, str, int]] = ()) -> None:
    """Write what the coordinator recorded and the prompt sizes a worker counted to the file
    (nothing when it is read-only: then the run only replayed it)."""
    if cache.read_only:
        return
    if batch is not None:
        for row in batch.rows:
            cache.put_row(row)
        cache.add_hits(batch.hits)
    for key, tokenizer, tokens in counts:
        cache.put_tokens(key, tokenizer, tokens)
