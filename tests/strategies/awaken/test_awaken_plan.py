"""The safe frontier, the compaction plan (both modes), the swap, the transcript and the trim."""

from __future__ import annotations

from tests.strategies.awaken.helpers import (
    assistant,
    internal_system,
    internal_user,
    system,
    texts,
    tool,
    user,
)
from workbench.messages import Message, is_internal_message, is_system_message
from workbench.strategies.awaken import (
    ContextCompactionMode,
    ContextWindowPolicy,
    apply_summary,
    compaction_keep_suffix,
    ensure_ids,
    estimate_tokens,
    extract_previous_summary,
    find_compaction_boundary,
    is_summary_message,
    latest_user_suffix,
    plan_compaction,
    render_transcript,
    should_compact,
    summary_message,
    trim_to_compaction_boundary,
)

FRONTIER = ContextCompactionMode.COMPACT_TO_SAFE_FRONTIER
BIG = 1000  # bytes: 4 + 250 = 254 tokens per message


def big_user(tag: str) -> Message:
    return user(tag + "u" * (BIG - len(tag)), id=tag)


def big_assistant(tag: str, calls: tuple[str, ...] = ()) -> Message:
    return assistant(tag + "a" * (BIG - len(tag)), calls, id=tag)


def conversation(n: int) -> list[Message]:
    """`n` alternating big user/assistant messages with ids "0", "1", ..."""
    return [big_user(str(i)) if i % 2 == 0 else big_assistant(str(i)) for i in range(n)]


# ---- find_compaction_boundary -------------------------------------------------------------------


def test_find_compaction_boundary_respects_tool_pairs() -> None:
    messages = [user("q"), assistant("", ["c1"]), tool("c1", "r"), user("next"), assistant("ok")]
    assert find_compaction_boundary(messages, 0, 5) == 4
    assert find_compaction_boundary(messages, 0, 2) == 0
    assert find_compaction_boundary(messages, 0, 3) == 2


def test_find_compaction_boundary_does_not_cut_open_tool_round() -> None:
    messages = [user("q"), assistant("", ["c1"]), tool("c1", "r"), assistant("", ["c2"])]
    assert find_compaction_boundary(messages, 0, 4) == 2


def test_find_boundary_looks_past_the_range_for_a_following_tool_message() -> None:
    # Index 1 closes nothing itself, but a Tool message follows just outside the range.
    messages = [user("q"), assistant("text"), tool("c9", "late result"), user("more")]
    assert find_compaction_boundary(messages, 0, 2) == 0


def test_find_boundary_returns_none_when_too_few_messages_or_empty_range() -> None:
    assert find_compaction_boundary([], 0, 0) is None
    messages = [user("a"), assistant("b")]
    assert find_compaction_boundary(messages, 1, 1) is None
    assert find_compaction_boundary(messages, 2, 1) is None
    assert find_compaction_boundary([assistant("", ["c1"])], 0, 1) is None


def test_find_compaction_boundary_multiple_complete_tool_rounds() -> None:
    messages = [user("q"), assistant("", ["c1"]), tool("c1", "r1"), assistant("", ["c2"]),
                tool("c2", "r2"), assistant("done")]
    assert find_compaction_boundary(messages, 0, 6) == 5
    assert find_compaction_boundary(messages, 0, 4) == 2


def test_find_compaction_boundary_with_multiple_tool_calls_in_one_round() -> None:
    messages = [user("q"), assistant("", ["c1", "c2", "c3"]), tool("c1", "1"), tool("c2", "2"),
                tool("c3", "3"), assistant("done")]
    assert find_compaction_boundary(messages, 0, 6) == 5
    assert find_compaction_boundary(messages, 0, 4) == 0


def test_quirk_a_dangling_call_freezes_the_frontier() -> None:
    # c1 never gets a result; the conversation goes on for many messages after it.
    messages = [big_user("q0"), big_assistant("a1", ("c1",)), *conversation(10)[2:]]
    assert find_compaction_boundary(messages, 0, len(messages)) == 0
    policy = ContextWindowPolicy()
    assert plan_compaction(messages, policy) is None, "a 254-token prefix is under the floor"
    # The fix: a call the conversation moved past no longer holds the round open.
    assert find_compaction_boundary(messages, 0, len(messages), skip_abandoned_calls=True) == 9
    plan = plan_compaction(messages, policy, skip_abandoned_calls=True)
    assert plan is not None and plan.boundary_message_id == "7"


def test_skip_abandoned_calls_still_waits_for_a_call_at_the_end() -> None:
    messages = [user("q"), assistant("a"), user("go"), assistant("", ["c1"])]
    assert find_compaction_boundary(messages, 0, 4, skip_abandoned_calls=True) == 2


# ---- plan_compaction ---------------------------------------------------------------------------------


def test_plan_compaction_returns_none_when_savings_below_threshold() -> None:
    messages = [user("hi"), assistant("hello"), user("bye"), assistant("ciao")]
    assert plan_compaction(messages, ContextWindowPolicy()) is None


def test_plan_compaction_returns_none_under_two_messages() -> None:
    assert plan_compaction([big_user("x")], ContextWindowPolicy()) is None


def test_plan_compaction_captures_boundary_message_id() -> None:
    messages = conversation(10)
    plan = plan_compaction(messages, ContextWindowPolicy())
    assert plan is not None
    assert (plan.boundary_message_id, plan.boundary_index, plan.pre_tokens) == ("7", 7, 8 * 254)
    assert plan.transcript == render_transcript(messages[:8])
    assert plan.transcript.startswith("[User]: 0uuu") and plan.previous_summary is None


def test_plan_compaction_floor_is_on_the_prefix_not_on_the_gain() -> None:
    messages = conversation(6)  # prefix through index 3: 4 * 254 = 1016 < 1024
    assert plan_compaction(messages, ContextWindowPolicy()) is None
    plan = plan_compaction(messages, ContextWindowPolicy(), min_prefix_tokens=1016)
    assert plan is not None and plan.pre_tokens == 1016


def test_plan_compaction_preserves_latest_user_message_raw() -> None:
    policy = ContextWindowPolicy(compaction_mode=FRONTIER, min_recent_messages=0,
                                 compaction_raw_suffix_messages=0)
    messages = [*conversation(6), user("latest question", id="latest"), big_assistant("7"),
                big_assistant("8")]
    assert latest_user_suffix(messages) == 3
    plan = plan_compaction(messages, policy)
    assert plan is not None and plan.boundary_message_id == "5"
    assert "latest question" not in plan.transcript


def test_keep_recent_raw_suffix_honors_min_recent_messages() -> None:
    # As in awaken's test of that name, this runs frontier mode with min_recent_messages = 3.
    policy = ContextWindowPolicy(compaction_mode=FRONTIER, min_recent_messages=3)
    messages = [big_user("0"), big_assistant("1"), big_user("2"), big_assistant("3"),
                big_assistant("4")]
    assert compaction_keep_suffix(messages, policy) == 3
    plan = plan_compaction(messages, policy, min_prefix_tokens=0)
    assert plan is not None and plan.boundary_index == 1


def test_quirk_frontier_mode_is_more_conservative_than_suffix_mode_at_the_defaults() -> None:
    messages = conversation(20)
    suffix = plan_compaction(messages, ContextWindowPolicy())
    frontier = plan_compaction(messages, ContextWindowPolicy(compaction_mode=FRONTIER))
    assert suffix is not None and frontier is not None
    assert (suffix.boundary_index, frontier.boundary_index) == (17, 9)
    fixed = plan_compaction(messages, ContextWindowPolicy(compaction_mode=FRONTIER),
                            frontier_floor=0)
    assert fixed is not None and fixed.boundary_index == 17


def test_internal_user_messages_do_not_count_as_the_latest_user_message() -> None:
    messages = [*conversation(8), internal_user("continue where you stopped"), big_assistant("9")]
    assert latest_user_suffix(messages) == 4
    plan = plan_compaction(messages, ContextWindowPolicy())
    assert plan is not None and plan.boundary_message_id == "5"


def test_a_long_autonomous_turn_has_nothing_to_compact() -> None:
    messages = [user("do the whole task", id="task")]
    for i in range(10):
        messages += [big_assistant(f"a{i}", (f"c{i}",)), tool(f"c{i}", "r" * 2000)]
    assert estimate_tokens(messages) == 1 * 8 + 10 * (254 + 504)
    assert compaction_keep_suffix(messages, ContextWindowPolicy()) == len(messages)
    assert plan_compaction(messages, ContextWindowPolicy()) is None


def test_plan_compaction_needs_an_id_on_the_boundary_message() -> None:
    messages = conversation(10)
    messages[7] = messages[7].copy_with(id=None)
    assert plan_compaction(messages, ContextWindowPolicy()) is None
    repaired = ensure_ids(messages)
    assert repaired[0] is messages[0] and repaired[7].id
    plan = plan_compaction(repaired, ContextWindowPolicy())
    assert plan is not None and plan.boundary_message_id == repaired[7].id


def test_plan_counts_the_previous_summary_and_passes_it_on() -> None:
    stored = summary_message("Earlier: the user wants a CSV parser.")
    messages = [stored, *conversation(10)]
    plan = plan_compaction(messages, ContextWindowPolicy())
    assert plan is not None
    assert plan.previous_summary == "Earlier: the user wants a CSV parser."
    assert plan.pre_tokens == estimate_tokens([stored]) + 8 * 254
    assert "CSV parser" not in plan.transcript


def test_should_compact_fires_at_the_threshold_on_the_thread_estimate() -> None:
    messages = conversation(4)  # 4 * 254 = 1016
    assert not should_compact(messages, ContextWindowPolicy())
    assert should_compact(messages, ContextWindowPolicy(autocompact_threshold=1016))
    assert not should_compact(messages, ContextWindowPolicy(autocompact_threshold=1017))


# ---- apply_summary -------------------------------------------------------------------------------------


def test_apply_summary_swaps_when_boundary_present() -> None:
    old = summary_message("old")
    messages = [old, *conversation(6)]
    appended = user("arrived while summarizing", id="late")
    new, applied = apply_summary([*messages, appended], "3", "the new summary")
    assert texts(new) == ["<conversation-summary>\nthe new summary\n</conversation-summary>",
                          *texts(messages[5:]), "arrived while summarizing"]
    assert old not in new and is_summary_message(new[0])
    assert is_system_message(new[0]) and is_internal_message(new[0]) and new[0].id
    assert (applied.boundary_index, applied.pre_tokens, applied.post_tokens) == (
        4, estimate_tokens(messages[:5]), 4 + 62 // 4)


def test_apply_summary_returns_none_when_boundary_already_gone() -> None:
    assert apply_summary(conversation(4), "missing", "s") is None


# ---- render_transcript and extract_previous_summary -------------------------------------------------------


def test_render_transcript_formats_correctly() -> None:
    assert render_transcript([user("hello"), assistant("hi there")]) == (
        "[User]: hello\n\n[Assistant]: hi there")


def test_render_transcript_formats_roles() -> None:
    messages = [system("sys prompt"), user("question"), assistant("answer"),
                tool("c1", "tool output")]
    assert render_transcript(messages) == (
        "[System]: sys prompt\n\n[User]: question\n\n[Assistant]: answer\n\n[Tool]: tool output")


def test_render_transcript_excludes_internal_messages() -> None:
    messages = [system("visible system"), internal_system("hidden internal context"),
                user("hello"), internal_user("continuation"), assistant("hi"),
                internal_system("another hidden")]
    assert render_transcript(messages) == (
        "[System]: visible system\n\n[User]: hello\n\n[Assistant]: hi")


def test_render_transcript_empty_messages() -> None:
    assert render_transcript([]) == ""


def test_render_transcript_skips_empty_text_messages_and_never_shows_calls() -> None:
    call = assistant("")
    call.with_tool_request("c1", "search", {"query": "secret-arg"})
    transcript = render_transcript([user("hello"), call, assistant("visible")])
    assert transcript == "[User]: hello\n\n[Assistant]: visible"
    assert len(transcript.split("\n\n")) == 2


def test_render_transcript_tool_messages_show_content_raw() -> None:
    messages = [user("search for something"), tool("c1", "search result: found 5 items")]
    assert render_transcript(messages).endswith("[Tool]: search result: found 5 items")
    assert render_transcript([tool("c1", "x" * 20_000)]) == "[Tool]: " + "x" * 20_000


def test_extract_previous_summary_finds_summary() -> None:
    messages = [internal_system("<conversation-summary>\nPrevious summary text\n"
                                "</conversation-summary>"), user("new msg")]
    assert extract_previous_summary(messages) == "Previous summary text"


def test_extract_previous_summary_none_without_summary() -> None:
    assert extract_previous_summary([user("hello")]) is None


def test_extract_previous_summary_empty_summary_ignored() -> None:
    blank = internal_system("<conversation-summary>   \n  \n  </conversation-summary>")
    assert extract_previous_summary([blank]) is None
    assert extract_previous_summary([blank, summary_message("second")]) == "second"


def test_extract_previous_summary_ignores_non_internal_system() -> None:
    messages = [system("<conversation-summary>\nShould be ignored\n</conversation-summary>"),
                user("hello")]
    assert extract_previous_summary(messages) is None


def test_extract_previous_summary_takes_the_first_of_several() -> None:
    assert extract_previous_summary([summary_message("first"), summary_message("second")]) == (
        "first")


# ---- trim_to_compaction_boundary ------------------------------------------------------------------------


def test_trim_to_compaction_boundary_drops_pre_summary() -> None:
    summary = summary_message("s")
    messages = [user("old"), assistant("old reply"), summary, user("new")]
    assert trim_to_compaction_boundary(messages) == [summary, messages[3]]


def test_trim_to_compaction_boundary_noop_without_summary_and_idempotent() -> None:
    messages = [user("a"), assistant("b")]
    assert trim_to_compaction_boundary(messages) == messages
    once = trim_to_compaction_boundary([user("x"), summary_message("s"), user("y")])
    assert trim_to_compaction_boundary(once) == once and len(once) == 2


def test_trim_to_compaction_boundary_uses_last_summary() -> None:
    first, last = summary_message("one"), summary_message("two")
    messages = [first, user("a"), last, user("b")]
    assert trim_to_compaction_boundary(messages) == [last, messages[3]]
