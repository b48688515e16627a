"""Find and parse the summary JSON in a model response (the extraction half of ``structured.rs``).

Also holds the port of goose's ``safely_parse_json`` (strict parse, then truncated-document
repair, then raw control-character escaping, then both) with serde_json's number and depth rules.

`json_candidates` gives exactly Goose's candidates, but in near-linear time on hostile input:

* terminator and fence positions are found once and counted with `bisect`, not re-counted per
  tail;
* a fence can only pass the "contains every later terminator" filter when it lies between its cut
  and the next terminator, so each fence is examined for one cut only (the others are rejected
  by the filter in Goose too);
* the brace scan memoizes, for every run of ``{`` it walks, where that object closes (or that it
  never does), so a later scan that meets the same run jumps over it instead of re-walking it.
  The memo is sound because a scan that is outside a string at a position evolves the same way
  whatever came before.
"""

from __future__ import annotations

import re
from bisect import bisect_left, bisect_right
from itertools import accumulate

from workbench._json_types import JSONValue
from workbench.compaction._json_decode import (
    CONTROL,
    ERROR_LOOKAHEAD,
    ESCAPE_TABLE,
    DecodeFailed,
    decode_at,
    escape_control_chars,
    repair_truncated_json,
    safely_parse_json,
)
from workbench.compaction._json_scan import brackets_outside_strings, string_end

__all__ = ["TERMINATOR", "escape_control_chars", "json_candidates", "leading_object",
           "repair_truncated_json", "safely_parse_json"]

TERMINATOR = "</analysis>"
FENCE = "```json"

# Rust's char::is_whitespace (Unicode White_Space); Python's isspace also counts \x1c-\x1f.
RUST_WHITESPACE = (
    "\t\n\x0b\x0c\r \x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008"
    "\u2009\u200a\u2028\u2029\u202f\u205f\u3000"
)
_WS_RUN = re.compile(f"[{re.escape(RUST_WHITESPACE)}]*")
_TOKEN = re.compile(r'[{}"]')
_OPEN_RUN = re.compile(r"\{+")
_CLOSE_RUN = re.compile(r"\}+")


class _Scanner:
    """Goose's ``leading_object`` brace scan over one text, memoized by ``{`` run start."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.ends: dict[int, int | None] = {}
        # Brace runs are measured once here: matching a run greedily at every visit would
        # re-read it for each scan that meets it.
        self._open_run_end: dict[int, int] | None = None
        self._close_starts: list[int] = []
        self._close_ends: list[int] = []

    def _runs(self) -> dict[int, int]:
        if self._open_run_end is None:
            self._open_run_end = {m.start(): m.end() for m in _OPEN_RUN.finditer(self.text)}
            spans = [m.span() for m in _CLOSE_RUN.finditer(self.text)]
            self._close_starts = [a for a, _ in spans]
            self._close_ends = [b for _, b in spans]
        return self._open_run_end

    def object_end(self, start: int) -> int | None:
        """Index of the ``}`` closing the object whose ``{`` is at `start`, or None."""
        ends = self.ends
        if start in ends:
            return ends[start]
        text, n = self.text, len(self.text)
        open_run_end = self._runs()
        close_starts, close_ends = self._close_starts, self._close_ends
        stack: list[list[int]] = []  # [first '{' of a run, opens of it still open]
        depth = 0
        pos = start
        while True:
            m = _TOKEN.search(text, pos)
            if m is None:
                self._never_closes(stack)
                return None
            at = m.start()
            ch = text[at]
            if ch == '"':
                close = string_end(text, at + 1)
                if close >= n or text[close] != '"':
                    self._never_closes(stack)
                    return None
                pos = close + 1
            elif ch == "{":
                if depth and at in ends:
                    known = ends[at]
                    if known is None:
                        self._never_closes(stack)
                        return None
                    pos = known + 1
                    continue
                run_end = open_run_end[at]
                stack.append([at, run_end - at])
                depth += run_end - at
                pos = run_end
            else:
                run_end = close_ends[bisect_right(close_starts, at) - 1]
                todo = run_end - at
                used = 0
                while todo and stack:
                    segment = stack[-1]
                    first, still_open = segment
                    take = min(todo, still_open)
                    if take == still_open:
                        ends[first] = at + used + still_open - 1
                        stack.pop()
                    else:
                        segment[1] = still_open - take
                    used += take
                    todo -= take
                    depth -= take
                if depth == 0:
                    return ends[start]
                pos = run_end

    def _never_closes(self, stack: list[list[int]]) -> None:
        for first, _ in stack:
            self.ends[first] = None
        return None


def _skip_ws(text: str, pos: int) -> int:
    return _WS_RUN.match(text, pos).end()  # type: ignore[union-attr]


def _leading_span(text: str, pos: int, scanner: _Scanner) -> tuple[int, int] | None:
    start = _skip_ws(text, pos)
    if start >= len(text) or text[start] != "{":
        return None
    end = scanner.object_end(start)
    return None if end is None else (start, end + 1)


def leading_object(text: str) -> str | None:
    """The brace-balanced object at the start of `text` (after whitespace), or None.

    Strings are skipped with backslash escapes honoured; square brackets are not tracked; an
    object still open at the end of the text gives None (truncated output is never repaired).
    """
    span = _leading_span(text, 0, _Scanner(text))
    return None if span is None else text[span[0] : span[1]]


def _positions(text: str, marker: str) -> list[int]:
    return [m.start() for m in re.finditer(re.escape(marker), text)]


def candidate_spans(text: str, scanner: _Scanner | None = None) -> list[tuple[int, int]]:
    """`json_candidates` as ``(start, end)`` slices of `text`, in Goose's order."""
    scanner = scanner or _Scanner(text)
    n = len(text)
    terms = _positions(text, TERMINATOR)
    fences = _positions(text, FENCE)
    width = len(TERMINATOR)
    cuts = [t + width for t in terms] or [0]

    def inside(span: tuple[int, int]) -> int:
        return max(0, bisect_right(terms, span[1] - width) - bisect_left(terms, span[0]))

    spans: list[tuple[int, int]] = []
    for i in range(len(cuts) - 1, -1, -1):
        cut = cuts[i]
        later = len(terms) - i - 1 if terms else 0
        # A fence at or past the next terminator cannot contain it, so the filter rejects it.
        window_end = terms[i + 1] if later else n
        lo, hi = bisect_left(fences, cut), bisect_left(fences, window_end)
        for fence in reversed(fences[lo:hi]):
            span = _leading_span(text, fence + len(FENCE), scanner)
            if span is not None and inside(span) == later:
                spans.append(span)
        span = _leading_span(text, cut, scanner)
        if span is not None and inside(span) == later:
            spans.append(span)
    span = _leading_span(text, 0, scanner)
    if span is not None:
        spans.append(span)

    deduped: list[tuple[int, int]] = []
    for span in spans:
        if deduped:
            prev = deduped[-1]
            if prev == span or (
                prev[1] - prev[0] == span[1] - span[0]
                and text[prev[0] : prev[1]] == text[span[0] : span[1]]
            ):
                continue
        deduped.append(span)
    return deduped


def json_candidates(text: str) -> list[str]:
    """The JSON documents Goose would try, in order (see goose.md section 3.4).

    After each ``</analysis>`` (last first): the ``` ```json ``` fences of that tail (last first)
    then the object right at the cut, each kept only if it holds exactly as many terminators as
    the tail does after the cut; finally the object at the very start; neighbours deduplicated.
    """
    return [text[s:e] for s, e in candidate_spans(text)]


class CandidateDecoder:
    """Decodes candidate spans of one response as ``safely_parse_json`` would.

    For a brace-balanced candidate the truncation repair can never succeed (it only appends
    closers after a complete object), so only the strict and the control-escaped attempts are
    run. The escaped text of the whole response is built once and candidates are decoded in
    place, so nested candidates do not each re-escape their bytes.
    """

    def __init__(self, text: str) -> None:
        self.text = text
        self._controls: list[int] | None = None
        self._escaped = ""
        self._shift: list[int] = []

    def decode(self, start: int, end: int) -> JSONValue:
        """The JSON value of ``text[start:end]``.

        Raises:
            ValueError: Neither the strict nor the control-escaped text parses.
        """
        try:
            return decode_at(self.text, start, end)
        except DecodeFailed as failed:
            error_pos = failed.pos
        controls = self._control_positions()
        first = bisect_left(controls, start)
        if first == len(controls) or controls[first] >= end:
            raise ValueError("invalid JSON and no control characters to escape")
        if error_pos is not None and controls[first] > error_pos + ERROR_LOOKAHEAD:
            raise ValueError("invalid JSON before the first control character")
        try:
            return decode_at(self._escaped, self._map(start), self._map(end))
        except DecodeFailed:
            raise ValueError("invalid JSON even with control characters escaped") from None

    def _control_positions(self) -> list[int]:
        if self._controls is None:
            self._controls = [m.start() for m in CONTROL.finditer(self.text)]
            self._escaped = escape_control_chars(self.text)
            widths = (len(ESCAPE_TABLE[ord(self.text[p])]) - 1 for p in self._controls)
            self._shift = [0, *accumulate(widths)]
        return self._controls

    def _map(self, pos: int) -> int:
        assert self._controls is not None
        return pos + self._shift[bisect_left(self._controls, pos)]


def naive_json_candidates(text: str) -> list[str]:
    """Goose's algorithm written the direct (quadratic) way; a reference for tests and bench."""

    def leading(s: str) -> str | None:
        s = s.lstrip(RUST_WHITESPACE)
        if not s.startswith("{"):
            return None
        depth = 0
        for i, ch in brackets_outside_strings(s):
            if ch == "{":
                depth += 1
            elif ch == "}":
                depth -= 1
                if depth == 0:
                    return s[: i + 1]
        return None

    cuts = [m.end() for m in re.finditer(re.escape(TERMINATOR), text)] or [0]
    found: list[str] = []
    for cut in reversed(cuts):
        tail = text[cut:]
        later = tail.count(TERMINATOR)
        fences = [m.start() for m in re.finditer(re.escape(FENCE), tail)]
        options = [leading(tail[f + len(FENCE) :]) for f in reversed(fences)]
        options.append(leading(tail))
        found.extend(c for c in options if c is not None and c.count(TERMINATOR) == later)
    first = leading(text)
    if first is not None:
        found.append(first)
    return [c for i, c in enumerate(found) if i == 0 or found[i - 1] != c]
