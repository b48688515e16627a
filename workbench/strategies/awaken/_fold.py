"""The durable side: compaction marks on stored summaries, and the view folded from them.

Mirrors ``effective_messages`` / ``effective_committed_view`` (``awaken-runtime-contract/src/
contract/message.rs``), ``stamp_compaction_marks`` (``loop_runner/checkpoint.rs``) and
``strip_unpaired_tool_calls_from_view``. awaken's committed thread log is append-only: a summary
is appended like any message, with a mark naming the 1-based sequence interval it replaces, and
the history an agent loads is folded from the log at read time.

Here a committed log is a list of messages whose sequence numbers are their 1-based positions;
the mark lives in the summary message's metadata under `COMPACTION_MARK_KEY`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from workbench.errors import ConfigError
from workbench.messages import Message, ToolRequest, ToolResponse
from workbench.strategies.awaken._view import call_ids, is_tool, result_ids

COMPACTION_MARK_KEY = "compactionMark"
"""Metadata key of a summary's mark: ``{"fromSeq": a, "toSeq": b}``."""


@dataclass(frozen=True)
class CompactionMark:
    """The 1-based, inclusive interval of committed records a summary replaces."""

    from_seq: int
    to_seq: int

    def covers(self, seq: int) -> bool:
        """True when `seq` lies inside the interval."""
        return self.from_seq <= seq <= self.to_seq

    def contains(self, other: CompactionMark) -> bool:
        """True when `other` lies wholly inside this interval."""
        return self.from_seq <= other.from_seq and other.to_seq <= self.to_seq


def compaction_mark(msg: Message) -> CompactionMark | None:
    """The mark stored on a message, or None for a plain message."""
    raw = (msg.metadata.model_extra or {}).get(COMPACTION_MARK_KEY)
    if not isinstance(raw, dict):
        return None
    return CompactionMark(int(raw["fromSeq"]), int(raw["toSeq"]))


def with_compaction_mark(msg: Message, mark: CompactionMark, own_seq: int | None = None
                         ) -> Message:
    """A copy of `msg` carrying `mark`, validated as awaken's storage does.

    Raises:
        ConfigError: the mark is not 1-based, is empty, or covers the summary's own `own_seq`.
    """
    if mark.from_seq < 1:
        raise ConfigError(f"compaction mark {mark}: sequence numbers start at 1")
    if mark.to_seq < mark.from_seq:
        raise ConfigError(f"compaction mark {mark}: empty interval")
    if own_seq is not None and mark.covers(own_seq):
        raise ConfigError(f"compaction mark {mark}: covers the summary's own seq {own_seq}")
    meta = msg.metadata.model_copy(deep=True)
    setattr(meta, COMPACTION_MARK_KEY, {"fromSeq": mark.from_seq, "toSeq": mark.to_seq})
    return msg.copy_with(metadata=meta)


def stamp_compaction_mark(committed: Sequence[Message], summary: Message,
                          boundary_message_id: str) -> Message:
    """Mark a summary at commit time: ``[1, seq of the boundary message]``.

    The boundary's sequence number is only known once it is committed; when it is not in the
    committed log yet, the summary is returned without a mark.
    """
    for seq, msg in enumerate(committed, start=1):
        if msg.id == boundary_message_id:
            return with_compaction_mark(summary, CompactionMark(1, seq))
    return summary


def effective_messages(committed: Sequence[Message]) -> list[Message]:
    """Fold a committed log through the marks of its summaries.

    Each kept interval is replaced by its summary, placed where the interval starts; raw records
    inside a kept interval are dropped; every marked summary leaves its own append position; an
    interval wholly inside another is dropped (the wider, cumulative summary wins; of two equal
    intervals the later summary wins); disjoint intervals are all kept, in order of their start.
    """
    marked = [(mark, seq, msg) for seq, msg in enumerate(committed, start=1)
              if (mark := compaction_mark(msg)) is not None]
    kept = []
    for i, (mark, seq, msg) in enumerate(marked):
        wider = any(other.contains(mark) and (other != mark or other_seq > seq)
                    for j, (other, other_seq, _) in enumerate(marked) if j != i)
        if not wider:
            kept.append((mark, msg))
    starts = {mark.from_seq: msg for mark, msg in kept}
    summaries = {id(msg) for _, _, msg in marked}
    out: list[Message] = []
    for seq, msg in enumerate(committed, start=1):
        if seq in starts:
            out.append(starts[seq])
        if id(msg) in summaries or any(mark.covers(seq) for mark, _ in kept):
            continue
        out.append(msg)
    return out


def strip_unpaired_tool_calls(messages: Sequence[Message]) -> list[Message]:
    """Drop calls that never got a result and results whose call is not in the view.

    An assistant message loses its unanswered tool requests (and is dropped when nothing else is
    left in it); a Tool message loses results answering no call in view (dropped when empty).
    """
    issued = {cid for m in messages for cid in call_ids(m)}
    answered = {cid for m in messages for cid in result_ids(m)}
    out: list[Message] = []
    kind: type[ToolRequest] | type[ToolResponse]
    for msg in messages:
        if msg.role == "assistant":
            drop, kind = set(call_ids(msg)) - answered, ToolRequest
        elif is_tool(msg):
            drop, kind = set(result_ids(msg)) - issued, ToolResponse
        else:
            drop, kind = set(), ToolRequest
        if not drop:
            out.append(msg)
            continue
        content = [c for c in msg.content if not (isinstance(c, kind) and c.id in drop)]
        if content:
            out.append(msg.copy_with(content=content))
    return out


def effective_committed_view(committed: Sequence[Message]) -> list[Message]:
    """What a run loads: the fold, then the unpaired-call filter."""
    return strip_unpaired_tool_calls(effective_messages(committed))
