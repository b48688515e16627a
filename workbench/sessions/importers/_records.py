"""Records of a session file read within their limits, and records read twice noticed.

`json_lines` reads a JSON-lines file line by line without holding a line longer than
``MAX_RECORD_BYTES`` (it is read past in chunks and reported by its length), so a single record
of hundreds of megabytes never reaches the parser or the tokenizer. `Duplicates` finds records
that repeat an earlier one byte for byte under the same id, which importers read once and note.
"""

from __future__ import annotations

import hashlib
from collections.abc import Hashable, Iterator
from typing import BinaryIO

from workbench.sessions._limits import MAX_RECORD_BYTES

__all__ = ["Duplicates", "json_lines"]


class Duplicates:
    """Finds records that repeat an earlier one: the same id and the same content.

    Two records with one id but different content are both kept (only an exact repeat is a
    duplicate); records without an id are never duplicates.
    """

    def __init__(self) -> None:
        self._first: dict[Hashable, tuple[int | str, object]] = {}

    def first_of(self, key: object, content: object, where: int | str) -> int | str | None:
        """Where the record this one repeats was read (None when it is the first).

        Args:
            key: The record's id (None or empty: never a duplicate).
            content: The record: bytes or text (kept as a digest), or a parsed value already
                held in memory (kept by reference and compared with ``==``).
            where: Its line number or place, named in the note of a later repeat.
        """
        if not isinstance(key, str | int) or isinstance(key, bool) or key == "":
            return None
        if isinstance(content, str):
            content = content.encode("utf-8", "surrogatepass")
        if isinstance(content, bytes):
            content = hashlib.blake2b(content, digest_size=16).digest()
        found = self._first.get(key)
        if found is None:
            self._first[key] = (where, content)
            return None
        return found[0] if found[1] == content else None


def json_lines(fh: BinaryIO) -> Iterator[tuple[bytes | None, int, int]]:
    """``(line, bytes read, record length)`` per line of `fh` (the record is the line without
    its newline). A record longer than `MAX_RECORD_BYTES` is read past in chunks and given as
    ``(None, ...)``, never held whole."""
    while True:
        raw = fh.readline(MAX_RECORD_BYTES + 1)
        if not raw:
            return
        if raw.endswith(b"\n") or len(raw) <= MAX_RECORD_BYTES:
            yield raw, len(raw), len(raw) - raw.endswith(b"\n")
            continue
        length = len(raw)
        while not raw.endswith(b"\n"):
            raw = fh.readline(1 << 20)
            if not raw:
                break
            length += len(raw)
        yield None, length, length - raw.endswith(b"\n")
