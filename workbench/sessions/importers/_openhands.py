"""OpenHands v0 event streams (a JSON array of ``event_to_dict`` events).

Mapping:

- skipped (UI/state noise): ``source: "environment"`` events, ``observation`` ``null`` /
  ``agent_state_changed`` / ``recall``, ``action`` ``change_agent_state`` / ``recall`` /
  ``system``;
- ``action: "message"`` becomes user or assistant text by ``source`` (``user`` or ``agent``;
  any other source is kept whole as `UnknownContent`, with a warning in ``meta["warnings"]``);
  ``finish`` becomes assistant text only (its ``message``, else ``thought``): the run ends
  there, so its tool call would have no result to pair with;
- any other action issued through a tool call (``run``, ``edit``, ``read``, ``browse``...) or
  known by name becomes a `ToolRequest`: name from ``tool_call_metadata.function_name`` (else
  the action), arguments parsed from the model response's ``tool_calls`` entry with the same
  id (else the event's ``args``), id = ``tool_call_id`` (else ``event_<id>``); the model
  response's ``content`` becomes the assistant text, once per response;
- an observation pairs with its action by ``cause`` (else ``tool_call_id``) and becomes a
  `ToolResponse`, an error when ``exit_code`` != 0, ``success`` is false or the observation is
  ``error``;
- any other event is kept whole as `UnknownContent`; ``usage`` is summed once per model response.
"""

from __future__ import annotations

import json
import warnings
from datetime import UTC, datetime
from pathlib import Path

from workbench._json_types import JSONObject, JSONValue
from workbench.compaction._model import Usage
from workbench.errors import SessionFormatError
from workbench.messages import Message
from workbench.messages._message import Role
from workbench.sessions._registry import Errors, importer
from workbench.sessions._session import Session
from workbench.sessions.importers._agent_common import (
    Problems,
    as_dict,
    read_json,
    sum_usage,
    unknown_message,
    usage_from_openai,
)
from workbench.sessions.importers._readers import loads
from workbench.sessions.importers._records import Duplicates

FORMAT = "openhands"
EXPECTED = "an OpenHands event stream: a JSON array of event objects"
SKIP_ACTIONS = {"change_agent_state", "recall", "system"}
SKIP_OBSERVATIONS = {"null", "agent_state_changed", "recall"}
TOOL_ACTIONS = {"run", "run_ipython", "edit", "read", "write", "browse", "browse_interactive",
                "delegate", "think", "mcp", "call_tool_mcp"}
ERROR_OBSERVATIONS = {"error", "user_rejected"}
MESSAGE_SOURCES: dict[str, Role] = {"user": "user", "agent": "assistant"}
"""Who a message event comes from: ``source`` -> role. Anything else is kept as unknown."""
UNKNOWN_SOURCE = ("{path}:event[{i}]: a message from source {source} (not user or agent) "
                  "kept as unknown content")


def _detect(path: Path, head: str) -> bool:
    text = head.lstrip()
    return (text[:1] == "[" and '"source"' in head
            and ('"action"' in head or '"observation"' in head))


def _created(event: JSONObject, fallback: int) -> int:
    stamp = event.get("timestamp")
    if isinstance(stamp, str):
        try:
            when = datetime.fromisoformat(stamp)
        except ValueError:
            return fallback
        if when.tzinfo is None:
            when = when.replace(tzinfo=UTC)  # OpenHands writes UTC without an offset
        return int(when.timestamp())
    return fallback


def _first_message(meta: JSONObject) -> JSONObject:
    """The message of the recorded model response's first choice ({} when there is none)."""
    choices = as_dict(meta.get("model_response")).get("choices")
    first = choices[0] if isinstance(choices, list) and choices else None
    return as_dict(first.get("message")) if isinstance(first, dict) else {}


def _call_arguments(meta: JSONObject, call_id: JSONValue) -> JSONObject | None:
    calls = _first_message(meta).get("tool_calls")
    for call in calls if isinstance(calls, list) else []:
        if isinstance(call, dict) and call.get("id") == call_id:
            raw = as_dict(call.get("function")).get("arguments")
            if isinstance(raw, dict):
                return raw
            try:
                parsed = loads(raw) if isinstance(raw, str) else None
            except json.JSONDecodeError:
                return None
            return parsed if isinstance(parsed, dict) else None
    return None


def _response_text(meta: JSONObject) -> str:
    content = _first_message(meta).get("content")
    if isinstance(content, list):
        return "\n".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
    return content if isinstance(content, str) else ""


@importer(FORMAT, detect=_detect, description="OpenHands v0 event stream JSON")
def load_openhands(path: Path, errors: Errors = "raise", **select: object) -> list[Session]:
    """Read one OpenHands event stream into a `Session`."""
    events = read_json(path, EXPECTED)
    if not isinstance(events, list):
        kind = "object" if isinstance(events, dict) else type(events).__name__
        raise SessionFormatError(str(path), None, f"the top level is a JSON {kind}, not an array",
                                 expected=EXPECTED)
    problems = Problems(path, errors)
    messages: list[Message] = []
    usages: list[Usage] = []
    seen_responses: set[str] = set()
    by_event: dict[JSONValue, str] = {}  # action event id -> tool request id
    open_calls: set[str] = set()
    unknown: list[str] = []  # warnings: messages kept whole under an unknown source
    created = 0

    def assistant_for(response_id: str | None) -> Message:
        last = messages[-1] if messages else None
        if (last is not None and last.role == "assistant" and response_id is not None
                and (last.metadata.model_extra or {}).get("responseId") == response_id):
            return last
        msg = Message(role="assistant", created=created)
        if response_id is not None:
            msg.metadata = msg.metadata.model_copy(update={"responseId": response_id})
        messages.append(msg)
        return msg

    def tool_results() -> Message:
        last = messages[-1] if messages else None
        if last is not None and last.role == "user" and last.has_tool_response():
            return last
        msg = Message(role="user", created=created)
        messages.append(msg)
        return msg

    seen = Duplicates()
    for i, event in enumerate(events):
        if not isinstance(event, dict) or not ("action" in event or "observation" in event):
            problems.bad(f"event[{i}]", "an event that is neither an action nor an observation",
                         expected='an object with "action" or "observation"')
            continue
        first = seen.first_of(event.get("id"), event, f"event[{i}]")
        if first is not None:
            problems.duplicate(f"event[{i}]", first, event["id"])
            continue
        created = _created(event, created)
        if event.get("source") == "environment":
            continue
        tcm = as_dict(event.get("tool_call_metadata"))
        response = as_dict(tcm.get("model_response"))
        response_id = str(response["id"]) if response.get("id") else None
        if response_id is not None and response_id not in seen_responses:
            seen_responses.add(response_id)
            usages.append(usage_from_openai(response.get("usage"), str(response.get("model", ""))))
            first_of_response = True
        else:
            first_of_response = False
        args = as_dict(event.get("args"))
        if "action" in event:
            action = event["action"] if isinstance(event["action"], str) else repr(event["action"])
            if action in SKIP_ACTIONS:
                continue
            if action == "message":
                source = event.get("source")
                if not isinstance(source, str) or source not in MESSAGE_SOURCES:
                    # Neither the user's nor the agent's: kept whole, never guessed to be either.
                    messages.append(unknown_message(event, created=created))
                    unknown.append(UNKNOWN_SOURCE.format(path=path, i=i, source=repr(source)))
                    continue
                role: Role = MESSAGE_SOURCES[source]
                text = str(args.get("content") or event.get("message") or "")
                messages.append(Message(role=role, created=created).with_text(text))
                continue
            call_id = tcm.get("tool_call_id")
            if action == "finish" or action in TOOL_ACTIONS or call_id:
                msg = assistant_for(response_id)
                said = _response_text(tcm) if first_of_response else ""
                if action == "finish":
                    said = str(event.get("message") or args.get("thought") or said)
                if said:
                    msg.with_text(said)
                if action == "finish":
                    continue
                request_id = str(call_id or f"event_{event.get('id', i)}")
                name = str(tcm.get("function_name") or action)
                arguments = _call_arguments(tcm, call_id)
                if arguments is None:
                    arguments = {k: v for k, v in args.items() if k != "thought"}
                msg.with_tool_request(request_id, name, arguments)
                by_event[event.get("id")] = request_id
                open_calls.add(request_id)
                continue
            messages.append(unknown_message(event, role="assistant", created=created))
            continue
        observation = event["observation"]
        if not isinstance(observation, str):
            observation = repr(observation)
        if observation in SKIP_OBSERVATIONS:
            continue
        answered: str | None = by_event.get(event.get("cause"))
        if answered is None and isinstance(pending := tcm.get("tool_call_id"), str) \
                and pending in open_calls:
            answered = pending
        if answered is None or answered not in open_calls:
            messages.append(unknown_message(event, created=created))
            continue
        open_calls.discard(answered)
        tool_results().with_tool_response(answered, _observation_text(event),
                                          is_error=_observation_is_error(event))

    meta: JSONObject = {}
    models = sorted({u.model for u in usages if u.model})
    if models:
        meta["models"] = list(models)
    usage = sum_usage(usages)
    if usage is not None:
        meta["usage"] = usage
    problems.into(meta)
    if unknown:
        warned = meta["warnings"]
        if isinstance(warned, list):  # Problems.into wrote a list
            warned += unknown
        meta["unknown_sources"] = len(unknown)
        warnings.warn(f"{path}: {len(unknown)} message(s) from an unknown source kept as "
                      "unknown content; see session.meta['warnings']", stacklevel=2)
    return [Session(id=path.stem, format=FORMAT, path=str(path), messages=messages, meta=meta)]


def _observation_text(event: JSONObject) -> str:
    content = event.get("content")
    text = content if isinstance(content, str) else json.dumps(content, ensure_ascii=False)
    extras = as_dict(event.get("extras"))
    if not text and isinstance(shown := extras.get("formatted_output_and_error"), str):
        text = shown
    return text or str(event.get("message") or "")


def _observation_is_error(event: JSONObject) -> bool:
    if str(event.get("observation")) in ERROR_OBSERVATIONS or event.get("success") is False:
        return True
    extras = as_dict(event.get("extras"))
    meta = as_dict(extras.get("metadata"))
    code = meta.get("exit_code")
    return isinstance(code, int) and code != 0

