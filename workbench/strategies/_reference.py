"""``reference``: the summary the recorded agent wrote itself, scored like any other.

Claude Code sessions carry theirs (the compact-summary message and the ``agent-acompact-*``
sub-agent's answer, in ``meta["reference_summaries"]`` with the message index of the compaction
boundary); Goose recordings carry theirs the same way. The strategy cuts the history at that
boundary, puts the recorded summary in place of the prefix, and asks the harness to score it
against the prefix only (`StrategyResult.detail["scored_messages"]`), i.e. with the same probes
at the same boundary a template would face. Its retained tokens are counted as Goose counts its
own summary there (`compacted_conversation`: summary, continuation note and, on the automatic
path, the kept prompt), so the row compares with ``goose@recorded`` cells (``at = "recorded"``),
not with cells compacted at the end of the session.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, TypedDict, cast

from pydantic import BaseModel, ConfigDict

from workbench.errors import ConfigError
from workbench.messages import Message, MessageMetadata
from workbench.strategies._base import CompactionRequest, Strategy, StrategyResult
from workbench.strategies._registry import strategy
from workbench.tokens import context_tokens

if TYPE_CHECKING:
    from workbench.sessions import Session

__all__ = ["RecordedSummary", "ReferenceSettings", "reference_summary"]


class RecordedSummaryEntry(TypedDict, total=False):
    """A summary the recorded agent wrote, as an importer keeps it in
    ``session.meta["reference_summaries"]``."""

    source: str
    text: str
    index: int | None
    """Where in the history it was written (None: at the end)."""


class ReferenceSettings(BaseModel):
    """Settings of ``reference``."""

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True, frozen=True)

    source: str = ""
    """Use the first recorded summary whose ``source`` starts with this text (for example
    ``agent-acompact-`` or ``compact_summary``); empty = the first one recorded."""


def reference_summary(session: object, source: str = "") -> RecordedSummaryEntry | None:
    """The first recorded summary of `session` whose source starts with `source`, or None."""
    for entry in (getattr(session, "meta", None) or {}).get("reference_summaries") or []:
        if str(entry.get("source") or "").startswith(source) and str(entry.get("text") or "").strip():
            return cast(RecordedSummaryEntry, dict(entry))  # as the importers write it
    return None


@strategy("reference")
class RecordedSummary(Strategy):
    """The recorded agent's own summary at its own boundary (no model call)."""

    Settings = ReferenceSettings
    settings: ReferenceSettings
    uses_model = False
    uses_template = False

    @classmethod
    def applies_to(cls, session: Session) -> bool:
        """Only sessions that carry a recorded summary."""
        return reference_summary(session) is not None

    async def compact(self, request: CompactionRequest) -> StrategyResult:
        """Replace the prefix before the recorded boundary with the recorded summary.

        Raises:
            ConfigError: the session carries no recorded summary matching the settings.
        """
        found = reference_summary(request.session, self.settings.source)
        if found is None:
            sid = getattr(request.session, "id", "?")
            raise ConfigError(f"session {sid} carries no recorded summary"
                              + (f" from {self.settings.source!r}" if self.settings.source else ""))
        messages = list(request.messages)
        index = found.get("index")
        boundary = len(messages) if index is None else max(0, min(int(index), len(messages)))
        summary = Message.user(str(found["text"]), metadata=MessageMetadata.agent_only())
        # Claude Code writes its summary into the transcript at the boundary; it is not history.
        after = [m for m in messages[boundary:]
                 if m.is_agent_visible and m.concat_text() != found["text"]]
        context = [summary, *after]
        from workbench.context_mgmt import compacted_conversation  # (as in the goose strategy)

        # Retained as Goose counts its own summary at this boundary (summary, continuation
        # note, the kept prompt on the automatic path): comparable with a goose@recorded cell.
        as_goose = compacted_conversation(messages[:boundary], summary,
                                          manual_compact=request.manual_compact)
        return StrategyResult(
            context=context, summary_text=str(found["text"]),
            retained_tokens=context_tokens(as_goose, request.estimator),
            compacted=True,
            detail={"boundary": boundary, "source": found.get("source"),
                    "scored_messages": messages[:boundary]})
