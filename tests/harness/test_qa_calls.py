"""A cell's QA calls read their usage flags with the same readers as its summary calls."""

from __future__ import annotations

import asyncio

from workbench._json_types import JSONValue
from workbench.compaction import Usage
from workbench.harness.run._qa_calls import QACalls
from workbench.messages import Message


class Replies:
    """A model that answers each call with the next of its usages."""

    def __init__(self, usages: list[Usage]) -> None:
        self.usages = list(usages)

    async def complete(self, system: str, messages: list[Message]) -> tuple[Message, Usage]:
        return Message.assistant("an answer"), self.usages.pop(0)


def ask(usages: list[Usage]) -> QACalls:
    calls, model = QACalls(), Replies(usages)

    async def go() -> None:
        for n in range(len(usages)):
            await calls.call(model, "m", "answer", "system", [Message.user("q")], f"q{n}")

    asyncio.run(go())
    return calls


def usage(**extra: JSONValue) -> Usage:
    return Usage(model="m", input_tokens=10, output_tokens=2, extra=dict(extra))


def test_qa_gateway_retries_are_summed_as_the_summary_calls_sum_them() -> None:
    calls = ask([usage(retries_made=2, call_id="A"), usage(), usage(retries_made="1"),
                 usage(retries_made=None)])
    assert calls.sums()["http_retries"] == 3


def test_a_sent_qa_call_is_named_and_a_shared_one_names_its_source() -> None:
    calls = ask([usage(call_id="01SENT", cache_hit=False),
                 usage(shared=True, shared_from="01SENT"), usage(cache_hit=True)])
    rows = calls.attempt_results(first_number=4)
    assert [(r.attempt_no, r.attempt_id, r.shared, r.shared_from, r.cache_hit) for r in rows] == [
        (4, "01SENT", 0, None, 0), (5, None, 1, "01SENT", None), (6, None, 0, None, 1)]
    assert [r.question_id for r in rows] == ["q0", "q1", "q2"]
    assert calls.sums()["calls_shared"] == 1 and calls.sums()["calls_made"] == 2
