"""Template echo: how much of a structured summary merely repeats the prompt's own schema text.

A weak model asked for JSON often copies the schema example ("each goal or request the user
stated") into its answer. That parses, so parse success alone calls it a success; the echo rate
shows it is empty. It is computed by the runner, which knows the compaction template.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:  # a name for annotations only: compaction's modules load when a cell parses
    from workbench.compaction import StructuredSummary

MIN_ECHO_CHARS = 12
"""Shorter strings ("none", a file name) are too common to count as copied from the prompt."""


def summary_strings(structured: StructuredSummary) -> list[str]:
    """Every non-blank string value of a structured summary (list items, files, paragraphs)."""
    out: list[str] = []
    for name in ("user_intent", "technical_concepts", "errors_and_fixes", "problem_solving",
                 "user_messages", "pending_tasks"):
        out += [s for s in getattr(structured, name, None) or [] if s.strip()]
    for name in ("current_work", "next_step"):
        value = getattr(structured, name, None)
        if value and value.strip():
            out.append(value)
    for f in getattr(structured, "files", None) or []:
        out += [s for s in (f.path, f.summary, f.key_code) if s and s.strip()]
    return out


def template_echo(structured: StructuredSummary | None, template_text: str) -> float | None:
    """Fraction of the summary's strings (of at least `MIN_ECHO_CHARS`) found verbatim in the
    compaction template; None when there is no structured summary or nothing long enough.
    """
    if structured is None:
        return None
    strings = [s.strip() for s in summary_strings(structured) if len(s.strip()) >= MIN_ECHO_CHARS]
    if not strings:
        return None
    return sum(1 for s in strings if s in template_text) / len(strings)
