"""``gemini-cli``: the 50 % trigger, the split at 70 % of the characters on a human message,
old tool outputs cut to their last lines beyond the budget, the verification pass, the
discarded compression larger than its input and the truncation-only rounds after it."""

from __future__ import annotations

from tests.strategies._policy_sessions import Chars, call, request, texts
from workbench.messages import Message
from workbench.strategies import get_strategy
from workbench.strategies._gemini_cli import ACKNOWLEDGEMENT, cut_tool_outputs, split_point
from workbench.testing import ScriptedModel


def _u(n: int) -> Message:  # a human message whose transcript line is 100 characters
    return Message.user(f"u{n}".ljust(92, "."))


def _a(n: int) -> Message:  # an assistant message of 100 characters in the transcript
    return Message.assistant(f"a{n}".ljust(87, "."))


def test_gemini_cli_compresses_at_half_the_window() -> None:
    assert get_strategy("gemini-cli").trigger_tokens(8192) == 4096


def test_the_split_is_the_first_human_message_at_or_after_70_percent_of_the_characters() -> None:
    # 700 characters: the cut must start at 490 or later; u5 starts at 500.
    assert split_point([_u(1), _a(1), _u(2), _a(2), _a(3), _u(5), _a(5)], 0.3) == 5
    # 600 characters, no human message at 420 or later, the last message answers without a
    # tool call: everything is summarised.
    history = [_u(1), _a(1), _u(2), _a(2), _u(3), _a(3)]
    assert split_point(history, 0.3) == 6
    # ...unless it calls a tool: then the last human message before 70 % (u3, index 4).
    calling = history[:-1] + [Message.assistant("a").with_tool_request("c", "ls", {})]
    assert split_point(calling, 0.3) == 4
    # a tool output is never a split point
    outputs = [_u(1), *call("c1", "ls", {}, "x" * 300), _a(2)]
    assert split_point(outputs, 0.3) == len(outputs)


def test_tool_outputs_past_the_budget_counted_from_the_newest_keep_their_last_lines() -> None:
    lines = "\n".join(f"line{i}" for i in range(10))  # 59 characters
    messages = [*call("c1", "sh", {}, lines), *call("c2", "sh", {}, lines),
                *call("c3", "sh", {}, "x" * 60)]
    cut = "[output too long: only its last 2 lines are kept]\nline8\nline9"

    def outputs(budget: int) -> list[str]:
        return [r.text() for m in cut_tool_outputs(messages, budget, 2, Chars())
                for r in m.tool_responses()]

    assert outputs(119) == [cut, lines, "x" * 60]  # 60 + 59 fits exactly
    assert outputs(118) == [cut, cut, "x" * 60]
    assert outputs(59) == [cut, cut, "x" * 60]  # an output of no more lines than kept stays


async def test_the_snapshot_is_verified_and_the_second_answer_kept() -> None:
    model = ScriptedModel(["<state_snapshot>first</state_snapshot>",
                           "<scratchpad>checked</scratchpad><state_snapshot>second</state_snapshot>"])
    history = [_u(1), _a(1), _u(2), _a(2), _a(3), _u(5), _a(5)]
    out = await get_strategy("gemini-cli").compact(request(history, model, window=100_000))
    assert texts(out.context) == ["user: <state_snapshot>second</state_snapshot>",
                                  f"assistant: {ACKNOWLEDGEMENT}", *texts(history[5:])]
    assert model.call_count == 2
    system, sent = model.calls[1]
    assert "<state_snapshot>" in system
    request_text = sent[0].concat_text()
    assert request_text.startswith("Read the <state_snapshot> you just wrote")
    assert request_text.endswith("[assistant]: <state_snapshot>first</state_snapshot>")
    assert out.detail["status"] == "compressed"


async def test_an_empty_verification_keeps_the_first_snapshot() -> None:
    model = ScriptedModel(["<state_snapshot>first</state_snapshot>", ""])
    history = [_u(1), _a(1), _u(2), _a(2), _a(3), _u(5), _a(5)]
    out = await get_strategy("gemini-cli").compact(request(history, model, window=100_000))
    assert out.context[0].concat_text() == "<state_snapshot>first</state_snapshot>"


async def test_an_earlier_snapshot_is_carried_over() -> None:
    model = ScriptedModel(["<state_snapshot>new</state_snapshot>"])
    history = [Message.user("<state_snapshot>old</state_snapshot>"), _a(1), _u(2), _a(2),
               _a(3), _u(5), _a(5)]
    await get_strategy("gemini-cli", verify=False).compact(request(history, model,
                                                                   window=100_000))
    assert model.calls[0][1][0].concat_text().startswith("The history below already holds")


async def test_a_compression_larger_than_its_input_is_discarded_then_only_outputs_are_cut() -> None:
    huge = "<state_snapshot>" + "z" * 2000 + "</state_snapshot>"
    model = ScriptedModel([huge])
    strategy = get_strategy("gemini-cli", tool_output_budget=10, tail_lines=1)
    log = "\n".join(["x" * 20] * 5)
    history = [_u(1), *call("c1", "sh", {}, log), _a(1), _u(2), _a(2), _a(3), _u(5), _a(5)]
    out = await strategy.compact(request(history, model, window=100_000))
    assert not out.compacted and out.detail["status"] == "discarded: larger than its input"
    assert texts(out.context) == texts(history) and model.call_count == 2
    after = await strategy.compact(request(history, model, window=100_000))
    assert after.compacted and after.detail["status"] == "truncated only"
    assert [r.text() for m in after.context for r in m.tool_responses()] == [
        "[output too long: only its last 1 lines are kept]\n" + "x" * 20]
    assert model.call_count == 2  # no summary after a failed one
