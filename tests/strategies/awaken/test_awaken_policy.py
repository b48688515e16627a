"""awaken's policy, its JSON, the clamp against the model, and the two config sections."""

from __future__ import annotations

import json

import pytest

from workbench.errors import ConfigError
from workbench.strategies.awaken import (
    ArtifactCompactionConfig,
    CompactionConfig,
    CompactionExecutionMode,
    ContextCompactionMode,
    ContextWindowPolicy,
    effective_policy,
)

REQUIRED = {"max_context_tokens": 8000, "max_output_tokens": 1000, "min_recent_messages": 4,
            "enable_prompt_cache": False}


def test_default_policy_uses_suffix_compaction_defaults() -> None:
    policy = ContextWindowPolicy()
    assert policy.compaction_mode is ContextCompactionMode.KEEP_RECENT_RAW_SUFFIX
    assert policy.compaction_raw_suffix_messages == 2


def test_context_window_policy_default_values() -> None:
    policy = ContextWindowPolicy()
    assert (policy.max_context_tokens, policy.max_output_tokens, policy.min_recent_messages,
            policy.enable_prompt_cache, policy.autocompact_threshold) == (
        200_000, 16_384, 10, True, None)


def test_policy_deserialization_backfills_new_compaction_fields() -> None:
    policy = ContextWindowPolicy.from_json(json.dumps(REQUIRED))
    assert policy.compaction_mode is ContextCompactionMode.KEEP_RECENT_RAW_SUFFIX
    assert policy.compaction_raw_suffix_messages == 2
    assert policy.max_context_tokens == 8000 and policy.enable_prompt_cache is False


def test_policy_serialization_roundtrip_preserves_frontier_mode() -> None:
    policy = ContextWindowPolicy(compaction_mode=ContextCompactionMode.COMPACT_TO_SAFE_FRONTIER,
                                 compaction_raw_suffix_messages=7)
    data = policy.to_json()
    assert data["compaction_mode"] == "compact_to_safe_frontier"
    back = ContextWindowPolicy.from_json(json.dumps(data))
    assert back == policy and back.compaction_raw_suffix_messages == 7


def test_context_window_policy_full_roundtrip() -> None:
    policy = ContextWindowPolicy(max_context_tokens=1, max_output_tokens=2, min_recent_messages=3,
                                 enable_prompt_cache=False, autocompact_threshold=5,
                                 compaction_mode="compact_to_safe_frontier",
                                 compaction_raw_suffix_messages=6)
    assert ContextWindowPolicy.from_json(policy.to_json()) == policy


def test_context_compaction_mode_serialization_values_and_default() -> None:
    assert [m.value for m in ContextCompactionMode] == [
        "keep_recent_raw_suffix", "compact_to_safe_frontier"]
    assert ContextCompactionMode("compact_to_safe_frontier") is (
        ContextCompactionMode.COMPACT_TO_SAFE_FRONTIER)
    assert ContextWindowPolicy().to_json()["compaction_mode"] == "keep_recent_raw_suffix"


def test_policy_json_without_a_required_field_is_a_config_error_naming_it() -> None:
    data = dict(REQUIRED)
    del data["min_recent_messages"]
    with pytest.raises(ConfigError, match=r"policy.toml: missing required field\(s\) "
                                          r"min_recent_messages"):
        ContextWindowPolicy.from_json(data, where="policy.toml")


def test_policy_json_with_an_unknown_key_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="context policy: .*bogus"):
        ContextWindowPolicy.from_json({**REQUIRED, "bogus": 1})


# ---- effective_policy ---------------------------------------------------------------------------


def test_effective_policy_clamps_max_context_to_model_capability() -> None:
    p = effective_policy(ContextWindowPolicy(), context_window=128_000, max_output_tokens=16_384)
    assert p.max_context_tokens == 128_000 and p.max_output_tokens == 16_384


def test_effective_policy_passes_through_when_model_has_no_caps() -> None:
    policy = ContextWindowPolicy(autocompact_threshold=50_000)
    assert effective_policy(policy) == policy


def test_effective_policy_only_narrows_never_widens() -> None:
    policy = ContextWindowPolicy(max_context_tokens=8_000, max_output_tokens=1_000)
    p = effective_policy(policy, context_window=1_000_000, max_output_tokens=100_000)
    assert (p.max_context_tokens, p.max_output_tokens) == (8_000, 1_000)


def test_effective_policy_preserves_other_fields() -> None:
    policy = ContextWindowPolicy(min_recent_messages=3, enable_prompt_cache=False,
                                 compaction_mode="compact_to_safe_frontier",
                                 compaction_raw_suffix_messages=9)
    p = effective_policy(policy, context_window=4_000, max_output_tokens=500)
    assert (p.min_recent_messages, p.enable_prompt_cache, p.compaction_mode,
            p.compaction_raw_suffix_messages) == (3, False, "compact_to_safe_frontier", 9)


def test_effective_policy_caps_output_at_clamped_context_when_model_lacks_output_cap() -> None:
    p = effective_policy(ContextWindowPolicy(), context_window=8_000)
    assert (p.max_context_tokens, p.max_output_tokens) == (8_000, 8_000)


def test_effective_policy_caps_output_when_policy_alone_inverts_invariant() -> None:
    p = effective_policy(ContextWindowPolicy(max_context_tokens=1_000, max_output_tokens=5_000))
    assert p.max_output_tokens == 1_000


def test_effective_policy_clamps_autocompact_threshold_to_usable_input() -> None:
    p = effective_policy(ContextWindowPolicy(autocompact_threshold=150_000),
                         context_window=32_000, max_output_tokens=4_000)
    assert p.autocompact_threshold == 28_000


def test_effective_policy_drops_autocompact_threshold_when_no_usable_input() -> None:
    p = effective_policy(ContextWindowPolicy(autocompact_threshold=10), context_window=8_000)
    assert p.autocompact_threshold is None


def test_effective_policy_leaves_autocompact_threshold_below_usable_input_untouched() -> None:
    p = effective_policy(ContextWindowPolicy(autocompact_threshold=20_000),
                         context_window=128_000, max_output_tokens=8_000)
    assert p.autocompact_threshold == 20_000


# ---- CompactionConfig and ArtifactCompactionConfig ----------------------------------------------


def test_compaction_config_default_values() -> None:
    config = CompactionConfig()
    assert "summarizer" in config.summarizer_system_prompt
    assert "{previous_summary}" in config.summarizer_user_prompt
    assert "{messages}" in config.summarizer_user_prompt
    assert config.summary_max_tokens is None and config.summary_model is None
    assert config.min_savings_ratio == 0.3
    assert config.mode is CompactionExecutionMode.BACKGROUND
    assert config.max_tokens == 1024


def test_compaction_config_serde_roundtrip_and_omits_none_fields() -> None:
    config = CompactionConfig(summarizer_system_prompt="Custom prompt.",
                              summarizer_user_prompt="Summarize: {messages}",
                              summary_max_tokens=2048, summary_model="gpt-4",
                              min_savings_ratio=0.5)
    assert CompactionConfig.from_json(config.to_json()) == config
    assert config.max_tokens == 2048
    assert "summary_model" not in CompactionConfig().to_json()
    assert "summary_max_tokens" not in CompactionConfig().to_json()


def test_a_partial_compaction_section_fails_to_decode() -> None:
    with pytest.raises(ConfigError, match=r"missing required field\(s\) summarizer_user_prompt, "
                                          r"min_savings_ratio"):
        CompactionConfig.from_json({"summarizer_system_prompt": "x"})


def test_artifact_compaction_config_defaults_and_partial_json() -> None:
    assert ArtifactCompactionConfig() == ArtifactCompactionConfig(
        threshold_tokens=2048, preview_max_chars=1600, preview_max_lines=24)
    assert ArtifactCompactionConfig.from_json({"preview_max_chars": 10}).threshold_tokens == 2048


@pytest.mark.parametrize("field", ["threshold_tokens", "preview_max_chars", "preview_max_lines"])
def test_artifact_compaction_config_serde_rejects_zero_values(field: str) -> None:
    with pytest.raises(ConfigError, match=f"{field} must be at least 1, got 0"):
        ArtifactCompactionConfig.from_json({field: 0})
