"""The tables the run memo (`workbench._memo`) is made of: a bounded LRU table, values per
message object, per list of message objects, and per session object.

They hold nothing themselves: every instance is a named field of `workbench._memo.RunMemo`,
where a reader finds what each remembers, by what key, and for how long.
"""

from __future__ import annotations

import threading
import weakref
from collections import OrderedDict
from collections.abc import Callable, Hashable, Sequence
from itertools import chain
from operator import attrgetter, is_
from typing import Any, Generic, TypeVar

__all__ = ["ConversationValues", "Lru", "MessageMemo", "MessageValues", "SessionMemo"]

T = TypeVar("T")
V = TypeVar("V")


class Lru(Generic[V]):
    """A bounded, thread-safe, least-recently-used table.

    Args:
        name: What it remembers (for ``repr``).
        size: Most entries kept.
        weigh: An entry's weight from its key and value (the characters of a prompt, say);
            with `max_weight`, the oldest entries go until the weights add up to at most that.
        max_weight: See `weigh`.
    """

    def __init__(self, name: str, size: int, weigh: Callable[[Any, V], int] | None = None,
                 max_weight: int | None = None) -> None:
        self.name = name
        self.size = size
        self.hits = 0
        self.misses = 0
        self._weigh = weigh
        self._max_weight = max_weight
        self._weight = 0
        self._lock = threading.Lock()
        self._items: OrderedDict[Hashable, V] = OrderedDict()

    def get(self, key: Hashable) -> V | None:
        """The value for `key`, or None (counted as a hit or a miss)."""
        with self._lock:
            found = self._items.get(key)
            if found is None:
                self.misses += 1
                return None
            self._items.move_to_end(key)
            self.hits += 1
            return found

    def put(self, key: Hashable, value: V) -> V:
        """Remember `value` for `key` (the oldest entries go past the bounds); returns it."""
        weigh = self._weigh
        weight = weigh(key, value) if weigh is not None else 0
        with self._lock:
            old = self._items.pop(key, None)
            if old is not None and weigh is not None:
                self._weight -= weigh(key, old)
            self._items[key] = value
            self._weight += weight
            while len(self._items) > self.size or (
                    self._max_weight is not None and self._weight > self._max_weight
                    and len(self._items) > 1):
                dropped_key, dropped = self._items.popitem(last=False)
                if weigh is not None:
                    self._weight -= weigh(dropped_key, dropped)
        return value

    def get_or(self, key: Hashable, compute: Callable[[], V]) -> V:
        """The value for `key`, else ``compute()`` remembered."""
        found = self.get(key)
        return found if found is not None else self.put(key, compute())

    def clear(self) -> None:
        """Forget everything."""
        with self._lock:
            self._items.clear()
            self._weight = 0

    def __len__(self) -> int:
        return len(self._items)

    def __repr__(self) -> str:
        return f"Lru({self.name!r}, {len(self)} entries)"


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


class MessageValues:
    """Values derived from messages, one record per message *object* for every kind of value.

    A record is kept by identity, through a weak reference (it goes when the message does, and
    a new object that happens to get the same address never sees it), and only while the parts
    its values were computed from are the same objects: the role, the metadata, the content
    list and each item in it. A copy of a message is a different object and computes its own
    values; replacing a message's content or an item is seen; two messages with equal Goose
    ids are two records. Editing an item's fields in place is not seen: the workbench never
    does that to a message it has derived values from (the one in-place edit, awaken's
    previews, works on deep copies). The kinds of value share the record (`MessageMemo` is a
    view of one kind), so a message costs one weak reference however many kinds it has.
    """

    def __init__(self) -> None:
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

    def forget(self, messages: Any) -> None:
        """Drop the records of `messages` (a session whose cells are all done): what was
        derived from them, and from the copies made of them, goes now, not with the run."""
        with self._lock:
            for message in messages:
                entry = self._entries.get(id(message))
                if entry is not None and entry[0]() is message:
                    del self._entries[id(message)]

    def count(self, kind: str) -> int:
        """Messages holding a value of `kind`."""
        return sum(1 for _, _, values in list(self._entries.values())
                   if any(type(k) is tuple and k[:1] == (kind,) for k in values))

    def clear(self) -> None:
        """Forget everything."""
        with self._lock:
            self._entries.clear()

    def __len__(self) -> int:
        return len(self._entries)


class MessageMemo:
    """One kind of value derived from a message (a formatted line, a token count...), per
    message and key (see `MessageValues`, which holds them).

    Args:
        name: What it remembers (for ``repr``, and to tell its values from other kinds').
        table: The records it shares with other kinds (a table of its own when None).
    """

    def __init__(self, name: str, table: MessageValues | None = None) -> None:
        self.name = name
        self.table = table if table is not None else MessageValues()

    def get(self, message: Any, key: Any, compute: Callable[..., T], *args: Any) -> T:
        """The value for (`message`, `key`), ``compute(*args)`` the first time (or again after
        the message's parts changed)."""
        return self.table.get(message, (self.name, key), compute, *args)

    def clear(self) -> None:
        """Forget everything in its table."""
        self.table.clear()

    def __len__(self) -> int:
        return self.table.count(self.name)

    def __repr__(self) -> str:
        return f"MessageMemo({self.name!r}, {len(self)} messages)"


_ROLE, _METADATA, _CONTENT = attrgetter("role"), attrgetter("metadata"), attrgetter("content")


class _ListShape:
    """The parts of a list of messages that `ConversationValues` checks: each message's role,
    metadata and content list, and every item of those lists, in order (what `_unchanged`
    checks of one message, held per part so the check runs in a few C-level passes)."""

    __slots__ = ("contents", "items", "messages", "metadata", "roles")

    def __init__(self, messages: Sequence[Any]) -> None:
        self.messages = tuple(messages)  # held: their ids stay theirs while the record lives
        self.roles = tuple(map(_ROLE, messages))
        self.metadata = tuple(map(_METADATA, messages))
        self.contents = tuple(map(_CONTENT, messages))
        self.items = tuple(chain.from_iterable(self.contents))

    def unchanged(self) -> bool:
        """True when every message still has the role, metadata, content list and items it
        had (a replaced item of a content list included)."""
        messages = self.messages
        contents = self.contents
        return (all(map(is_, map(_CONTENT, messages), contents))
                and all(map(is_, map(_METADATA, messages), self.metadata))
                and tuple(map(_ROLE, messages)) == self.roles
                and sum(map(len, contents)) == len(self.items)
                and all(map(is_, chain.from_iterable(contents), self.items)))


class ConversationValues:
    """Values derived from a whole list of messages (the summarizer's input, its transcript
    lines, the archived copies), per list of message *objects* and key; thread-safe.

    A record is found by the identities of the messages, in order, and holds the messages (so
    those identities stay theirs while it lives); it is used only while every message still
    has the parts it had (as `MessageValues` checks them). One check of the list stands for
    what would otherwise be one look-up per message. At most `size` lists are kept (the least
    recently used go first).

    Args:
        name: What it remembers (for ``repr``).
        size: Lists kept at most.
    """

    def __init__(self, name: str, size: int) -> None:
        self.name = name
        self.size = size
        self._lock = threading.Lock()
        self._items: OrderedDict[tuple[int, ...], tuple[_ListShape, dict[Any, Any]]] = \
            OrderedDict()

    def get(self, messages: Sequence[Any], key: Any, compute: Callable[..., T],
            *args: Any) -> T:
        """The value for (`messages`, `key`), ``compute(*args)`` the first time (or again after
        a message's parts changed)."""
        ids = tuple(map(id, messages))
        with self._lock:
            entry = self._items.get(ids)
            if entry is not None:
                self._items.move_to_end(ids)
        if entry is not None and entry[0].unchanged():
            values = entry[1]
            if key in values:
                return values[key]  # type: ignore[no-any-return]
        else:
            values = {}
            with self._lock:
                self._items[ids] = (_ListShape(messages), values)
                while len(self._items) > self.size:
                    self._items.popitem(last=False)
        value = compute(*args)
        values[key] = value
        return value

    def clear(self) -> None:
        """Forget everything."""
        with self._lock:
            self._items.clear()

    def __len__(self) -> int:
        return len(self._items)

    def __repr__(self) -> str:
        return f"ConversationValues({self.name!r}, {len(self)} lists)"


class SessionMemo:
    """Values per (session object, key), at most `per_session` per session; thread-safe.

    Entries live as long as their session object (a weak reference) and no longer than the
    memo: a run's sessions take their entries with them.

    Args:
        name: What it remembers (for ``repr``).
        per_session: Keys remembered per session (least recently used go first).
    """

    def __init__(self, name: str, per_session: int = 256) -> None:
        self.name = name
        self.per_session = per_session
        self.hits = 0
        self.misses = 0
        self._lock = threading.RLock()  # a weakref callback may run inside the lock
        self._tables: dict[int, tuple[weakref.ref[Any], OrderedDict[Any, Any]]] = {}

    def get(self, session: Any, key: Any, compute: Callable[[], T]) -> T:
        """The remembered value for `key` of `session`, else `compute()` (then remembered)."""
        with self._lock:
            table = self._table(session)
            if key in table:
                table.move_to_end(key)
                self.hits += 1
                return table[key]  # type: ignore[no-any-return]
            self.misses += 1
        value = compute()
        with self._lock:
            table = self._table(session)
            table[key] = value
            while len(table) > self.per_session:
                table.popitem(last=False)
        return value

    def has(self, session: Any, key: Any) -> bool:
        """Whether a value for `key` of `session` is remembered (not counted as a hit)."""
        with self._lock:
            found = self._tables.get(id(session))
            return found is not None and found[0]() is session and key in found[1]

    def _table(self, session: Any) -> OrderedDict[Any, Any]:
        sid = id(session)
        found = self._tables.get(sid)
        if found is not None and found[0]() is session:
            return found[1]
        table: OrderedDict[Any, Any] = OrderedDict()

        def forget(_: Any, sid: int = sid) -> None:
            with self._lock:
                current = self._tables.get(sid)
                if current is not None and current[0]() is None:
                    del self._tables[sid]

        self._tables[sid] = (weakref.ref(session, forget), table)
        return table

    def clear(self) -> None:
        """Forget everything."""
        with self._lock:
            self._tables.clear()

    def __len__(self) -> int:
        return len(self._tables)

    def __repr__(self) -> str:
        return f"SessionMemo({self.name!r}, {len(self)} sessions)"
