"""A small valid recording for the hardening tests: one tool call, its result, a reply."""

from __future__ import annotations

from pathlib import Path

from workbench.messages import Message
from workbench.sessions import Session


def write_session(folder: Path, sid: str, name: str | None = None) -> Path:
    """Write a goose-json session `sid` (file `name`, default ``<sid>.json``) into `folder`."""
    path = folder / (name or f"{sid}.json")
    messages = [Message.user(f"fix the bug in app.py ({sid})"),
                Message.assistant("looking").with_tool_request("t0", "shell",
                                                               {"command": "cat app.py"}),
                Message.user().with_tool_response("t0", "print(1)"),
                Message.assistant("fixed it")]
    Session(sid, "goose-json", str(path), messages).write_goose_json(path)
    return path
