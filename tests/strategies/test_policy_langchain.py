"""``langchain``: the 4,000-token trigger, the last 20 messages kept with no tool output cut
from its call, the summariser's input trimmed to its newest 4,000 tokens, and nothing done
when nothing is older than the kept messages."""

from __future__ import annotations

from tests.strategies._policy_sessions import call, request, texts
from workbench.messages import Message
from workbench.strategies import get_strategy
from workbench.strategies._langchain import SUMMARY_LEAD, safe_cut
from workbench.testing import ScriptedModel


def test_the_trigger_is_4000_tokens_or_the_share_given() -> None:
    assert get_strategy("langchain").trigger_tokens(200_000) == 4000
    assert get_strategy("langchain", trigger=0.5).trigger_tokens(8192) == 4096


def _chat(n: int) -> list[Message]:
    out: list[Message] = []
    for k in range(n):
        out += [Message.user(f"u{k}".ljust(100, ".")), Message.assistant(f"a{k}".ljust(100, "."))]
    return out


def test_the_cut_keeps_the_last_n_messages_and_never_orphans_a_tool_output() -> None:
    chat = _chat(3) + call("c1", "ls", {}, "out") + _chat(2)  # 6 + 2 + 4 messages
    assert safe_cut(chat, 4) == 8
    assert safe_cut(chat, 5) == 6  # the 5th from the end is ls's output: its call comes too
    assert safe_cut(chat, 6) == 6
    assert safe_cut(chat, 20) == 0


async def test_all_but_the_last_20_messages_become_one_summary() -> None:
    model = ScriptedModel(["## Context\n- earlier"])
    out = await get_strategy("langchain").compact(request(_chat(13), model, window=None))
    assert texts(out.context) == ["user: " + SUMMARY_LEAD + "## Context\n- earlier",
                                  *texts(_chat(13)[6:])]
    assert out.detail == {"summary": "## Context\n- earlier", "summarised_messages": 6,
                          "read_by_summariser": 6}


async def test_the_summariser_reads_only_the_newest_messages_within_trim_tokens() -> None:
    model = ScriptedModel(["s"])
    out = await get_strategy("langchain", keep_messages=2, trim_tokens=250).compact(
        request(_chat(4), model, window=None))
    # six older messages of 100: the newest two fit 250, the third would not
    assert out.detail["read_by_summariser"] == 2
    sent = model.calls[0][1][0].concat_text()
    assert "[user]: u2" in sent and "[assistant]: a1" not in sent


async def test_nothing_is_summarised_when_every_message_is_kept() -> None:
    out = await get_strategy("langchain").compact(request(_chat(5), ScriptedModel(["s"])))
    assert not out.compacted and out.detail["reason"] == "nothing older than the kept messages"
