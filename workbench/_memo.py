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
``session_facts``      message list x kind -> what the probes read  while its messages are
                       of a whole session: its errors, touched     unchanged, and the run
                       files, requests, and each one's words       (64 lists)
``conversations``      message list x kind -> what the list gives: while its messages are
                       the summarizer's input, transcript lines,   unchanged, and the run
                       archived copies, the preserved prompt       (64 lists)
``text_tokens``        counter x text -> tokens                    the run (4m characters)
``templates``          template source x limits -> compiled        the render process (128)
``variables``          template source x limits -> names it reads  the run, and the render
                       (and, keyed ``"printed whole"``, the names  process (256 sources)
                       it only prints as they are: `_stand_in`)
``checked``            template source x limits -> it compiled     the run (256 sources)
                       in the render process
``renders``            source x limits x variables read ->         the run (8m characters)
                       the rendered prompt
``in_flight``          a render's key -> the future of its result  while it is being made
``replies``            reply text x parser -> the parse outcome    the run (256 replies)
``requests``           request text -> the user message a          the run (4 texts)
                       summarizer call sends (one object, so its
                       key JSON and count are made once)
``summaries``          reply text x template x parameters x        the run (1,024 summaries)
                       limits -> the rendered summary
``summary_points``     summary template -> the points expected to  the run (64 templates)
                       render it, in groups that get one reply
                       (a tune's rung: a group's summaries of a
                       reply are rendered in one request), and
                       the replies asked for so far
``scores``             session x summary x reply x counts ->       the session, and the run
                       metrics (and their JSON), probes and        (256 summaries per session)
                       forgotten items, and per compaction
                       template the cells' ``metrics_json``
``session_tokens``     session x counter x messages -> tokens      the session, and the run
                       (and, keyed ``"soon"``, that the count of
                       its messages was started: `count_soon`)
``error_lines_of``     tool output x flagged -> its error line     the run (8,192 outputs)
``command_paths``      shell command -> the paths it names          the run (8,192 commands)
``word_sets``          text -> its words and their parts            the run (1m characters)
``variant_files``      a variant folder's ``variant.toml`` path ->  the run (256 files); a file
                       its bytes and the table parsed from them   whose bytes differ is parsed
                                                                  again
``lookup_answers``     question set x its questions x digest of a   the run (1,024 contexts)
                       context's messages -> the ``lookup``
                       answerer's answers
``redacted``           secret values x text -> the text redacted    the run (4m characters)
                       (`workbench._redact`: every row, file and
                       log line written)
``grades``             a question's grading fields x answer ->      the run (2m characters of
                       its grade, and whether it gives only a      answers)
                       replaced value
=====================  =========================================  ===============================

What the process keeps for its whole life is not derived from a run's inputs but loaded (from
the package, its dependencies or the code itself), and each is named here, with where it lives,
so that a reader looking for caches finds them all in this file. Each costs seconds, megabytes
or a parse to make again and does not change while the process runs:

- the tokenizers (`workbench.tokens.estimator_for`, ``_ESTIMATORS``);
- the embedded models and their vocabularies (``workbench.models._local_load``: ``_LOADED``,
  ``_VOCABS``);
- the open recordings (`workbench.models.shared_cache`, ``_caches``): one connection per file;
- the redaction layer's compiled masks and name checks (``workbench._redact``: ``_ordered``,
  ``_values_pattern``, `is_secret_name`, and the secret values, recomputed when the environment
  or the registered secrets change);
- litellm's bundled price table (``workbench.harness.run._estimate._price_map``, read once by
  ``--dry-run`` and the budget);
- the results store's schema as SQL, and as the image of a migrated database that a new
  store's file is written from (or a new store made in memory starts as), its migration rows at
  a placeholder time (``workbench._sqlite``: `new_store_schema`, `new_store_image`, each worked
  out once from the migrations; no row of a run is in them);
- the HTML report's assets (``workbench.harness.report._html._asset``);
- the shipped dataset manifests (``workbench.harness.experiment._session_sources``,
  ``_MANIFESTS``): keyed by the manifest file and parsed once per content (its bytes are read
  and compared on every use, so an edited file is parsed again); the files are package data,
  not a run's input;
- per message item class, the tag fields it always writes (``workbench.messages._content``,
  ``_ALWAYS_WRITTEN``), worked out once from the class.

A Ray worker process keeps, beside these, the models, fetched objects and `RunMemo` of the one
run it serves (``workbench.harness.run.executors._ray_worker``: ``_MODELS``, ``_OBJECTS``,
``_MEMOS``, each keyed by the run id and cleared when a task of another run arrives). Two values
live on the object they are computed from and go with it: a probe `History`'s ``corpus`` and
``corpus_lower`` (``functools.cached_property``). Registries (strategies, importers, metrics,
answerers, the tuner's variant folders) hold what code registered, not computed values, and are
not caches.

The kinds of table the fields are made of (`Lru`, `MessageValues` with its `MessageMemo`
views, `ConversationValues`, `SessionMemo`) are in `workbench._memo_tables`; no instance of them
lives anywhere but in a field listed here.

Values are computed outside any lock: two threads missing the same key both compute it (the
result is the same), and an error is never remembered.
"""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Hashable, Iterator
from typing import TYPE_CHECKING, Protocol

from workbench._memo_tables import (
    ConversationValues,
    Lru,
    MessageMemo,
    MessageValues,
    SessionMemo,
)

if TYPE_CHECKING:  # names for annotations only: the foundation stays light
    import asyncio

    from jinja2 import Template

__all__ = ["PROCESS_MEMO", "ConversationValues", "Lru", "MessageMemo", "MessageValues", "RunMemo",
           "SessionMemo", "memo", "run_memo", "use_memo"]


RENDER_CHARS = 8 * 1024 * 1024
"""Characters of rendered prompts a memo keeps (a 150k-token session's prompt is 0.6m)."""
TEXT_CHARS = 4 * 1024 * 1024
"""Characters of counted texts a memo keeps."""
WORD_SET_CHARS = 1024 * 1024
"""Characters of texts whose word sets a memo keeps (a summary, a context, an answer: every
probe of a cell asks for its summary's, and a session's contexts come back cell after cell)."""
GRADED_CHARS = 2 * 1024 * 1024
"""Characters of graded answers a memo keeps (with their grades)."""


def _prompt_chars(key: Hashable, entry: tuple[tuple[str, ...], str]) -> int:
    return len(entry[1])


def _text_chars(key: tuple[Hashable, str], value: object) -> int:
    return len(key[1])


def _key_chars(key: str, value: frozenset[str]) -> int:
    return len(key)


def _answer_chars(key: tuple[str, Hashable, str | None], value: float | bool) -> int:
    return len(key[2] or "") + 64


class _Table(Protocol):
    """What a `RunMemo` field is: a table that can be measured and cleared."""

    def __len__(self) -> int: ...

    def clear(self) -> None: ...


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
        self.conversations = ConversationValues("message lists", 64)
        self.session_facts = ConversationValues("session facts", 64)
        self.text_tokens: Lru[int] = Lru("text tokens", 65_536, _text_chars, TEXT_CHARS)
        self.templates: Lru[Template] = Lru("compiled templates", 128)
        self.variables: Lru[frozenset[str]] = Lru("template variables", 256)
        self.checked: Lru[bool] = Lru("templates that compiled", 256)
        self.renders: Lru[tuple[tuple[str, ...], str]] = Lru("rendered prompts", 256,
                                                             _prompt_chars, RENDER_CHARS)
        self.in_flight: dict[Hashable, asyncio.Future[str]] = {}  # renders being made: equal ones wait for them
        self.replies: Lru[object] = Lru("parsed replies", 256)  # ParseOutcome (compaction)
        self.requests: Lru[object] = Lru("summarizer requests", 4)  # Message (messages)
        self.summaries: Lru[str] = Lru("rendered summaries", 1024)
        self.summary_points: Lru[object] = Lru("points of a summary template", 64)  # ExpectedPoints
        self.scores = SessionMemo("cell scores", 256)
        self.session_tokens = SessionMemo("session tokens", 4)
        self.error_lines_of: Lru[tuple[str | None]] = Lru("error line of an output", 8192)
        self.command_paths: Lru[tuple[str, ...]] = Lru("paths of a command", 8192)
        self.word_sets: Lru[frozenset[str]] = Lru("word sets", 4096, _key_chars,
                                                   WORD_SET_CHARS)
        self.variant_files: Lru[tuple[bytes, dict[str, object]]] = Lru("variant.toml files", 256)
        self.lookup_answers: Lru[tuple[object, tuple[str, ...]]] = Lru("lookup answers", 1024)
        self.redacted: Lru[str] = Lru("redacted texts", 65_536, _text_chars, TEXT_CHARS)
        self.grades: Lru[float | bool] = Lru("answer grades", 65_536, _answer_chars,
                                             GRADED_CHARS)

    def tables(self) -> dict[str, _Table]:
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
