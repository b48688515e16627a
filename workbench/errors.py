"""One exception tree for the whole workbench.

```
WorkbenchError
├── ConfigError                  bad experiment file, model string, option or environment
│   ├── RunFolderLocked          another process is running into the same run folder (names it)
│   └── StrategyUnavailable      a strategy cannot run with this model (reported n/a with the reason)
├── TemplateError                a template failed to load, compile or render (names the template)
├── SessionFormatError           a recording could not be read (names file, line or record, and what was expected)
├── StorageError                 a file could not be written or read: disk full, read-only folder, damaged store (names the path and the fix)
├── CompactionError              summarize/compact gave up; carries the billed usage of every attempt
├── BudgetReached                the run's budget has no room for another model call
└── ModelCallError               a model call failed (names the model)
    ├── ContextLengthExceeded    the prompt does not fit the model's window: drives the removal ladder
    ├── RateLimited              429 after retries were exhausted
    ├── ModelTimeout             the call timed out after retries were exhausted
    ├── AuthenticationError      missing or rejected credentials (never retried)
    ├── CacheMiss                replay-only cache had no recorded answer for this prompt
    └── ReplyFormatError         a judge's or probe author's reply is not in the format asked
```

Control flow branches on these classes, never on message text.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

__all__ = [
    "AuthenticationError",
    "BudgetReached",
    "CacheMiss",
    "CompactionError",
    "ConfigError",
    "ContextLengthExceeded",
    "ModelCallError",
    "ModelTimeout",
    "RateLimited",
    "ReplyFormatError",
    "RunFolderLocked",
    "SessionFormatError",
    "StorageError",
    "StrategyUnavailable",
    "TemplateError",
    "WorkbenchError",
]


class WorkbenchError(Exception):
    """Root of every error the workbench raises on purpose."""


class ConfigError(WorkbenchError):
    """A configuration value (experiment file, model string, option) is invalid."""


class StrategyUnavailable(ConfigError):
    """A strategy cannot run with the model it was given: a provider-side compaction without a
    live model of that provider (offline, or no key). Reported ``n/a`` with the reason, never
    simulated."""


class RunFolderLocked(ConfigError):
    """Another live process holds the run folder's lock.

    Attributes:
        holder: What the lock file says about its holder (``pid``, ``host``, ``started_at``).
    """

    def __init__(self, message: str, holder: Mapping[str, object] | None = None) -> None:
        super().__init__(message)
        self.holder = dict(holder or {})


class TemplateError(WorkbenchError):
    """A template could not be compiled or rendered.

    Attributes:
        template: The template's name (file name or variant/file).
    """

    def __init__(self, template: str, message: str) -> None:
        self.template = template
        super().__init__(f"template {template!r}: {message}")


class SessionFormatError(WorkbenchError):
    """A recorded session could not be read.

    Attributes:
        file: The file being read.
        line: 1-based line (JSONL/markdown) or record index, or None for whole-file problems.
        expected: What the reader expected to find there.
    """

    def __init__(
        self, file: str, line: int | str | None, message: str, expected: str | None = None
    ) -> None:
        self.file = str(file)
        self.line = line
        self.expected = expected
        where = self.file if line is None else f"{self.file}:{line}"
        text = f"{where}: {message}"
        if expected:
            text += f" (expected {expected})"
        super().__init__(text)


class StorageError(WorkbenchError):
    """A file could not be written or read because of where it lives: the disk is full, the
    folder may not be written, or a SQLite file (the results store, a recording) is damaged.

    Attributes:
        path: The file or folder.
        kind: ``full``, ``denied`` or ``damaged``.
    """

    def __init__(self, path: str, message: str, kind: str) -> None:
        self.path = str(path)
        self.kind = kind
        super().__init__(f"{self.path}: {message}")


class CompactionError(WorkbenchError):
    """Summarization failed for good.

    Attributes:
        billed_usage: Usage of every model attempt that was billed before giving up.
        attempts: The attempt records (see `workbench.compaction.Attempt`).
    """

    def __init__(self, message: str, billed_usage: Sequence[object] | None = None,
                 attempts: Sequence[object] | None = None) -> None:
        # Typed `object` here because the foundation may not name compaction's `Usage` and
        # `Attempt`; `workbench.compaction.SummarizationError` narrows both.
        super().__init__(message)
        self.billed_usage: list[object] = list(billed_usage or [])
        self.attempts: list[object] = list(attempts or [])


class BudgetReached(WorkbenchError):
    """The experiment's budget is spent: the call was refused before dispatch."""


class ModelCallError(WorkbenchError):
    """A model call failed.

    Attributes:
        model: The model id the call was for ("" when unknown).
    """

    def __init__(self, message: str, model: str = "") -> None:
        super().__init__(message)
        self.model = model


class ContextLengthExceeded(ModelCallError):
    """The prompt is larger than the model's (possibly simulated) context window."""


class RateLimited(ModelCallError):
    """The provider kept answering 429 after the retry budget was spent."""


class ModelTimeout(ModelCallError):
    """The provider did not answer in time after the retry budget was spent."""


class AuthenticationError(ModelCallError):
    """Credentials are missing or were rejected; never retried."""


class CacheMiss(ModelCallError):
    """A replay-only response cache has no recording for this request."""


class ReplyFormatError(ModelCallError):
    """A model answered, but not in the format it was asked for (a judge's rubric JSON, a
    probe author's question list): the reply cannot be graded or used, and is not a zero."""
