"""Fill-in-the-blank questions: a sentence of the session with one value blanked.

`make_cloze` cuts the sentence (or line) that holds a value, at most `CLOZE_CONTEXT_CHARS` on
each side, blanks the value with `BLANK`, and gives the words just before the blank (the
``lookup`` answerer reads the value that follows them). The manifest's planted facts and the
transcript's identifiers, limits and changed values are asked this way.
"""

from __future__ import annotations

import re

__all__ = ["BLANK", "CLOZE_CONTEXT_CHARS", "make_cloze"]

BLANK = "____"
CLOZE_CONTEXT_CHARS = 110
"""Characters of the sentence kept on each side of a blanked value."""
_SENTENCE_END = re.compile(r"[.!?](?:\s|$)")
_CLOSING = frozenset(",.;:)`\"'")
_OPENING = frozenset("(`\"'")


def make_cloze(text: str, value: str, sentences: int = 1,
               at: int | None = None) -> tuple[str, str] | None:
    """``(sentence with the value blanked, the three words before the blank)`` or None.

    Args:
        text: The text holding the value.
        value: The value to blank.
        sentences: More than 1 keeps that many sentences up to the blank (to tell apart
            sentences a session repeats with different values).
        at: Where the value starts in `text` (default: its first occurrence, any case).
    """
    if at is None:
        at = text.lower().find(value.lower())
    if at < 0:
        return None
    line_start = text.rfind("\n", 0, at) + 1
    line_end = text.find("\n", at + len(value))
    line_end = len(text) if line_end < 0 else line_end
    ends = [m.end() for m in _SENTENCE_END.finditer(text, line_start, at)]
    start = ends[-sentences] if len(ends) >= sentences else line_start
    cut_start = start < at - CLOZE_CONTEXT_CHARS * sentences
    start = max(start, at - CLOZE_CONTEXT_CHARS * sentences)
    end_match = _SENTENCE_END.search(text, at + len(value), line_end)
    end = end_match.start() + 1 if end_match else line_end
    cut_end = end > at + len(value) + CLOZE_CONTEXT_CHARS
    end = min(end, at + len(value) + CLOZE_CONTEXT_CHARS)
    before = " ".join(text[start:at].split())
    after = " ".join(text[at + len(value):end].split())
    if cut_start and " " in before:
        before = before.split(" ", 1)[1]  # cut by the length limit: do not start mid-word
    if cut_end and " " in after:
        after = after.rsplit(" ", 1)[0]
    left = "" if not before or before[-1] in _OPENING else " "
    right = "" if not after or after[0] in _CLOSING else " "
    return f"{before}{left}{BLANK}{right}{after}".strip(), " ".join(before.split()[-3:])
