"""Size limits on what a session file may hold, checked before anything is tokenized.

A recording larger than these is damaged or hostile, and reading it whole would cost minutes and
gigabytes, or crash the tokenizer's native code (a single word of hundreds of megabytes). Each
limit is an error naming the file (and line, row or message) and the limit, so the session
becomes its own error rows and the run goes on.

=========================  ============  ====================================================
limit                      value         what it bounds
=========================  ============  ====================================================
`MAX_RECORD_BYTES`         16 MiB        one record: a JSON line, a database row's content,
                                         one message's text once imported
`MAX_FILE_BYTES`           256 MiB       one session file (a database: the content of the
                                         sessions selected from it)
`MAX_MESSAGES`             200,000       the messages read from one session file (a JSON-lines
                                         file: its records; a database: the messages of the
                                         sessions selected)
=========================  ============  ====================================================

The record limit is checked as the file is read, so an oversized JSON line is never held
whole in memory (with ``errors="skip"`` it is skipped and counted like any bad record); the file
and message limits are checked before reading where the size is known (a file's size, a
database's counts), and while reading otherwise.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from pathlib import Path

from pydantic import BaseModel

from workbench.errors import SessionFormatError
from workbench.messages import Message

__all__ = ["MAX_FILE_BYTES", "MAX_MESSAGES", "MAX_RECORD_BYTES", "check_file_size",
           "check_message_count", "check_messages"]

MAX_RECORD_BYTES = 16 * 1024 * 1024
"""Longest record (a JSON line, a database row's content, one message's text), in bytes."""
MAX_FILE_BYTES = 256 * 1024 * 1024
"""Largest session file (or content selected from one database), in bytes."""
MAX_MESSAGES = 200_000
"""Most messages read from one session file (or from the sessions selected in a database)."""

SELECT_FEWER = "select fewer sessions with session_id"


def check_file_size(path: Path) -> None:
    """Raise `SessionFormatError` when `path` is larger than `MAX_FILE_BYTES`."""
    size = path.stat().st_size
    if size > MAX_FILE_BYTES:
        raise SessionFormatError(str(path), None, f"the file is {size:,} bytes; the limit is "
                                 f"{MAX_FILE_BYTES:,} bytes per session file (split the "
                                 "recording, or select fewer sessions)")


def check_message_count(path: Path | str, count: int, *, selected: bool = False) -> None:
    """Raise `SessionFormatError` when `count` messages are more than `MAX_MESSAGES`.

    Args:
        path: The file (named in the error).
        count: Messages read so far, or about to be read.
        selected: The count is over the sessions selected from a database.
    """
    if count <= MAX_MESSAGES:
        return
    if selected:
        raise SessionFormatError(str(path), None, f"the sessions selected hold {count:,} "
                                 f"messages; the limit is {MAX_MESSAGES:,} per session file "
                                 f"({SELECT_FEWER})")
    raise SessionFormatError(str(path), None, f"the file holds more than {MAX_MESSAGES:,} "
                             "records or messages, the limit per session file (split the "
                             "recording)")


def _text_size(value: object, limit: int) -> int:
    """Characters of text in `value` (strings inside models, dicts and lists), counting stops
    soon after `limit`."""
    total = 0
    stack: list[object] = [value]
    while stack and total <= limit:
        item = stack.pop()
        if isinstance(item, str):
            total += len(item)
        elif isinstance(item, BaseModel):
            stack.extend(item.__dict__.values())
        elif isinstance(item, dict):
            stack.extend(item.values())
        elif isinstance(item, list | tuple):
            stack.extend(item)
    return total


def _oversized(messages: Iterable[Message]) -> Iterator[tuple[int, Message]]:
    for index, message in enumerate(messages):
        if _text_size(message.content, MAX_RECORD_BYTES) > MAX_RECORD_BYTES:
            yield index, message


def check_messages(path: Path | str, messages: list[Message], *, sizes: bool = True) -> None:
    """Raise `SessionFormatError` for more than `MAX_MESSAGES` messages or, with `sizes`, a
    message holding more than `MAX_RECORD_BYTES` characters of text (before anything tokenizes
    them)."""
    check_message_count(path, len(messages))
    for index, message in _oversized(messages) if sizes else ():
        raise SessionFormatError(str(path), None, f"message {index} ({message.role}) holds "
                                 f"more than {MAX_RECORD_BYTES:,} characters of text, the limit "
                                 "per message")
