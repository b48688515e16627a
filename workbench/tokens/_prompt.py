"""`PromptText`: a rendered prompt that remembers its parts, so it is counted from them.

The summarizer's system prompt is the compaction template around a transcript: fixed text, one
line per message joined by newlines, fixed text. Every cell and ladder step of a session sends
a different selection of the same messages, so counting each prompt whole re-tokenizes the
same lines again and again (on the default run, most of its tokenizer time). A `PromptText` is
the prompt's text (a `str`, usable anywhere a string is) that also keeps its parts; a counter
that is *additive at line starts* (`workbench.tokens.GooseCounter.counts_by_line`) counts it as
the sum of the counts of its segments: the head with the first line, each further line with the
newline after it (counted once per message while it lives: the run memo's ``line_tokens``), and
the last line with the tail (the template's own text is cut the same way, `safe_lines`, and
each of its lines counted once per run).

Why the sum is exact for tiktoken's o200k and cl100k: tiktoken splits text with a regular
expression and encodes each piece on its own, so two texts' counts add up whenever the pieces
of their join are the pieces of each. Every transcript line after the first starts with ``[``
(Goose's ``[role]:``) or ``{`` (the JSON lines style), right after a newline. In both encodings'
expressions no piece holds a newline followed by anything but more newlines, whitespace or
(o200k) slashes: letter pieces exclude newlines, punctuation pieces end with the newlines
after them, and whitespace pieces hold only whitespace. So a piece always starts at that
``[`` or ``{``; the expressions look behind nothing, so the pieces after it are those of the
line alone; and the whitespace run ending in the newline before it is one piece either way.
Special tokens (``<|endoftext|>``...) hold no newline. The tests check the sum against a whole
count on every shipped session and template, and on lines built to break it.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence

from workbench.messages import Message

__all__ = ["LINE_STARTS", "PromptText", "safe_lines"]

LINE_STARTS = ("[", "{")
"""How every transcript line starts (Goose's ``[role]:`` and the JSON lines style's ``{``)."""


def safe_lines(text: str) -> list[str]:
    """`text` cut before every newline-led line that starts with neither whitespace nor a
    slash: the places where, for the additive encodings, counts add up (the module
    docstring's argument holds for any such character, not only ``[`` and ``{``). Joined,
    the pieces are `text`."""
    out: list[str] = []
    start, at = 0, text.find("\n")
    while at >= 0:
        nxt = at + 1
        if nxt < len(text) and not text[nxt].isspace() and text[nxt] != "/":
            out.append(text[start:nxt])
            start = nxt
        at = text.find("\n", nxt)
    out.append(text[start:])
    return [piece for piece in out if piece]


class PromptText(str):
    """A prompt's text, with the parts it was rendered from (see the module docstring).

    ``str(prompt) == head + "\\n".join(lines) + tail``, where ``lines[i]`` is the transcript
    line of ``messages[i]`` in `style`. Pickles as a plain string.

    Attributes:
        head: The text before the transcript.
        messages: The messages the transcript shows, in order.
        lines: Their transcript lines.
        style: The transcript style (``goose`` or ``jsonl``).
        tail: The text after the transcript.
        known: What has been worked out about this prompt while it lives: counts per counter,
            digests per key recipe (`workbench.models`'s keys). Part of the run memo's
            ``renders`` entry that holds the prompt.
    """

    head: str
    messages: tuple[Message, ...]
    lines: tuple[str, ...]
    style: str
    tail: str
    known: dict[Hashable, int | str]

    def __new__(cls, text: str, head: str, messages: Sequence[Message], lines: Sequence[str],
                style: str, tail: str) -> PromptText:
        prompt = super().__new__(cls, text)
        prompt.head = head
        prompt.messages = tuple(messages)
        prompt.lines = tuple(lines)
        prompt.style = style
        prompt.tail = tail
        prompt.known = {}
        return prompt

    @classmethod
    def around(cls, text: str, transcript: str, messages: Sequence[Message], lines: Sequence[str],
               style: str) -> str:
        """`text` as a `PromptText` when the transcript (``"\\n".join(lines)``) appears in it
        whole and its lines start as `LINE_STARTS` say; else `text` unchanged."""
        at = text.find(transcript) if transcript else -1
        if at < 0 or not all(line[:1] in LINE_STARTS for line in lines[1:]):
            return text
        return cls(text, text[:at], messages, lines, style, text[at + len(transcript):])

    def segments(self) -> tuple[list[str], list[tuple[Message, str]], list[str]] | None:
        """The prompt cut where counts add up: the pieces of the head and first line, the
        (message, line) pairs in between, the pieces of the last line and tail; or None when
        the prompt has fewer than two lines (it is counted whole then)."""
        if len(self.lines) < 2:
            return None
        middle = list(zip(self.messages[1:-1], self.lines[1:-1], strict=True))
        head = self.head
        if not head or head.endswith("\n"):  # the first line starts a piece of its own
            first = [*safe_lines(head), self.lines[0] + "\n"]
        else:
            first = safe_lines(head + self.lines[0] + "\n")
        return first, middle, safe_lines(self.lines[-1] + self.tail)

    def __reduce__(self) -> tuple[type[str], tuple[str]]:
        return (str, (str.__str__(self),))
