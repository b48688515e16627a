"""awaken's ``CompactionConfig`` (the summarizer section) and ``ArtifactCompactionConfig``.

Mirrors ``context/plugin/compaction.rs`` and ``context/transform/compaction.rs`` (config halves).
The default prompts are written in our own words with the same placeholders and tag blocks.
"""

from __future__ import annotations

from collections.abc import Mapping
from enum import StrEnum

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    ValidationInfo,
    field_validator,
)

from workbench._json_types import JSONObject, JSONValue
from workbench.errors import ConfigError

DEFAULT_SUMMARIZER_SYSTEM_PROMPT = (
    "You are a conversation summarizer. Condense the conversation you are given into a summary "
    "that keeps every key fact, decision, tool result and open action item. Be brief, but leave "
    "out nothing the conversation still needs."
)

DEFAULT_SUMMARIZER_USER_PROMPT = (
    "Bring the cumulative summary of this conversation up to date with the new span below. "
    "Merge the two into one summary that replaces the existing one.\n\n"
    "<existing-summary>\n{previous_summary}\n</existing-summary>\n\n"
    "<new-conversation>\n{messages}\n</new-conversation>"
)

DEFAULT_SUMMARY_MAX_TOKENS = 1024
"""What awaken sends as ``max_tokens`` when ``summary_max_tokens`` is unset."""
DEFAULT_MIN_SAVINGS_RATIO = 0.3

# A compaction section that is present must name these (awaken has no serde default for them).
REQUIRED_CONFIG_FIELDS = ("summarizer_system_prompt", "summarizer_user_prompt",
                          "min_savings_ratio")


class CompactionExecutionMode(StrEnum):
    """``off`` disables the background summarizer; ``background`` is the default."""

    BACKGROUND = "background"
    OFF = "off"


class CompactionRawRetention(StrEnum):
    """What happens to raw messages a summary replaces; awaken has only one variant."""

    PRESERVE_DURABLE = "preserve_durable"


class CompactionConfig(BaseModel):
    """The summarizer's settings (``AgentSpec.sections["compaction"]``)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    mode: CompactionExecutionMode = CompactionExecutionMode.BACKGROUND
    """``off`` means no automatic compaction pass."""
    summarizer_system_prompt: str = DEFAULT_SUMMARIZER_SYSTEM_PROMPT
    """System message of the summarizer request."""
    summarizer_user_prompt: str = DEFAULT_SUMMARIZER_USER_PROMPT
    """User message template with ``{previous_summary}`` and ``{messages}``."""
    summary_max_tokens: int | None = None
    """Reply cap; None means 1024 at call time."""
    summary_model: str | None = None
    """Upstream model name; None sends an empty name in awaken."""
    min_savings_ratio: float = DEFAULT_MIN_SAVINGS_RATIO
    """A summary is applied only when it saves at least this share of the prefix estimate."""
    raw_retention: CompactionRawRetention = CompactionRawRetention.PRESERVE_DURABLE
    """Raw messages stay in storage whatever happens to the prompt window."""

    @classmethod
    def from_json(cls, data: Mapping[str, JSONValue], *, where: str = "compaction section"
                  ) -> CompactionConfig:
        """Read the section as awaken does: a partial section fails to decode.

        Raises:
            ConfigError: a required field is missing, a key is unknown or a value is invalid.
        """
        missing = [name for name in REQUIRED_CONFIG_FIELDS if name not in data]
        if missing:
            raise ConfigError(f"{where}: missing required field(s) {', '.join(missing)}")
        try:
            return cls.model_validate(data)
        except ValidationError as exc:
            first = exc.errors()[0]
            raise ConfigError(f"{where}: {first['loc']}: {first['msg']}") from exc

    def to_json(self) -> JSONObject:
        """The section as JSON; unset optional fields are left out, as awaken serializes it."""
        return self.model_dump(mode="json", exclude_none=True)

    @property
    def max_tokens(self) -> int:
        """The ``max_tokens`` a summarizer request carries."""
        return (self.summary_max_tokens if self.summary_max_tokens is not None
                else DEFAULT_SUMMARY_MAX_TOKENS)


class ArtifactCompactionConfig(BaseModel):
    """When a tool result becomes a preview, and how long the preview is (all values >= 1)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    threshold_tokens: int = Field(default=2048)
    """A result of ``bytes // 4 >= threshold_tokens`` is compacted."""
    preview_max_chars: int = Field(default=1600)
    """Unicode characters kept at most."""
    preview_max_lines: int = Field(default=24)
    """Newline characters kept at most (the last kept newline is included)."""

    @field_validator("threshold_tokens", "preview_max_chars", "preview_max_lines")
    @classmethod
    def _at_least_one(cls, value: int, info: ValidationInfo) -> int:
        if value < 1:
            raise ValueError(f"{info.field_name} must be at least 1, got {value}")
        return value

    @classmethod
    def from_json(cls, data: Mapping[str, JSONValue], *, where: str = "artifact_compaction"
                  ) -> ArtifactCompactionConfig:
        """Read the config; missing fields take the defaults, zero values are rejected.

        Raises:
            ConfigError: a value is below 1 or a key is unknown.
        """
        try:
            return cls.model_validate(data)
        except ValidationError as exc:
            first = exc.errors()[0]
            raise ConfigError(f"{where}: {first['msg']}") from exc
