"""Every cache the workbench keeps, in one file.

A run derives the same values again and again: each recorded message is formatted, counted
and projected in every cell, template and ladder step; the same prompt is rendered for every
model and window; one reply is parsed and scored for every template parameter that does not
reach it. Each such value is remembered in a named field of one `RunMemo`, created when a run
starts (`run_memo`) and dropped when it ends, so nothing a run derived outlives it. A run inside
a run (the tuner's rungs) shares the outer run's memo. Code that runs outside any run (a
notebook calling ``summarize``) uses the process's own memo, `PROCESS_MEMO`, bounded the same
way. The render process (`workbench.compaction._sandbox`), which runs no run, keeps its
compiled templates in its own `PROCESS_MEMO`.

The fields, with what keys each value and how long it lives ("the message" lasts while the
message object does, and no longer than its session's cells: the executor drops a session's
records once its last cell is done, `MessageValues.forget`):

=====================  =========================================  ===============================
field                  key -> value                               lifetime
=====================  =========================================  ===============================
``formatted``          message x transcript style -> its line     while the message lives
``content_tokens``     message x counter -> tokens of its items    while the message lives
``line_tokens``        message x counter x style -> tokens of its  while the message lives
                       transcript line and the newline after it
``key_json``           message -> canonical JSON in cache keys     while the message lives
``projected``          message -> its agent projection             while the message lives
``archived``           message x index -> its archived copy        while the message lives
``human_request``      message -> the request a probe reads        while the message lives
``error_lines``        message -> the error lines a probe reads    while the message lives
``touched_paths``      message -> the paths a probe reads          while the message lives
``text_tokens``        counter x text -> tokens                    the run (4m characters)
``templates``          template source x limits -> compiled        the render process (128)
``variables``          template source x limits -> names it reads  the run, and the render
                                                                  process (256 sources)
``renders``            source x limits x variables read ->         the run (8m characters)
                       the rendered prompt
``in_flight``          a render's key -> the future of its result  while it is being made
``replies``            reply text x parser -> the parse outcome    the run (256 replies)
``summaries``          reply text x template x parameters x        the run (1,024 summaries)
                       limits -> the rendered summary
``scores``             session x summary x reply x counts ->       the session, and the run
                       metrics, probes and forgotten items         (256 summaries per session)
``session_tokens``     session x counter x messages -> tokens      the session, and the run
``error_lines_of``     tool output x flagged -> its error line     the run (8,192 outputs)
``command_paths``      shell command -> the paths it names          the run (8,192 commands)
``word_sets``          text -> its words and their parts            the run (16 texts)
``needles``            path or name -> its whole-word pattern       the run (4,096 needles)
=====================  =========================================  ===============================

What the process keeps for its whole life is not derived from a run's inputs but loaded, and
each is named here so that a reader looking for caches finds them all in this file: the
tokenizers (`workbench.tokens.estimator_for`), the embedded models (`workbench.models`'s local
loader) and their vocabularies, the open recordings (`workbench.models.shared_cache`), the
redaction layer's compiled masks (`workbench._redact`), litellm's bundled price table (read
once by ``--dry-run`` and the budget), the results store's schema as SQL (worked out once from
the migrations) and the HTML report's assets. Each costs seconds or megabytes to load again
and does not change while the process runs.

Values are computed outside any lock: two threads missing the same key both compute it (the
result is the same), and an error is never remembered.
"""

from __future__ import annotations

import contextlib
import contextvars
import threading
import weakref
from collections import OrderedDict
from collections.abc import Callable, Hashable, Iterator
from typing import Any, Generic, TypeVar

__all__ = ["PROCESS_MEMO", "Lru", "MessageMemo", "MessageValues", "RunMemo", "SessionMemo", "memo",
           "run_memo", "use_memo"]

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


RENDER_CHARS = 8 * 1024 * 1024
"""Characters of rendered prompts a memo keeps (a 150k-token session's prompt is 0.6m)."""
TEXT_CHARS = 4 * 1024 * 1024
"""Characters of counted texts a memo keeps."""


def _prompt_chars(key: Any, entry: tuple[tuple[str, ...], str]) -> int:
    return len(entry[1])


def _text_chars(key: tuple[Any, str], tokens: int) -> int:
    return len(key[1])


class RunMemo:
    """The caches of one run, one field each (the module docstring lists them)."""

    def __init__(self, name: str = "run") -> None:
        self.name = name
        self.messages = MessageValues()  # the per-message kinds below share its records
        self.formatted = MessageMemo("transcript line", self.messages)
        self.content_tokens = MessageMemo("content tokens", self.messages)
        self.line_tokens = MessageMemo("transcript line tokens", self.messages)
        self.key_json = MessageMemo("cache-key JSON", self.messages)
        self.projected = MessageMemo("agent projection", self.messages)
        self.archived = MessageMemo("archived copy", self.messages)
        self.human_request = MessageMemo("human request", self.messages)
        self.error_lines = MessageMemo("error lines", self.messages)
        self.touched_paths = MessageMemo("touched paths", self.messages)
        self.text_tokens: Lru[int] = Lru("text tokens", 65_536, _text_chars, TEXT_CHARS)
        self.templates: Lru[Any] = Lru("compiled templates", 128)
        self.variables: Lru[frozenset[str]] = Lru("template variables", 256)
        self.renders: Lru[tuple[tuple[str, ...], str]] = Lru("rendered prompts", 256,
                                                             _prompt_chars, RENDER_CHARS)
        self.in_flight: dict[Any, Any] = {}  # renders being made: equal ones wait for them
        self.replies: Lru[Any] = Lru("parsed replies", 256)
        self.summaries: Lru[str] = Lru("rendered summaries", 1024)
        self.scores = SessionMemo("cell scores", 256)
        self.session_tokens = SessionMemo("session tokens", 4)
        self.error_lines_of: Lru[tuple[str | None]] = Lru("error line of an output", 8192)
        self.command_paths: Lru[tuple[str, ...]] = Lru("paths of a command", 8192)
        self.word_sets: Lru[frozenset[str]] = Lru("word sets", 16)
        self.needles: Lru[Any] = Lru("whole-word patterns", 4096)

    def tables(self) -> dict[str, Any]:
        """Every field, by name (the per-message kinds share ``messages``)."""
        return {k: v for k, v in vars(self).items() if k not in ("name", "messages")}

    def clear(self) -> None:
        """Drop every remembered value."""
        self.messages.clear()
        for table in self.tables().values():
            table.clear()

    def __repr__(self) -> str:
        sizes = {k: len(v) for k, v in self.tables().items()
                 if not isinstance(v, MessageMemo) and len(v)}
        sizes["messages"] = len(self.messages)
        return f"RunMemo({self.name!r}: {', '.join(f'{k}={n}' for k, n in sizes.items())})"


PROCESS_MEMO = RunMemo("outside any run")
"""The memo of work done outside a run (a notebook's ``summarize``), bounded like a run's."""

_CURRENT: contextvars.ContextVar[RunMemo | None] = contextvars.ContextVar(
    "workbench_run_memo", default=None)


def memo() -> RunMemo:
    """The current run's memo, or `PROCESS_MEMO` outside any run."""
    return _CURRENT.get() or PROCESS_MEMO


@contextlib.contextmanager
def run_memo() -> Iterator[RunMemo]:
    """Give the block a fresh `RunMemo` and drop it when the block ends; inside a run that
    has one already (the tuner's rungs), the block shares it."""
    outer = _CURRENT.get()
    if outer is not None:
        yield outer
        return
    fresh = RunMemo()
    token = _CURRENT.set(fresh)
    try:
        yield fresh
    finally:
        _CURRENT.reset(token)
        fresh.clear()


@contextlib.contextmanager
def use_memo(found: RunMemo) -> Iterator[RunMemo]:
    """Make `found` the current memo for the block (a Ray worker's memo of one run, kept
    across the cells it runs); it is not dropped at the end."""
    token = _CURRENT.set(found)
    try:
        yield found
    finally:
        _CURRENT.reset(token)
