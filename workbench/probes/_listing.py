"""A question set as text a user reads to judge it (``workbench sessions inspect --questions``).

Each question shows its kind and source, how it is graded, the question, the expected answer
(with the replaced values a knowledge update keeps), and its evidence: the message index and
the quoted span that holds the answer. The header counts the questions and those the evidence
check dropped.
"""

from __future__ import annotations

from workbench.probes._questions import Question, QuestionSet

__all__ = ["QUOTE_SHOWN", "format_question_set"]

QUOTE_SHOWN = 160
"""Longer answers and quotes are cut to this many characters when shown."""


def _cut(text: str) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= QUOTE_SHOWN else flat[:QUOTE_SHOWN - 1] + "…"


def _question(n: int, q: Question) -> list[str]:
    source = q.source.split(":", 1)[-1] if q.source else "-"
    lines = [f"{n:3d}. {q.kind} · {source} · {q.grader}/{q.answer_type}  [{q.id}]",
             f"     Q  {q.text}"]
    expected = q.expected if isinstance(q.expected, list) else [q.expected]
    lines.append(f"     A  {_cut('; '.join(expected))}")
    if q.choices:
        lines.append(f"        (one of: {', '.join(q.choices)})")
    if q.stale:
        lines.append(f"        (replaced values: {', '.join(q.stale)})")
    for item in q.evidence:
        lines.append(f"     evidence  message #{item.message}: \"{_cut(item.quote)}\"")
    return lines


def format_question_set(question_set: QuestionSet) -> str:
    """`question_set` as an aligned text block (see the module docstring)."""
    dropped = sum(question_set.dropped.values())
    head = f"questions  {len(question_set.questions)}"
    if dropped:
        per = ", ".join(f"{k.split(':', 1)[-1]} {v}" for k, v in sorted(
            question_set.dropped.items()))
        head += f" ({dropped} dropped: expected answer not in its evidence; {per})"
    lines = [head]
    for n, q in enumerate(question_set.questions, 1):
        lines.extend(_question(n, q))
    return "\n".join(lines)
