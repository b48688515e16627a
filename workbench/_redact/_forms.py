"""The other forms a secret takes on its way back: encoded copies, and escaped text.

A provider, proxy or debugging endpoint may echo a credential in another encoding than the one
it was sent in. The redaction layer catches these in two ways:

- *fixed forms*, texts that can be listed beside the value and searched for like it: base64
  (three alignments, two alphabets: `base64_forms`) and hex, lower and upper case
  (`hex_forms`);
- *escapes* that may touch any subset of the characters, which cannot be listed: URL
  percent-encoding (``%2F``, also encoded again as ``%252F``) and JSON escapes (``\\u002d``,
  ``\\/``, ``\\"``, ``\\\\``, nested to any depth as ``\\\\u002d``). `mask_escaped` undoes them in a
  view of the text, searches the values there, and masks each hit over the span of the original
  text it came from (a hit that starts or ends inside an escape masks the whole escape).
"""

from __future__ import annotations

import base64
import re
from bisect import bisect_right
from collections.abc import Sequence

__all__ = ["base64_forms", "fixed_forms", "hex_forms", "mask_escaped"]

MIN_FORM = 6
"""Shorter base64 cores are left out: they would match unrelated text."""

_URLSAFE = str.maketrans("+/", "-_")
# One escaped character: %XX (percent-encoded any number of times: %25 is '%'), \uXXXX or
# \/ \" \\ behind any number of backslashes (a JSON text escaped again inside another).
# Every branch starts with a literal character, so the engine skips ahead to the next '%' or
# backslash instead of trying each position (ten times faster on a traceback).
_ESCAPE = re.compile(r"%(?:25)*([0-9A-Fa-f]{2})|\\\\*u([0-9A-Fa-f]{4})|\\\\*([/\"\\])")


def base64_forms(value: str) -> set[str]:
    """The base64 texts that betray `value` wherever it sits inside encoded data.

    Base64 turns 3 bytes into 4 characters, so a value encoded after 0, 1 or 2 other bytes
    gives three different texts; the characters that depend on the value's bytes alone are
    the same wherever it sits with that alignment. Returned: those cores for the three
    alignments, in the standard and the URL-safe alphabet (the value encoded alone starts with
    the first core, so it is caught too). Cores shorter than `MIN_FORM` are left out.
    """
    raw = value.encode("utf-8")
    forms: set[str] = set()
    for shift in range(3):
        encoded = base64.b64encode(b"\0" * shift + raw).decode("ascii")
        # Character i covers bits [6i, 6i+6): keep those inside the value's bits only.
        start = -(-8 * shift // 6)
        end = 8 * (shift + len(raw)) // 6
        forms.add(encoded[start:end])
    forms |= {f.translate(_URLSAFE) for f in forms}
    return {f for f in forms if len(f) >= MIN_FORM}


def hex_forms(value: str) -> set[str]:
    """`value`'s UTF-8 bytes as hex, in lower and upper case (a hex dump's two spellings)."""
    digits = value.encode("utf-8").hex()
    return {digits, digits.upper()}


def fixed_forms(value: str) -> set[str]:
    """Every fixed encoded form of `value` searched for beside it: base64 and hex."""
    return base64_forms(value) | hex_forms(value)


def _decoded_view(text: str) -> tuple[str, list[int], list[tuple[int, int, bool]]] | None:
    """`text` with its escapes undone, or None when it has none.

    Returns the view, the view offset where each segment starts, and per segment its span in
    `text` and whether it is literal (copied as is: offsets map one to one) or one escape.
    """
    pieces: list[str] = []
    starts: list[int] = []
    spans: list[tuple[int, int, bool]] = []
    done = at = 0
    pending = bytearray()
    pending_from = 0

    def flush(until: int) -> None:
        nonlocal at
        if pending:
            # Bytes from 0x80 are parts of one UTF-8 character: decoded together, one segment.
            piece = pending.decode("utf-8", errors="replace")
            starts.append(at)
            spans.append((pending_from, until, False))
            pieces.append(piece)
            at += len(piece)
            pending.clear()

    for match in _ESCAPE.finditer(text):
        high = match.group(1) is not None and int(match.group(1), 16) >= 0x80
        if pending and (match.start() > done or not high):
            flush(done)
        if match.start() > done:
            starts.append(at)
            spans.append((done, match.start(), True))
            pieces.append(text[done:match.start()])
            at += match.start() - done
        if high:
            if not pending:
                pending_from = match.start()
            pending.append(int(match.group(1), 16))
            done = match.end()
            continue
        if match.group(1) is not None:
            char = chr(int(match.group(1), 16))
        elif match.group(2) is not None:
            char = chr(int(match.group(2), 16))
        else:
            char = match.group(3)
        starts.append(at)
        spans.append((match.start(), match.end(), False))
        pieces.append(char)
        at += 1
        done = match.end()
    if not spans and not pending:
        return None
    flush(done)
    if done < len(text):
        starts.append(at)
        spans.append((done, len(text), True))
        pieces.append(text[done:])
    return "".join(pieces), starts, spans


def _original(offset: int, starts: list[int], spans: list[tuple[int, int, bool]],
              end: bool) -> int:
    """Where view `offset` (a hit's start, or its exclusive end when `end`) lies in the text."""
    index = bisect_right(starts, offset - 1 if end else offset) - 1
    begin, finish, literal = spans[index]
    if literal:
        return begin + offset - starts[index]
    return finish if end else begin


def _windows(starts: list[int], spans: list[tuple[int, int, bool]], size: int,
             reach: int) -> list[tuple[int, int]]:
    """The view ranges a value of at most `reach` characters touching an escape can lie in."""
    windows: list[tuple[int, int]] = []
    for index, (_, _, literal) in enumerate(spans):
        if literal:
            continue
        end = starts[index + 1] if index + 1 < len(starts) else size
        low, high = max(0, starts[index] - reach + 1), min(size, end + reach - 1)
        if windows and low <= windows[-1][1]:
            windows[-1] = (windows[-1][0], high)
        else:
            windows.append((low, high))
    return windows


def mask_escaped(text: str, values: Sequence[str], mask: str) -> str:
    """`text` with every one of `values` found behind URL or JSON escapes replaced by `mask`.

    Values written plainly are masked before, so only the stretches of the view that touch an
    escape are searched (a long traceback with one escaped key costs a few short searches).
    """
    found = _decoded_view(text)
    if found is None or not values:
        return text
    view, starts, spans = found
    windows = _windows(starts, spans, len(view), max(len(v) for v in values))
    cuts: list[tuple[int, int]] = []
    for low, high in windows:
        for value in values:
            at = view.find(value, low, high)
            while at != -1:
                cuts.append((_original(at, starts, spans, False),
                             _original(at + len(value), starts, spans, True)))
                at = view.find(value, at + len(value), high)
    if not cuts:
        return text
    parts: list[str] = []
    done = 0
    for begin, finish in sorted(cuts):
        if finish <= done:
            continue
        parts += [text[done:max(begin, done)], mask]
        done = finish
    parts.append(text[done:])
    return "".join(parts)
