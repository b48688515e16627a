"""``claude-code``: the trigger 13,000 tokens below the window less the reply reserve, the
nine-section analysed summary with its analysis dropped, the recently read files re-attached
(5 files, 5,000 tokens each, 50,000 in all) and the breaker after 3 failures in a row."""

from __future__ import annotations

import pytest

from tests.strategies._policy_sessions import call, request, texts
from workbench.errors import CompactionError, ModelCallError
from workbench.messages import Message
from workbench.models import ExtractiveModel
from workbench.strategies import get_strategy, replay_session
from workbench.strategies._claude_code import CONTINUATION_LEAD, recent_reads
from workbench.testing import ScriptedModel

REPLY = ("<analysis>walked through it</analysis>\n<summary>\n## Primary request and intent\n"
         "- fix the totals\n## Pending tasks\n- none\n</summary>")


def test_claude_code_fires_13000_tokens_below_the_window_less_a_20000_token_reply_reserve() -> None:
    strategy = get_strategy("claude-code")
    assert strategy.trigger_tokens(200_000) == 167_000  # 83.5 % of a 200k window
    assert strategy.trigger_tokens(8192) == 1  # the published reserves are larger than 8k
    shares = get_strategy("claude-code", output_reserve=0.1, buffer=0.065)
    assert shares.trigger_tokens(200_000) == 167_000
    assert shares.trigger_tokens(8192) == 8192 - 819 - 532


async def test_the_summary_replaces_the_conversation_without_its_analysis() -> None:
    model = ScriptedModel([REPLY])
    messages = [Message.user("fix the totals please"), Message.assistant("on it")]
    out = await get_strategy("claude-code").compact(request(messages, model))
    assert texts(out.context) == [
        "user: " + CONTINUATION_LEAD + "## Primary request and intent\n- fix the totals\n"
        "## Pending tasks\n- none"]
    assert out.detail["summary"].startswith("## Primary request and intent")
    system, sent = model.calls[0]
    assert "nine headings" in system and "<analysis>" in system
    assert sent[0].concat_text().endswith("[user]: fix the totals please\n[assistant]: on it")


async def test_the_extractive_baseline_answers_all_nine_sections() -> None:
    messages = [Message.user("fix the totals in app.py please"), Message.assistant("on it")]
    out = await get_strategy("claude-code").compact(request(messages, ExtractiveModel(),
                                                            window=None))
    headings = [line for line in out.detail["summary"].splitlines() if line.startswith("## ")]
    assert headings == ["## Primary request and intent", "## Key technical concepts",
                        "## Files and code sections", "## Errors and fixes",
                        "## Problem solving", "## All user messages", "## Pending tasks",
                        "## Current work", "## Optional next step"]
    assert "<analysis>" not in out.context[0].concat_text()


def _reads() -> list[Message]:
    messages = [Message.user("look at the modules")]
    for n in range(1, 7):
        messages += call(f"c{n}", "read_file", {"path": f"f{n}.py"}, f"body of f{n}")
    messages += call("c7", "read_file", {"path": "f2.py"}, "newer body of f2")
    messages += call("c8", "shell", {"command": "ls"}, "f1.py f2.py")
    return messages


def test_recent_reads_are_newest_first_one_per_path_with_its_latest_contents() -> None:
    assert recent_reads(_reads()) == [
        ("f2.py", "newer body of f2"), ("f6.py", "body of f6"), ("f5.py", "body of f5"),
        ("f4.py", "body of f4"), ("f3.py", "body of f3"), ("f1.py", "body of f1")]


async def test_at_most_five_recently_read_files_are_reattached_after_the_summary() -> None:
    out = await get_strategy("claude-code").compact(request(_reads(), ScriptedModel([REPLY])))
    assert [m.concat_text().split(",")[0] for m in out.context[1:]] == [
        "Contents of f2.py", "Contents of f6.py", "Contents of f5.py", "Contents of f4.py",
        "Contents of f3.py"]
    assert out.context[1].concat_text() == ("Contents of f2.py, read again after the summary:\n"
                                            "newer body of f2")
    assert out.detail["restored_files"] == 5


async def test_each_file_is_cut_to_its_token_cap_and_all_stay_within_the_budget() -> None:
    body = "\n".join(["abcdefghi"] * 10)  # 99 characters, lines of 9
    messages = [Message.user("read them")]
    for n in range(1, 5):
        messages += call(f"c{n}", "read_file", {"path": f"f{n}.py"}, body)
    # each cut to 20 tokens: two whole lines (19 characters) and the cut mark (13 + newline)
    cut = "abcdefghi\nabcdefghi\n[cut to fit]"
    exact = get_strategy("claude-code", restore_file_tokens=20, restore_budget=3 * len(cut))
    out = await exact.compact(request(messages, ScriptedModel([REPLY])))
    assert [m.concat_text().split("\n", 1)[1] for m in out.context[1:]] == [cut] * 3
    short = get_strategy("claude-code", restore_file_tokens=20, restore_budget=3 * len(cut) - 1)
    out = await short.compact(request(messages, ScriptedModel([REPLY])))
    assert len(out.context) == 1 + 2  # the third file would pass the budget by one token


async def test_the_breaker_opens_after_three_failures_in_a_row_and_calls_no_more() -> None:
    error = ModelCallError("provider down", "scripted")
    model = ScriptedModel([REPLY], raise_on={1: error, 2: error, 4: error, 5: error, 6: error})
    strategy = get_strategy("claude-code")
    messages = [Message.user("fix it"), Message.assistant("ok")]
    for _ in range(2):
        with pytest.raises(CompactionError):
            await strategy.compact(request(messages, model))
    assert (await strategy.compact(request(messages, model))).compacted  # resets the count
    for _ in range(3):
        with pytest.raises(CompactionError):
            await strategy.compact(request(messages, model))
    out = await strategy.compact(request(messages, model))
    assert (out.compacted, out.detail["reason"]) == (False, "breaker open after 3 failures in a row")
    assert model.call_count == 6


def test_in_a_replay_failures_are_rounds_with_errors_until_the_breaker_opens() -> None:
    from tests.strategies._policy_sessions import Chars, session

    messages = []
    for k in range(6):
        messages += [Message.user(f"request {k} " + "x" * 90), Message.assistant(f"done {k}")]
    model = ScriptedModel(always_raise=ModelCallError("provider down", "scripted"))
    result = replay_session(session(messages), "claude-code", window=1000, threshold=0.1,
                            model=model, estimator=Chars(), probes="none")
    assert [r.error is not None for r in result.rounds] == [True, True, True, False, False]
    assert model.call_count == 3
