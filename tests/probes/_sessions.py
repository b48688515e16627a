"""Sessions built in the tests: a small one with every manifest key the generator writes
(planted facts with a replaced value, exact errors, files changed, pending tasks, decisions),
so the probes are tested without waiting for a generated corpus."""

from __future__ import annotations

from typing import Any

from workbench.messages import Message
from workbench.sessions import Session

FIRST_REQUEST = ("Fix the double count in `settle_totals` in src/shop/totals.py. The dev server "
                 "must use port 59767.")
LAST_REQUEST = "Good. Please also delete the stale fixture tests/fixtures/old.json now."
PENDING = "add a regression test for overlapping batches"
ERROR = "KeyError: 'order_17'"


def _messages() -> list[Message]:
    return [
        Message.user(FIRST_REQUEST),
        Message.assistant("Reading the module first.").with_tool_request(
            "t1", "read_file", {"path": "src/shop/totals.py"}),
        Message.user().with_tool_response("t1", "def settle_totals(batches):\n    return sum(b)"),
        Message.assistant("Decided: track keys in a `seen_keys` set, because batches "
                          "overlap.").with_tool_request(
            "t2", "edit_file", {"path": "src/shop/totals.py", "old_str": "a", "new_str": "b"}),
        Message.user().with_tool_response("t2", "edited"),
        Message.assistant().with_tool_request(
            "t3", "shell", {"command": "python -m pytest -q tests/test_totals.py"}),
        Message.user().with_tool_response(
            "t3", f"E       {ERROR}\nFAILED tests/test_totals.py::test_settle - {ERROR}",
            is_error=True),
        Message.user("Change of plan: the dev server must now use port 50354 instead of 59767."),
        Message.assistant().with_tool_request(
            "t4", "write_file", {"path": "config/dev.toml", "content": "port = 50354\n"}),
        Message.user().with_tool_response("t4", "written"),
        Message.assistant(f"Next I still need to {PENDING}."),
        Message.user(LAST_REQUEST),
        Message.assistant().with_tool_request(
            "t5", "shell", {"command": "rm tests/fixtures/old.json"}),
        Message.user().with_tool_response("t5", ""),
    ]


def manifest_meta() -> dict[str, Any]:
    """The manifest keys of `manifest_session`, as the generator writes them."""
    return {
        "planted_facts": [
            {"id": "f01", "kind": "value", "text": "port 59767", "message_index": 0,
             "stale": True, "superseded_by": "f03"},
            {"id": "f02", "kind": "identifier", "text": "settle_totals", "message_index": 0,
             "stale": False, "superseded_by": None},
            {"id": "f03", "kind": "value", "text": "port 50354", "message_index": 7,
             "stale": False, "superseded_by": None},
            {"id": "f04", "kind": "error", "text": ERROR, "message_index": 6,
             "stale": False, "superseded_by": None},
        ],
        "errors": [{"id": "e1", "text": ERROR, "message_index": 6}],
        "files_changed": [
            {"path": "src/shop/totals.py", "change": "edited",
             "how": "track seen keys in a set so overlapping batches count once",
             "message_index": 3},
            {"path": "config/dev.toml", "change": "created",
             "how": "set the dev server port to 50354", "message_index": 8},
            {"path": "tests/fixtures/old.json", "change": "deleted",
             "how": "removed the stale fixture", "message_index": 12},
        ],
        "pending_tasks": [{"id": "t1", "text": PENDING, "message_index": 10}],
        "decisions": [{"id": "d1", "topic": "how to stop double counting",
                       "choice": "track keys in a seen_keys set", "reason": "batches overlap",
                       "message_index": 3}],
    }


def manifest_session(session_id: str = "shop-1", **meta: Any) -> Session:
    """The small session with its manifest (`meta` overrides or removes keys: None drops)."""
    full = {**manifest_meta(), **meta}
    return Session(id=session_id, format="goose-json", path=f"{session_id}.json",
                   messages=_messages(), meta={k: v for k, v in full.items() if v is not None})
