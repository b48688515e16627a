"""The probe author's question lists."""

from __future__ import annotations

import json

import pytest

from workbench.errors import ReplyFormatError
from workbench.probes import parse_author_reply


def test_an_author_reply_becomes_open_judged_questions() -> None:
    items = [{"kind": "recall", "question": "Which port?", "answer": "50354"},
             {"kind": "decision", "question": "Why a set?", "answer": "batches overlap"},
             {"kind": "artifact", "question": "Which file?", "answer": "src/a.py"}]
    qs = parse_author_reply(f"```json\n{json.dumps(items)}\n```", 2,
                            kinds=["recall", "decision"], author="openai/x")
    assert [(q.id, q.kind, q.text, q.expected) for q in qs] == [
        ("author-1", "recall", "Which port?", "50354"),
        ("author-2", "decision", "Why a set?", "batches overlap")]
    assert all(q.grader == "overlap" and q.judged and q.source == "author:openai/x" for q in qs)


@pytest.mark.parametrize(("text", "why"), [
    ("no list here", "holds no JSON list"),
    ('[{"kind": "recall"}]', "lacks a question or answer"),
    ('[{"kind": "gossip", "question": "?", "answer": "!"}]', "kind 'gossip'"),
    ('["just text"]', "item 0 is not an object"),
])
def test_a_malformed_author_reply_raises(text: str, why: str) -> None:
    with pytest.raises(ReplyFormatError, match=why):
        parse_author_reply(text, 3)


def test_an_authored_answer_stands_only_where_the_history_holds_it_verbatim() -> None:
    from tests.probes._sessions import manifest_session
    from workbench.probes import Evidence, ground_authored

    items = [{"kind": "recall", "question": "Which port now?", "answer": "50354"},
             {"kind": "recall", "question": "Which database?", "answer": "PostgreSQL 16"},
             {"kind": "artifact", "question": "Which file is gone?",
              "answer": "tests/fixtures/old.json"}]
    written = parse_author_reply(json.dumps(items), 3, author="openai/x")
    kept, dropped = ground_authored(written, manifest_session().messages)
    assert dropped == 1
    assert [(q.id, q.evidence) for q in kept] == [
        ("author-1", [Evidence(8, "port = 50354")]),
        ("author-3", [Evidence(12, "rm tests/fixtures/old.json")])]
    assert all(q.authored and q.source == "author:openai/x" for q in kept)
