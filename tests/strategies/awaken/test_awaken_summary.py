"""The cumulative summary request, the ppm savings gate, and one whole pass (with its quirks)."""

from __future__ import annotations

import math

import pytest

from tests.strategies.awaken.helpers import assistant, texts, user
from workbench.compaction import Usage
from workbench.errors import CompactionError, ModelCallError
from workbench.messages import Message
from workbench.strategies.awaken import (
    DEFAULT_SUMMARIZER_SYSTEM_PROMPT,
    BackOff,
    CompactionConfig,
    ContextWindowPolicy,
    SummarizationError,
    apply_summary,
    build_summary_prompt,
    check_savings,
    compact_once,
    compaction_savings_ratio_ppm,
    min_savings_ratio_ppm,
    plan_compaction,
    ratio_to_ppm,
    summarize_cumulative,
    summary_message_tokens,
)
from workbench.testing import ScriptedModel

FIRST_PROMPT = (
    "Bring the cumulative summary of this conversation up to date with the new span below. "
    "Merge the two into one summary that replaces the existing one.\n\n"
    "<existing-summary>\n\n</existing-summary>\n\n"
    "<new-conversation>\n[User]: hi\n</new-conversation>"
)


def conversation(n: int) -> list[Message]:
    """`n` alternating 1000-byte user/assistant messages (254 tokens each), ids "0", "1", ..."""
    return [user(f"{i}" + "u" * 999, id=str(i)) if i % 2 == 0
            else assistant(f"{i}" + "a" * 999, id=str(i)) for i in range(n)]


# ---- the request --------------------------------------------------------------------------------------


def test_first_pass_prompt_has_an_empty_existing_summary_block() -> None:
    assert build_summary_prompt("  [User]: hi \n", None) == FIRST_PROMPT


async def test_default_summarizer_applies_custom_prompt_to_incremental_updates() -> None:
    config = CompactionConfig(summarizer_system_prompt="Be short.",
                              summarizer_user_prompt="Old: {previous_summary} | New: {messages}",
                              summary_max_tokens=321, summary_model="small-model")
    model = ScriptedModel(["updated"])
    result = await summarize_cumulative(model, "[User]: b", "  a  ", config)
    assert (result.text, result.prompt, result.max_tokens, result.summary_model) == (
        "updated", "Old: a | New: [User]: b", 321, "small-model")
    system, messages = model.calls[0]
    assert system == "Be short." and texts(messages) == ["Old: a | New: [User]: b"]


async def test_an_unset_summary_model_and_cap_mean_empty_name_and_1024() -> None:
    result = await summarize_cumulative(ScriptedModel(["s"]), "[User]: x")
    assert (result.max_tokens, result.summary_model) == (1024, "")
    assert result.system == DEFAULT_SUMMARIZER_SYSTEM_PROMPT


def test_quirk_a_previous_summary_containing_the_messages_placeholder_gets_the_splice() -> None:
    config = CompactionConfig(summarizer_user_prompt="S: {previous_summary}\nT: {messages}")
    previous = "the user typed {messages} literally"
    assert build_summary_prompt("[User]: new", previous, config) == (
        "S: the user typed [User]: new literally\nT: [User]: new")
    assert build_summary_prompt("[User]: new", previous, config, single_pass=True) == (
        "S: the user typed {messages} literally\nT: [User]: new")


async def test_an_empty_reply_is_a_summarization_error_with_its_usage_billed() -> None:
    usage = Usage(model="m", input_tokens=50, output_tokens=0)
    with pytest.raises(SummarizationError, match="^empty summary returned$") as info:
        await summarize_cumulative(ScriptedModel([""], usage=usage), "[User]: x")
    assert info.value.kind == "empty" and info.value.billed_usage == [usage]
    assert isinstance(info.value, CompactionError)


async def test_a_failed_call_is_an_inference_summarization_error() -> None:
    model = ScriptedModel(always_raise=ModelCallError("timeout", "m"))
    with pytest.raises(SummarizationError, match="^inference failed: timeout$") as info:
        await summarize_cumulative(model, "[User]: x")
    assert info.value.kind == "inference" and info.value.billed_usage == []


# ---- min_savings_ratio in parts per million -----------------------------------------------------------------


def test_ratio_to_ppm_clamps_and_rounds_half_away_from_zero() -> None:
    assert [ratio_to_ppm(r) for r in (0.3, 1.5, -0.2, 5e-7, 1.5e-6, 2 / 3)] == [
        300_000, 1_000_000, 0, 1, 2, 666_667]
    assert ratio_to_ppm(math.nan) == 0 and ratio_to_ppm(math.inf) == 0


def test_compaction_savings_ratio_ppm() -> None:
    assert compaction_savings_ratio_ppm(1000, 250) == 750_000
    assert compaction_savings_ratio_ppm(3, 1) == 666_667
    assert compaction_savings_ratio_ppm(0, 0) == 0
    assert compaction_savings_ratio_ppm(100, 100) == 0
    assert compaction_savings_ratio_ppm(100, 150) == 0


def test_min_savings_ratio_in_ppm_is_clamped() -> None:
    assert min_savings_ratio_ppm(CompactionConfig()) == 300_000
    assert min_savings_ratio_ppm(CompactionConfig(min_savings_ratio=1.7)) == 1_000_000


def test_check_savings_measures_the_whole_tagged_summary_message() -> None:
    summary = "s" * 400  # with tags and newlines: 447 bytes -> 4 + 111
    assert summary_message_tokens(summary) == 115
    check = check_savings(1000, summary, CompactionConfig())
    assert (check.post_tokens, check.savings_ratio_ppm, check.min_savings_ratio_ppm) == (
        115, 885_000, 300_000)
    assert check.passed
    strict = check_savings(1000, summary, CompactionConfig(min_savings_ratio=0.885001))
    assert not strict.passed and strict.min_savings_ratio_ppm == 885_001


# ---- one whole pass ---------------------------------------------------------------------------------------------


async def test_round_trip_swap_completes() -> None:
    messages = conversation(10)
    model = ScriptedModel(["short summary"], usage=Usage(model="m", input_tokens=9))
    outcome = await compact_once(messages, ContextWindowPolicy(), model)
    assert outcome.status == "applied"
    assert texts(outcome.messages) == [
        "<conversation-summary>\nshort summary\n</conversation-summary>", *texts(messages[8:])]
    assert outcome.applied is not None
    assert (outcome.applied.boundary_index, outcome.applied.pre_tokens,
            outcome.applied.post_tokens) == (7, 8 * 254, 4 + 60 // 4)
    assert outcome.savings is not None and outcome.savings.savings_ratio_ppm == 990_650
    assert outcome.usage == [Usage(model="m", input_tokens=9)]
    assert model.call_count == 1 and len(messages) == 10


async def test_round_trip_skip_records_min_savings_rejection() -> None:
    messages = conversation(10)
    config = CompactionConfig(min_savings_ratio=0.95)
    outcome = await compact_once(messages, ContextWindowPolicy(), ScriptedModel(["x" * 4000]),
                                 config)
    assert outcome.status == "skipped" and outcome.messages == messages
    assert outcome.savings is not None
    assert (outcome.savings.pre_tokens, outcome.savings.post_tokens,
            outcome.savings.savings_ratio_ppm, outcome.savings.min_savings_ratio_ppm) == (
        2032, 1015, 500_492, 950_000)


async def test_quirk_no_back_off_after_a_skipped_summary() -> None:
    messages = conversation(10)
    config = CompactionConfig(min_savings_ratio=0.95)
    model = ScriptedModel(["x" * 4000])
    for _ in range(3):
        outcome = await compact_once(messages, ContextWindowPolicy(), model, config)
        assert outcome.status == "skipped"
    assert model.call_count == 3, "awaken asks again for the same prefix every step"
    # The fix: the same plan is not retried; a plan that moved is.
    fixed_model = ScriptedModel(["x" * 4000])
    backoff = BackOff()
    statuses = [(await compact_once(messages, ContextWindowPolicy(), fixed_model, config,
                                    backoff=backoff)).status for _ in range(3)]
    assert statuses == ["skipped", "backed_off", "backed_off"] and fixed_model.call_count == 1
    grown = [*messages, *conversation(12)[10:]]
    moved = await compact_once(grown, ContextWindowPolicy(), fixed_model, config, backoff=backoff)
    assert moved.status == "skipped" and fixed_model.call_count == 2


async def test_a_failed_summarizer_call_leaves_the_thread_and_is_retried_without_back_off() -> None:
    messages = conversation(10)
    model = ScriptedModel(always_raise=ModelCallError("overloaded", "m"))
    first = await compact_once(messages, ContextWindowPolicy(), model)
    second = await compact_once(messages, ContextWindowPolicy(), model)
    assert (first.status, second.status, model.call_count) == ("failed", "failed", 2)
    assert first.messages == messages and first.error is not None
    assert str(first.error) == "inference failed: overloaded"


async def test_previous_summary_is_passed_to_summarizer_on_subsequent_pass() -> None:
    model = ScriptedModel(["first summary", "second summary"])
    first = await compact_once(conversation(10), ContextWindowPolicy(), model)
    grown = [*first.messages, *conversation(20)[10:]]
    second = await compact_once(grown, ContextWindowPolicy(), model)
    assert second.status == "applied"
    assert second.plan is not None and second.plan.previous_summary == "first summary"
    prompt = texts(model.calls[1][1])[0]
    assert "<existing-summary>\nfirst summary\n</existing-summary>" in prompt
    assert "first summary" not in prompt.split("<new-conversation>")[1]
    assert texts(second.messages)[0] == (
        "<conversation-summary>\nsecond summary\n</conversation-summary>")
    assert len(second.messages) == 3


async def test_no_plan_means_no_call() -> None:
    model = ScriptedModel(["s"])
    outcome = await compact_once(conversation(4), ContextWindowPolicy(), model)
    assert outcome.status == "no_plan" and model.call_count == 0


async def test_background_summarizer_uses_snapshot_not_live_messages() -> None:
    thread = conversation(10)
    plan = plan_compaction(thread, ContextWindowPolicy())
    assert plan is not None
    late = user("appended while the summary was being written", id="late")
    thread.append(late)
    summary = await summarize_cumulative(ScriptedModel(["s"]), plan.transcript)
    assert "appended while" not in summary.prompt
    swapped = apply_summary(thread, plan.boundary_message_id, summary.text)
    assert swapped is not None
    assert [m.id for m in swapped[0][1:]] == ["8", "9", "late"]


async def test_a_growing_cumulative_summary_fails_the_ratio_when_little_new_text_came_in() -> None:
    from workbench.strategies.awaken import summary_message

    stored = summary_message("f" * 3000, id="old")  # 3047 bytes: 765 tokens
    model = ScriptedModel(["f" * 3800])  # the rewrite grows: 4 + 3847 // 4 = 965 tokens
    short = [stored, *conversation(4)]  # prefix through index 2: 765 + 2 * 254 = 1273
    outcome = await compact_once(short, ContextWindowPolicy(), model)
    assert outcome.status == "skipped" and outcome.savings is not None
    assert (outcome.savings.pre_tokens, outcome.savings.post_tokens,
            outcome.savings.savings_ratio_ppm) == (1273, 965, 241_948)
    longer = [stored, *conversation(8)]  # enough new raw text: 765 + 6 * 254 = 2289
    outcome = await compact_once(longer, ContextWindowPolicy(), model)
    assert outcome.status == "applied" and outcome.savings is not None
    assert outcome.savings.savings_ratio_ppm == 578_419
