"""Next-action agreement: the recorded next action at a compaction boundary, and matching."""

from __future__ import annotations

from pathlib import Path

import pytest

from workbench.messages import Message
from workbench.probes import ToolAction, actions_match, next_action_case, parse_action

TRANSCRIPTS = ("claude-code", "test", "fixtures", "transcripts")


def test_the_recorded_next_action_of_a_real_claude_code_session(shared_sessions: Path) -> None:
    from workbench.sessions import load_session
    from workbench.strategies import reference_summary

    session = load_session(shared_sessions.joinpath(*TRANSCRIPTS,
                                                    "ae4a77f8-aedd-4bc1-888f-c94edc91af04.jsonl"))
    boundary = int(reference_summary(session)["index"])  # type: ignore[index]
    case = next_action_case(session, boundary)
    assert case is not None and case.boundary == boundary == 288
    assert case.recorded == ToolAction("Bash", "command", "git status")
    # The user's "continue implementation" (and the /compact command lines) came before it,
    # the recorded summary did not.
    texts = [m.concat_text() for m in case.lead_in]
    assert texts[-1] == "continue implementation"
    assert not any(t.startswith("This session is being continued") for t in texts)
    assert {"Bash", "Read", "Edit"} <= set(case.tools)


def test_no_boundary_means_no_next_action() -> None:
    from tests.probes._sessions import manifest_session

    assert next_action_case(manifest_session(), None) is None
    assert next_action_case(manifest_session(), 14) is None  # nothing after the end


@pytest.mark.parametrize(("reply", "action"), [
    ("TOOL Edit lib/app.ex", ToolAction("Edit", "text", "lib/app.ex")),
    ("I will look first.\nTOOL: `Bash` git status --short", ToolAction("Bash", "text",
                                                                        "git status --short")),
    ("NONE", ToolAction(None)),
    ("Let me think about it.", ToolAction(None)),
])
def test_a_text_reply_names_its_action_on_a_tool_line(reply: str, action: ToolAction) -> None:
    assert parse_action(reply) == action


def test_a_real_tool_call_in_the_reply_wins() -> None:
    reply = Message.assistant("TOOL Bash ls").with_tool_request(
        "x", "Read", {"file_path": "/repo/lib/app.ex"})
    assert parse_action(reply) == ToolAction("Read", "path", "/repo/lib/app.ex")


@pytest.mark.parametrize(("given", "reference", "match"), [
    (ToolAction("edit", "text", "lib/app.ex"), ToolAction("Edit", "path", "/home/u/p/lib/app.ex"),
     True),
    (ToolAction("Edit", "text", "lib/other.ex"), ToolAction("Edit", "path", "/p/lib/app.ex"),
     False),
    (ToolAction("Read", "text", "lib/app.ex"), ToolAction("Edit", "path", "/p/lib/app.ex"),
     False),
    (ToolAction("Bash", "text", "git status --short"), ToolAction("Bash", "command",
                                                                  "git status"), True),
    (ToolAction("Bash", "text", "git diff"), ToolAction("Bash", "command", "git status"), False),
    (ToolAction(None), ToolAction(None), True),
    (ToolAction(None), ToolAction("Bash", "command", "ls"), False),
    (ToolAction("Bash", "text", "ls"), ToolAction("Bash", "text", "ls -la"), True),
])
def test_actions_agree_on_tool_and_main_argument(given: ToolAction, reference: ToolAction,
                                                 match: bool) -> None:
    assert actions_match(given, reference) is match
