"""``codex``: the 90 % trigger, the newest user messages kept within their budget (the one that
does not fit cut, the walk stopped there), the handoff summary last, earlier summaries not
carried, and the oldest message dropped while the compaction request overflows."""

from __future__ import annotations

from tests.strategies._policy_sessions import call, request, texts
from workbench.errors import ContextLengthExceeded
from workbench.messages import Message
from workbench.strategies import get_strategy
from workbench.strategies._codex import CUT_MARK, HANDOFF_NOTE, kept_user_messages
from workbench.testing import ScriptedModel


def _conversation() -> list[Message]:
    return [Message.user(HANDOFF_NOTE + "older notes"), Message.user("a" * 8),
            Message.assistant("reading"), *call("c1", "read", {"path": "x"}, "output " * 50),
            Message.user("b" * 16), Message.assistant("fixed"), Message.user("c" * 20)]


def test_codex_compacts_at_90_percent_of_the_window() -> None:
    assert get_strategy("codex").trigger_tokens(1000) == 900
    assert get_strategy("codex").trigger_tokens(8192) == 7372


def test_user_messages_are_kept_newest_first_until_the_budget_and_the_next_is_cut() -> None:
    # Four bytes a token: c = 5, b = 4, a = 2. A budget of 10 keeps c and b (1 left), and cuts
    # a to that one token (4 bytes); an earlier summary is not a user message.
    assert kept_user_messages(_conversation(), 10) == ["aaaa" + CUT_MARK, "b" * 16, "c" * 20]
    assert kept_user_messages(_conversation(), 9) == ["b" * 16, "c" * 20]  # nothing left for a
    assert kept_user_messages(_conversation(), 4) == ["c" * 16 + CUT_MARK]  # 4 tokens of 5


async def test_the_new_context_is_the_kept_user_messages_then_the_handoff_summary() -> None:
    out = await get_strategy("codex", user_message_budget=10).compact(
        request(_conversation(), ScriptedModel(["## Goal\n- finish"])))
    assert texts(out.context) == ["user: aaaa" + CUT_MARK, "user: " + "b" * 16, "user: " + "c" * 20,
                                  "user: " + HANDOFF_NOTE + "## Goal\n- finish"]
    assert out.detail["user_messages_kept"] == 3


async def test_the_default_budget_is_20000_tokens() -> None:
    big = [Message.user("x" * 60_000), Message.user("y" * 40_000)]  # 15,000 and 10,000 tokens
    out = await get_strategy("codex").compact(request(big, ScriptedModel(["notes"])))
    # y fits (10,000 left); x is cut to those 10,000 tokens, 40,000 bytes
    assert [len(m.concat_text()) for m in out.context[:-1]] == [40_000 + len(CUT_MARK), 40_000]


async def test_an_overflowing_compaction_request_drops_the_oldest_messages_until_it_fits() -> None:
    too_long = ContextLengthExceeded("too long", "scripted")
    model = ScriptedModel(["notes"], raise_on={1: too_long, 2: too_long})
    out = await get_strategy("codex").compact(request(_conversation(), model))
    assert out.detail["dropped_before_summary"] == 2
    firsts = [sent[0].concat_text().split("\n\n", 1)[1].split("\n")[0] for _, sent in model.calls]
    assert firsts == ["[user]: " + HANDOFF_NOTE.split("\n")[0], "[user]: " + "a" * 8,
                      "[assistant]: reading"]
    assert [a.outcome for a in out.attempts] == ["context_length_exceeded"] * 2 + ["ok"]
