"""The one JSON string scanner: where a string ends, and which brackets lie outside strings.

Four readers walk JSON-ish text without parsing it: the candidate finder and the truncation
repair of goose's ``structured.rs`` (`workbench.compaction._candidates`,
`workbench.compaction._json_decode`), the grammar's close of a reply cut at ``max_tokens``
(`workbench.models._grammar`) and the session readers' depth report
(`workbench.sessions.importers._readers`). They share the rule written here: inside a string a
backslash escapes the next character, whatever it is, and a ``"`` ends the string.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

__all__ = ["STRING_BODY", "brackets_outside_strings", "string_end"]

STRING_BODY = re.compile(r'[^"\\]*(?:\\[\s\S][^"\\]*)*')
"""A string's body after its opening quote: anything but ``"``, a backslash escaping one
character at a time."""

_TOKEN = re.compile(r'[{}\[\]"]')


def string_end(text: str, after_quote: int) -> int:
    """Where the string whose body starts at `after_quote` stops.

    Returns:
        The index of its closing ``"``; or, for a string the text leaves open, ``len(text)``, or
        the index of a lone backslash that ends the text.
    """
    body = STRING_BODY.match(text, after_quote)
    assert body is not None  # the pattern matches the empty string, so it always matches
    return body.end()


def brackets_outside_strings(text: str, start: int = 0) -> Iterator[tuple[int, str]]:
    """``(index, char)`` of every ``{``, ``}``, ``[`` and ``]`` of `text` outside JSON strings.

    Args:
        text: The text to scan.
        start: Where the scan begins (outside any string).

    Yields:
        Each bracket in order. A string the text leaves open ends the scan with one last
        ``(at, '"')``: `at` is ``len(text)``, or the index of a lone backslash that ends the
        text (it would escape a closing quote appended after it).
    """
    pos, n = start, len(text)
    while (m := _TOKEN.search(text, pos)) is not None:
        at = m.start()
        if text[at] != '"':
            yield at, text[at]
            pos = at + 1
            continue
        close = string_end(text, at + 1)
        if close >= n or text[close] != '"':
            yield close, '"'
            return
        pos = close + 1
