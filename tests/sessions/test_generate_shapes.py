"""Version-3 generated sessions: each shape's ground truth says what the transcript holds."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from workbench.sessions import Session, load_session
from workbench.sessions._generate import (
    SHAPES,
    dataset_name,
    generate_session,
    message_text,
    prose_tokens,
)

DATASETS = Path(__file__).resolve().parents[2] / "datasets"


def _v3_shipped() -> list[Session]:
    manifest = json.loads((DATASETS / "manifest.json").read_text())
    return [load_session(DATASETS / e["file"]) for e in manifest["sessions"]
            if e["version"] == 3]


@pytest.fixture(scope="module")
def shipped() -> list[Session]:
    return _v3_shipped()


def _text(session: Session, index: int) -> str:
    return message_text(session.messages[index])


@pytest.mark.parametrize("shape", SHAPES)
def test_a_shape_is_deterministic_and_differs_from_the_others(shape: str,
                                                              tmp_path: Path) -> None:
    a, _ = generate_session(70, 9_000, shape=shape)
    b, _ = generate_session(70, 9_000, shape=shape)
    assert a.write_goose_json(tmp_path / "a.json").read_bytes() == \
        b.write_goose_json(tmp_path / "b.json").read_bytes()
    assert a.meta["generator"] == {"seed": 70, "target_tokens": 9_000, "version": 3}
    assert a.meta["shape"] == shape and a.id == dataset_name(70, 9_000)
    other = SHAPES[(SHAPES.index(shape) + 1) % len(SHAPES)]
    c, _ = generate_session(70, 9_000, shape=other)
    assert [m.concat_text() for m in c.messages] != [m.concat_text() for m in a.messages]


def test_unknown_shapes_and_versions_are_refused_by_name() -> None:
    with pytest.raises(ValueError, match="^shape 'poetry' is not one of debugging, feature, "
                                         "refactor, review, tool-loop, discussion$"):
        generate_session(1, 5_000, shape="poetry")
    with pytest.raises(ValueError, match="^generator version 1: this generator writes 2, 3, 4$"):
        generate_session(1, 5_000, version=1)
    with pytest.raises(ValueError, match="^generator version 2 writes the debugging shape "
                                         "only, not 'review'$"):
        generate_session(1, 5_000, shape="review", version=2)


def test_every_error_is_quoted_exactly_by_a_failing_tool_result(shipped: list[Session]) -> None:
    for session in shipped:
        errors = session.meta["errors"]
        assert errors, session.id
        facts = {f["text"] for f in session.meta["planted_facts"] if f["kind"] == "error"}
        assert [e["text"] for e in errors] == [
            f["text"] for f in session.meta["planted_facts"] if f["kind"] == "error"]
        assert facts == {e["text"] for e in errors}
        for error in errors:
            [result] = session.messages[error["message_index"]].tool_responses()
            assert result.tool_result.is_error and error["text"] in result.text(), session.id


def test_files_changed_name_the_call_that_changed_them(shipped: list[Session]) -> None:
    seen_changes = set()
    for session in shipped:
        for entry in session.meta["files_changed"]:
            seen_changes.add(entry["change"])
            msg = session.messages[entry["message_index"]]
            [call] = msg.tool_requests()
            args = call.arguments or {}
            if entry["change"] == "created":
                assert call.name == "write_file" and args["path"] == entry["path"]
            elif entry["change"] == "edited":
                assert call.name == "edit_file" and args["path"] == entry["path"]
            else:
                assert entry["change"] == "deleted"
                later = [r.arguments.get("command") for m in session.messages[
                    entry["message_index"]:] for r in m.tool_requests()]
                assert f"git rm {entry['path']}" in later
            # the first description is in the words of the message that made the change
            first_how = entry["how"].split("; ")[0]
            assert first_how in msg.concat_text(), entry
    assert seen_changes == {"created", "edited", "deleted"}


def test_pending_tasks_are_asked_for_and_still_open_at_the_end(shipped: list[Session]) -> None:
    for session in shipped:
        tasks = session.meta["pending_tasks"]
        assert tasks, session.id
        last = session.messages[-1].concat_text()
        facts = {f["id"]: f for f in session.meta["planted_facts"]}
        for task in tasks:
            assert task["text"] in _text(session, task["message_index"])
            assert session.messages[task["message_index"]].role == "user"
            assert task["text"] in last  # the closing message lists what is still open
            assert facts[task["fact"]] == {
                "id": task["fact"], "kind": "task", "text": task["text"],
                "message_index": task["message_index"], "stale": False, "superseded_by": None}


def test_decisions_state_the_choice_the_alternative_and_the_reason(
        shipped: list[Session]) -> None:
    for session in shipped:
        decisions = session.meta["decisions"]
        assert decisions, session.id
        assert len({d["topic"] for d in decisions}) == len(decisions) or len(decisions) > 12
        for d in decisions:
            said = session.messages[d["message_index"]].concat_text()
            assert d["choice"] in said and d["alternative"] in said
            assert f"because {d['reason']}." in said
            assert "`" in d["choice"]  # carries a name only this session has


def test_two_values_change_and_their_replacements_come_later(shipped: list[Session]) -> None:
    for session in shipped:
        facts = {f["id"]: f for f in session.meta["planted_facts"]}
        stale = [f for f in facts.values() if f["stale"]]
        assert [f["text"].split()[0] for f in stale] == ["port", "batch"], session.id
        for old in stale:
            new = facts[old["superseded_by"]]
            assert new["kind"] == old["kind"] == "value" and not new["stale"]
            assert old["message_index"] < new["message_index"]
            assert old["text"].rsplit(" ", 1)[-1] in _text(session, new["message_index"])


def test_every_planted_fact_first_appears_where_it_is_planted(shipped: list[Session]) -> None:
    for session in shipped:
        kinds = set()
        texts = [message_text(m) for m in session.messages]
        for fact in session.meta["planted_facts"]:
            kinds.add(fact["kind"])
            assert fact["text"] in texts[fact["message_index"]], (session.id, fact)
            assert not any(fact["text"] in t for t in texts[:fact["message_index"]]), fact
        assert kinds >= {"path", "identifier", "constraint", "value", "error", "task",
                         "decision"}, session.id


def test_discussion_sessions_outgrow_8k_without_their_tool_output(
        shipped: list[Session]) -> None:
    discussions = [s for s in shipped if s.meta["shape"] == "discussion"]
    assert len(discussions) >= 6
    for session in discussions:
        assert prose_tokens(session.messages) > 8192, session.id
