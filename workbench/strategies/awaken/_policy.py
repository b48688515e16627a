"""awaken's ``ContextWindowPolicy``, its compaction mode, and the clamp against a model's limits.

Mirrors ``awaken-runtime-contract/src/contract/inference.rs`` (the policy and mode) and
``awaken-runtime/src/context/effective_policy.rs`` (the clamp).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from enum import StrEnum

from pydantic import BaseModel, ConfigDict, ValidationError

from workbench._json_types import JSONObject, JSONValue
from workbench.errors import ConfigError

DEFAULT_MAX_CONTEXT_TOKENS = 200_000
DEFAULT_MAX_OUTPUT_TOKENS = 16_384
DEFAULT_MIN_RECENT_MESSAGES = 10
DEFAULT_RAW_SUFFIX_MESSAGES = 2

# awaken's JSON has no serde default for these four: a policy object must name them.
REQUIRED_POLICY_FIELDS = (
    "max_context_tokens", "max_output_tokens", "min_recent_messages", "enable_prompt_cache",
)


class ContextCompactionMode(StrEnum):
    """Which raw suffix a compaction pass keeps (both keep the latest real user turn raw)."""

    KEEP_RECENT_RAW_SUFFIX = "keep_recent_raw_suffix"
    """Keep the last ``compaction_raw_suffix_messages`` messages raw (the default)."""
    COMPACT_TO_SAFE_FRONTIER = "compact_to_safe_frontier"
    """Keep the last ``min_recent_messages`` messages raw (despite the name, see `plan_compaction`)."""


class ContextWindowPolicy(BaseModel):
    """awaken's per-agent context-window policy; its presence switches every mechanism on.

    Built in Python every field has awaken's default; read from JSON (`from_json`) the first
    four fields are required, as in awaken, and the two compaction fields are backfilled.
    """

    model_config = ConfigDict(extra="forbid", frozen=True, use_enum_values=False)

    max_context_tokens: int = DEFAULT_MAX_CONTEXT_TOKENS
    """The model's context window as the policy sees it."""
    max_output_tokens: int = DEFAULT_MAX_OUTPUT_TOKENS
    """Tokens reserved for the reply; subtracted from the window before truncating."""
    min_recent_messages: int = DEFAULT_MIN_RECENT_MESSAGES
    """History messages truncation always keeps; the raw floor of frontier mode."""
    enable_prompt_cache: bool = True
    """Copied onto requests; never sets a cache breakpoint on awaken's main path."""
    autocompact_threshold: int | None = None
    """Thread-message estimate at which a compaction pass starts; None switches it off."""
    compaction_mode: ContextCompactionMode = ContextCompactionMode.KEEP_RECENT_RAW_SUFFIX
    """How much raw suffix a compaction pass keeps."""
    compaction_raw_suffix_messages: int = DEFAULT_RAW_SUFFIX_MESSAGES
    """The raw floor of suffix mode."""

    @classmethod
    def from_json(cls, data: str | Mapping[str, JSONValue], *, where: str = "context policy"
                  ) -> ContextWindowPolicy:
        """Read a policy as awaken's serde does: four required fields, the rest defaulted.

        Args:
            data: A JSON string or an already decoded object.
            where: Names the source in error messages (a file path, a TOML key).

        Raises:
            ConfigError: a required field is missing, a key is unknown or a value is invalid.
        """
        if isinstance(data, str):
            try:
                data = json.loads(data)
            except json.JSONDecodeError as exc:
                raise ConfigError(f"{where}: not valid JSON ({exc})") from exc
        if not isinstance(data, dict):
            raise ConfigError(f"{where}: expected an object, got {type(data).__name__}")
        missing = [name for name in REQUIRED_POLICY_FIELDS if name not in data]
        if missing:
            raise ConfigError(f"{where}: missing required field(s) {', '.join(missing)}")
        try:
            return cls.model_validate(data)
        except ValidationError as exc:
            raise ConfigError(f"{where}: {exc.errors()[0]['loc']}: {exc.errors()[0]['msg']}"
                              ) from exc

    def to_json(self) -> JSONObject:
        """The policy as awaken's JSON object (the mode as its snake_case name)."""
        return self.model_dump(mode="json")


def effective_policy(policy: ContextWindowPolicy, *, context_window: int | None = None,
                     max_output_tokens: int | None = None) -> ContextWindowPolicy:
    """Clamp a policy to what the model can do; nothing is ever widened.

    * ``max_context_tokens`` becomes min(policy, model window);
    * ``max_output_tokens`` becomes min(policy, model output cap), then at most the clamped window
      (which also repairs a policy whose output exceeds its context);
    * ``autocompact_threshold`` becomes min(threshold, window - output), and None when that
      usable input is 0.

    Args:
        policy: The configured policy.
        context_window: The model's context window, or None when unknown.
        max_output_tokens: The model's output cap, or None when unknown.

    Returns:
        The clamped policy; every other field passes through.
    """
    context = policy.max_context_tokens
    if context_window is not None:
        context = min(context, context_window)
    output = policy.max_output_tokens
    if max_output_tokens is not None:
        output = min(output, max_output_tokens)
    output = min(output, context)
    threshold = policy.autocompact_threshold
    if threshold is not None:
        usable = max(context - output, 0)
        threshold = min(threshold, usable) if usable > 0 else None
    return policy.model_copy(update={
        "max_context_tokens": context, "max_output_tokens": output,
        "autocompact_threshold": threshold,
    })
