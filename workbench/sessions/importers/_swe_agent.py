"""SWE-agent ``.traj`` trajectories (v0 text actions and v1 function calling).

The conversation is read from ``history`` (what the model was sent); ``trajectory`` is used only
for the observation of a final action that ``history`` does not hold (usually ``submit``).

Mapping:

- the first ``system`` entry becomes ``meta["system_prompt"]`` (later ones stay as user text);
- v0 assistant entries with an ``action`` become a text item (the ``thought``) plus a
  `ToolRequest` named after the command's first word (``open``, ``edit``, ``python``...) with
  arguments ``{"command": <full action>}`` and a deterministic id ``call_<n>``; the next user
  entry is its `ToolResponse`;
- v1 ``tool_calls`` become `ToolRequest` items with their parsed JSON arguments, and ``tool``
  entries (``tool_call_ids``) their responses; an id the recording reuses (replays do) gets a
  ``#<n>`` suffix so that Goose's pairing by id stays one to one;
- observations are flagged ``isError`` by the heuristic the recordings call for (a Python
  traceback, ``SyntaxError``, a rejected edit, ``command not found``, ``EXECUTION TIMED OUT``);
- the demonstration (``is_demo``) is kept as the user message the agent saw, marked with
  ``metadata.isDemo = true`` and listed in ``meta["demonstration_messages"]`` so callers can
  drop it;
- an entry with an unknown role is kept whole as `UnknownContent`, and so is every content
  part that is not text (an image, a newer part type): it joins the entry's message, and
  ``meta["unknown_items"]`` and ``meta["warnings"]`` count and name them.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import TypeGuard

from workbench._json_types import JSONObject, JSONValue
from workbench.compaction._model import Usage
from workbench.messages import Message, UnknownContent
from workbench.sessions._registry import Errors, importer
from workbench.sessions._session import Session
from workbench.sessions.importers._agent_common import (
    Problems,
    as_dict,
    read_json,
    require_key,
    token_count,
    unknown_message,
)
from workbench.sessions.importers._readers import loads

FORMAT = "swe-agent"
EXPECTED = 'a SWE-agent .traj JSON object with "history" and "trajectory"'
KNOWN_ROLES = ("system", "user", "assistant", "tool")
UNKNOWN_ITEMS = ("{path}:{where}: {n} content item(s) that are not text ({kinds}) kept as "
                 "unknown content")
ERROR_MARKERS = re.compile(
    r"Traceback \(most recent call last\)|SyntaxError|"
    r"Your proposed edit has introduced new syntax error|command not found|EXECUTION TIMED OUT")


def _detect(path: Path, head: str) -> bool:
    if path.name.endswith(".traj"):
        return True
    start = head.lstrip()[:1]
    return start == "{" and '"trajectory"' in head and '"environment"' in head


def observation_is_error(text: str) -> bool:
    """The heuristic error flag for a SWE-agent observation."""
    return bool(ERROR_MARKERS.search(text))


def _is_text_part(part: JSONValue) -> TypeGuard[JSONObject]:
    return isinstance(part, dict) and part.get("type", "text") == "text" and "text" in part


def _text_of(content: JSONValue) -> str:
    # Newer SWE-agent versions store content as a list of {type: text, text} parts.
    if isinstance(content, list):
        return "\n".join(str(p["text"]) for p in content if _is_text_part(p))
    return "" if content is None else str(content)


def _unknown_parts(content: JSONValue) -> list[UnknownContent]:
    """The parts of a content list that are not text (images, anything newer), kept whole."""
    if not isinstance(content, list):
        return []
    return [UnknownContent(raw=p if isinstance(p, dict) else {"value": p})
            for p in content if not _is_text_part(p)]


def _size(messages: list[Message]) -> tuple[int, int]:
    return len(messages), len(messages[-1].content) if messages else 0


@importer(FORMAT, detect=_detect, description="SWE-agent .traj (v0 text actions, v1 tool calls)")
def load_swe_agent(path: Path, errors: Errors = "raise", **select: object) -> list[Session]:
    """Read one SWE-agent trajectory into a `Session`."""
    data = read_json(path, EXPECTED)
    history = require_key(path, data, "history", list, EXPECTED)
    trajectory = require_key(path, data, "trajectory", list, EXPECTED)
    problems = Problems(path, errors)
    messages: list[Message] = []
    demos: list[JSONValue] = []
    meta: JSONObject = {"demonstration_messages": demos}
    pending: list[tuple[str, str]] = []  # (call id, action text) awaiting an observation
    latest: dict[str, str] = {}  # recorded call id -> the unique id given to its latest use
    calls = 0
    version = "v0"
    unknown_items: list[str] = []

    def respond(text: str, ids: list[str]) -> None:
        is_error = observation_is_error(text)
        last = messages[-1] if messages else None
        msg = last if last is not None and last.role == "user" and last.has_tool_response() \
            and not last.concat_text() else Message(role="user", created=0)
        for n, call_id in enumerate(ids):
            # One observation answers every id it lists; the text is kept once.
            msg.with_tool_response(call_id, text if n == 0 else "", is_error=is_error)
        if msg is not last:
            messages.append(msg)

    for i, entry in enumerate(history):
        where = f"history[{i}]"
        if not isinstance(entry, dict) or "role" not in entry:
            problems.bad(where, "a history entry without a role",
                         expected="an object with role and content")
            continue
        role, text = entry["role"], _text_of(entry.get("content"))
        before = _size(messages)
        if role == "system" and "system_prompt" not in meta:
            meta["system_prompt"] = text
        elif role in ("system", "user") and entry.get("is_demo"):
            msg = Message.user(text, created=0)
            msg.metadata = msg.metadata.model_copy(update={"isDemo": True})
            demos.append(len(messages))
            messages.append(msg)
        elif role in ("system", "user"):
            if pending and role == "user":
                respond(text, [pending[0][0]])
                pending.clear()
            else:
                msg = Message.user(text, created=0)
                if role == "system":
                    msg.metadata = msg.metadata.model_copy(update={"recordedRole": "system"})
                messages.append(msg)
        elif role == "assistant":
            msg = Message(role="assistant", created=0)
            thought = entry.get("thought")
            shown = thought if isinstance(thought, str) and "action" in entry else text
            if shown.strip():
                msg.with_text(shown.strip())
            tool_calls = entry.get("tool_calls")
            action = entry.get("action")
            if isinstance(tool_calls, list) and tool_calls:
                version = "v1"
                for call in tool_calls:
                    calls += 1
                    _add_function_call(msg, call, calls, latest)
            elif isinstance(action, str) and action.strip():
                calls += 1
                call_id = f"call_{calls}"
                name = action.split(maxsplit=1)[0]
                msg.with_tool_request(call_id, name, {"command": action})
                pending[:] = [(call_id, action)]
            messages.append(msg)
        elif role == "tool":
            version = "v1"
            ids = entry.get("tool_call_ids") or ([entry["tool_call_id"]]
                                                 if entry.get("tool_call_id") else [])
            if not ids:
                problems.bad(where, "a tool entry without tool_call_ids",
                             expected="tool_call_ids naming the assistant's tool call")
                continue
            respond(text, [latest.get(str(x), str(x)) for x in ids])
        else:
            messages.append(unknown_message(entry))
        extras = _unknown_parts(entry.get("content")) if role in KNOWN_ROLES else []
        if extras:
            # Kept with the message the entry became (a system prompt gets one of its own).
            if _size(messages) == before:
                messages.append(Message(role="user", content=[], created=0))
            messages[-1].content.extend(extras)
            kinds = ", ".join(sorted({str(x.raw.get("type", "value")) for x in extras}))
            unknown_items.append(UNKNOWN_ITEMS.format(path=path, where=where, n=len(extras),
                                                      kinds=kinds))

    if pending:
        _answer_from_trajectory(pending, trajectory, respond)

    doc = as_dict(data)  # require_key refused anything but an object
    info = as_dict(doc.get("info"))
    meta.update(_info_meta(info))
    meta["format_version"] = version
    meta["environment"] = doc.get("environment")
    if not meta["demonstration_messages"]:
        meta.pop("demonstration_messages")
    problems.into(meta)
    if unknown_items:
        warned = meta["warnings"]
        if isinstance(warned, list):  # Problems.into wrote a list
            warned += unknown_items
        meta["unknown_items"] = sum(len(m.unknown_items()) for m in messages)
    return [Session(id=path.name.removesuffix(".traj"), format=FORMAT, path=str(path),
                    messages=messages, meta=meta)]


def _add_function_call(msg: Message, call: JSONValue, n: int, latest: dict[str, str]) -> None:
    if not isinstance(call, dict):
        msg.with_tool_request(f"call_{n}", "unknown", error=f"unreadable tool call: {call!r}")
        return
    recorded = str(call.get("id") or f"call_{n}")
    # Replayed trajectories reuse call ids; Goose pairs by id, so a reused id gets a suffix.
    call_id = recorded if recorded not in latest else f"{recorded}#{n}"
    latest[recorded] = call_id
    fn = as_dict(call.get("function"))
    name = str(fn.get("name") or "unknown")
    raw = fn.get("arguments")
    if isinstance(raw, dict) or raw is None:
        msg.with_tool_request(call_id, name, raw or {})
        return
    try:
        if not isinstance(raw, str):  # what json.loads says of a value that is not text
            raise TypeError("the JSON object must be str, bytes or bytearray, "
                            f"not {type(raw).__name__}")
        args = loads(raw)
    except (TypeError, json.JSONDecodeError) as exc:
        msg.with_tool_request(call_id, name, error=f"arguments are not JSON ({exc}): {raw}")
        return
    msg.with_tool_request(call_id, name, args)


def _answer_from_trajectory(pending: list[tuple[str, str]], trajectory: list[JSONValue],
                            respond: Callable[[str, list[str]], None]) -> None:
    # The final action's observation (e.g. the submitted diff) is only in `trajectory`.
    call_id, action = pending[0]
    for step in reversed(trajectory):
        if isinstance(step, dict) and str(step.get("action", "")).strip() == action.strip():
            respond(str(step.get("observation") or ""), [call_id])
            pending.clear()
            return


def _info_meta(info: JSONObject) -> JSONObject:
    out: JSONObject = {}
    for key in ("exit_status", "submission"):
        if key in info:
            out[key] = info[key]
    stats = info.get("model_stats")
    if isinstance(stats, dict):
        out["model_stats"] = stats
        out["usage"] = Usage(
            input_tokens=token_count(stats.get("tokens_sent")),
            output_tokens=token_count(stats.get("tokens_received")),
            cost=cost if isinstance(cost := stats.get("instance_cost"), int | float) else None,
            extra={k: stats[k] for k in ("api_calls", "total_cost") if k in stats},
        ).to_dict()
    return out
