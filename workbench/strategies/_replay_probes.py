"""What a replay measures after each compaction round, on the context the round left.

- planted facts of the session prefix still present (``facts_recall``), and with
  ``probes = "all"`` every harness probe (``probe_recall``);
- replaced planted values still present (``stale_kept``: a knowledge update's old values);
- whether the last human request before the round survives it (``request_kept``), by the
  overlap grader's rule: at least half of the request's content words are in the context (the
  user-requests probe's coverage rule, `workbench.metrics._requests`);
- finished tasks the round's summary lists as pending (``done_redone``): ``meta["tasks"]``
  entries with a ``done_at`` message index before the round whose text the summary's pending
  sections cover by the same rule. A pending section is one whose heading (markdown ``#``,
  a bold line, or an XML tag) names pending, remaining or open work, next steps, a to-do list
  or a plan; a line marked done (``[DONE]``, ``[x]``) inside one does not count.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from workbench.sessions import Session

__all__ = ["RoundProbes", "pending_text", "probe_round"]

_HEADING = re.compile(r"^\s*(?:#{1,6}\s+(?P<md>.+?)\s*#*\s*$|\*\*(?P<bold>[^*]+)\*\*:?\s*$"
                      r"|<(?P<tag>[A-Za-z][\w-]*)>\s*$)")
_PENDING = re.compile(r"pending|remaining|next.?step|to.?do|outstanding|open (?:items|tasks|work)"
                      r"|plan\b|still to", re.IGNORECASE)
_DONE_LINE = re.compile(r"\[(?:done|x|completed?)\]|^\s*(?:[-*]\s*)?(?:done|completed):",
                        re.IGNORECASE)


@dataclass
class RoundProbes:
    """The measurements of one round (each None when it does not apply)."""

    probe_recall: float | None = None
    facts_recall: float | None = None
    stale_kept: int | None = None
    request_kept: bool | None = None
    done_redone: int | None = None


def pending_text(summary: str) -> str:
    """The lines of `summary`'s pending sections (see the module docstring), joined."""
    out: list[str] = []
    inside: str | None = None  # the heading kind of the open pending section
    closing = ""
    for line in summary.splitlines():
        if inside == "tag" and line.strip() == closing:
            inside = None
            continue
        match = _HEADING.match(line)
        if match is not None and not (inside == "tag" and match.group("tag") is None):
            title = match.group("md") or match.group("bold") or match.group("tag") or ""
            pending = bool(_PENDING.search(title.replace("_", " ")))
            inside = ("tag" if match.group("tag") else "md") if pending else None
            closing = f"</{match.group('tag')}>" if match.group("tag") else ""
            continue
        if inside is not None and not _DONE_LINE.search(line):
            out.append(line)
    return "\n".join(out)


def _covered(text: str, words: set[str]) -> bool:
    from workbench.metrics._requests import COVERAGE, request_coverage  # as in probe_round

    return request_coverage(text, words) >= COVERAGE


def probe_round(session: Session, end: int, context_text: str, summary_text: str,
                mode: str) -> RoundProbes:
    """Measure one round (module docstring) against the first `end` messages of `session`.

    Args:
        session: The replayed session.
        end: Messages of the recorded session seen before the round.
        context_text: The agent-visible text of the compacted context.
        summary_text: The summary the round wrote ("" for strategies that write none).
        mode: ``"facts"`` or ``"all"`` (``"all"`` adds ``probe_recall``).
    """
    # The probes are the harness's scorer too; imported on first use (they pull in the metrics,
    # ~200 ms that `import workbench.strategies` does without: only a probed replay needs them).
    from workbench.metrics._common import word_set
    from workbench.metrics._facts import facts_probe  # (as above)
    from workbench.metrics._requests import user_requests  # (as above)
    from workbench.sessions import as_int, meta_records, prefix_session  # (as above)

    prefix = prefix_session(session, end)
    out = RoundProbes()
    found = facts_probe(prefix, context_text)
    if found is not None:
        current, stale = found
        out.facts_recall = current.recall
        if any(f.get("stale") for f in meta_records(prefix, "planted_facts")):
            out.stale_kept = int(stale.extra.get("stale_mentioned") or 0)
    if mode == "all":
        from workbench.metrics import compute_metrics  # (as above)

        values = compute_metrics(prefix, context_text, None, original_tokens=0, summary_tokens=0)
        probe = values.get("probe_recall")
        out.probe_recall = None if probe is None else float(probe)
    words = word_set(context_text)
    requests = user_requests(list(prefix.messages))
    if requests:
        out.request_kept = _covered(requests[-1], words)
    tasks = session.meta.get("tasks")
    if isinstance(tasks, list):
        pending = word_set(pending_text(summary_text)) if summary_text else set()
        out.done_redone = sum(
            1 for t in tasks if isinstance(t, dict) and t.get("done_at") is not None
            and as_int(t["done_at"]) < end and pending and _covered(str(t.get("text") or ""), pending))
    return out
