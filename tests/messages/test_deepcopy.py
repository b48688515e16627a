"""The message models' own deep copy: what pydantic's ``model_copy(deep=True)`` gives (equal,
the same fields set, extras and private state), sharing no mutable part with the original,
and keeping two references to one object inside it as one."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from workbench.messages import Message, messages_from_goose

FIXTURE = Path(__file__).parent / "fixtures" / "goose_all_content_types.json"


def _mutable_parts(value: Any, out: dict[int, Any]) -> dict[int, Any]:
    """Every list, dict and model reachable from `value`, by id."""
    if isinstance(value, BaseModel):
        out[id(value)] = value
        for part in (value.__dict__, value.__pydantic_extra__, value.__pydantic_private__):
            if part:
                _mutable_parts(part, out)
    elif isinstance(value, dict):
        out[id(value)] = value
        for item in value.values():
            _mutable_parts(item, out)
    elif isinstance(value, list):
        out[id(value)] = value
        for item in value:
            _mutable_parts(item, out)
    return out


def _state(value: Any) -> Any:
    """What pydantic keeps per model, recursively: class, fields, fields set, extra, private."""
    if isinstance(value, BaseModel):
        private = value.__pydantic_private__
        return (type(value), {k: _state(v) for k, v in value.__dict__.items()},
                sorted(value.__pydantic_fields_set__), _state(value.__pydantic_extra__),
                _state(private))
    if isinstance(value, dict):
        return {k: _state(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_state(v) for v in value]
    return value


def test_every_content_type_copies_whole_and_shares_nothing() -> None:
    messages = messages_from_goose(json.loads(FIXTURE.read_text()))
    for message in messages:
        message.extra["unknown"] = {"kept": [1, {"deep": True}]}
        for dup in (message.model_copy(deep=True), copy.deepcopy(message)):
            assert dup == message and dup.to_goose() == message.to_goose()
            assert _state(dup) == _state(message)
            shared = _mutable_parts(dup, {}).keys() & _mutable_parts(message, {}).keys()
            assert not shared, message.id


def test_a_copy_can_be_edited_without_touching_the_original() -> None:
    original = Message.user("first").with_tool_request("t1", "shell", {"argv": ["ls", "-l"]})
    dup = original.model_copy(deep=True)
    dup.content[0].text = "changed"
    dup.content[1].tool_call.value.arguments["argv"].append("-a")
    dup.metadata.agent_visible = False
    assert original.content[0].text == "first"
    assert original.content[1].tool_call.value.arguments == {"argv": ["ls", "-l"]}
    assert original.metadata.agent_visible is True


def test_two_references_to_one_object_stay_one_reference() -> None:
    shared = {"same": [1, 2]}
    message = Message.user("x")
    message.extra.update(a=shared, b=shared)
    dup = message.model_copy(deep=True)
    assert dup.extra["a"] is dup.extra["b"] and dup.extra["a"] is not shared
    memo: dict[int, Any] = {}
    pair = copy.deepcopy([message, message], memo)
    assert pair[0] is pair[1]  # the models themselves go through deepcopy's memo too


def test_an_object_outside_the_json_shapes_is_deep_copied_as_copy_would() -> None:
    message = Message.user("x")
    message.extra["when"] = {1, 2}  # a set: neither an atom nor a list or dict
    dup = message.model_copy(deep=True)
    assert dup.extra["when"] == {1, 2} and dup.extra["when"] is not message.extra["when"]
