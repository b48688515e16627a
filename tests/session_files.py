"""Small sessions written as Goose JSON files, for tests that run the CLI on a folder."""

from __future__ import annotations

from pathlib import Path

from workbench.messages import Message
from workbench.sessions import Session


def write_tool_sessions(folder: Path, count: int, turns: int = 3, padding: int = 100) -> None:
    """``s0.json``... ``s<count-1>.json``: a request, `turns` tool calls whose failing output
    is padded with `padding` words (room for the removal ladder), and a closing reply."""
    for i in range(count):
        path = folder / f"s{i}.json"
        messages = [Message.user(f"fix the crash in app{i}.py and keep port 80{i}0")]
        for j in range(turns):
            messages.append(Message.assistant("checking").with_tool_request(
                f"t{j}", "shell", {"command": f"pytest tests/test_app{i}.py"}))
            messages.append(Message.user().with_tool_response(
                f"t{j}", f"FAILED tests/test_app{i}.py::test_{j} ValueError " + "y " * padding))
        messages.append(Message.assistant("fixed"))
        Session(f"s{i}", "goose-json", str(path), messages).write_goose_json(path)
