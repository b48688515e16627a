"""Work done once per message: values derived from a message, remembered while it lives.

A run formats, projects and counts the same recorded messages in every cell, template and
attempt. `MessageMemo` remembers such a value per message *object* (by identity, through a
weak reference, so the entry goes when the message does and a new object that happens to get
the same address never sees it), and only while the parts it was computed from are the same
objects: the role, the metadata, the content list and each item in it. A copy of a message
(`Message.copy_with`, ``model_copy``) is a different object and computes its own value;
replacing a message's content or an item is seen; two messages with equal Goose ids are two
entries. Editing an item's fields in place is not seen: the workbench never does that to a
message it has formatted (the one in-place edit, awaken's previews, works on deep copies).
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Callable
from typing import Any, TypeVar

__all__ = ["MessageMemo"]

T = TypeVar("T")


def _parts(message: Any) -> tuple[Any, ...]:
    content = message.content
    return (message.role, message.metadata, content, *content)


def _unchanged(message: Any, parts: tuple[Any, ...]) -> bool:
    """True when `message` still has the role, metadata, content list and items of `parts`."""
    content = message.content
    if (parts[2] is not content or parts[1] is not message.metadata
            or parts[0] != message.role or len(parts) != len(content) + 3):
        return False
    index = 3
    for item in content:
        if parts[index] is not item:
            return False
        index += 1
    return True


class MessageMemo:
    """One kind of derived value (a formatted line, a token count...) per message and key.

    Args:
        name: What it remembers (for ``repr``).
    """

    def __init__(self, name: str) -> None:
        self.name = name
        self._entries: dict[int, tuple[weakref.ref[Any], tuple[Any, ...], dict[Any, Any]]] = {}
        self._lock = threading.RLock()

    def get(self, message: Any, key: Any, compute: Callable[..., T], *args: Any) -> T:
        """The value for (`message`, `key`), ``compute(*args)`` the first time (or again after
        the message's parts changed)."""
        ident = id(message)
        entry = self._entries.get(ident)
        if entry is not None and entry[0]() is message and _unchanged(message, entry[1]):
            values = entry[2]
            if key in values:
                return values[key]  # type: ignore[no-any-return]
        else:
            values = {}
            with self._lock:
                self._entries[ident] = (weakref.ref(message, self._forget(ident)),
                                        _parts(message), values)
        value = compute(*args)
        values[key] = value
        return value

    def _forget(self, ident: int) -> Callable[[weakref.ref[Any]], None]:
        entries, lock = self._entries, self._lock

        def forget(ref: weakref.ref[Any]) -> None:
            with lock:
                entry = entries.get(ident)
                if entry is not None and entry[0] is ref:  # not a newer message at that address
                    del entries[ident]
        return forget

    def __len__(self) -> int:
        return len(self._entries)

    def __repr__(self) -> str:
        return f"MessageMemo({self.name!r}, {len(self)} messages)"
