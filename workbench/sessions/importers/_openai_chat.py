"""Plain OpenAI chat-completions messages as Goose messages.

Accepts a JSON list of ``{role, content, tool_calls?, tool_call_id?}``, the same under
``{"messages": [...]}``, or one message per line (JSONL). ``system``/``developer`` messages go to
``meta["system_prompt"]``; ``tool`` messages become user messages holding a `ToolResponse`
(consecutive ones share a message, as Goose groups parallel results); content may be a string or
a list of parts.
"""

from __future__ import annotations

import json
from pathlib import Path

from workbench._json_types import JSONObject, JSONValue
from workbench.errors import ConfigError, SessionFormatError
from workbench.messages import (
    Content,
    ImageContent,
    Message,
    TextContent,
    ToolCall,
    ToolCallResult,
    ToolRequest,
    UnknownContent,
)
from workbench.sessions._registry import importer
from workbench.sessions._session import Session
from workbench.sessions.importers._goose_common import looks_like_goose_message
from workbench.sessions.importers._readers import (
    BOM,
    Problems,
    first_element,
    head_json_lines,
    iter_json_lines,
    load_json_document,
    loads,
    text_blocks,
    tool_response,
)

FORMAT = "openai-chat"
ROLES = frozenset({"system", "developer", "user", "assistant", "tool", "function"})
EXPECTED_MESSAGE = "an OpenAI chat message {role, content, tool_calls?, tool_call_id?}"
EXPECTED_DOC = "a JSON list of OpenAI chat messages, {\"messages\": [...]}, or one message per line"
# Agent trajectories also hold chat messages; their own importers claim them.
_FOREIGN = ('"trajectory_format"', '"trajectory"', '"instance_id"', '"mini_version"',
            '"exit_status"', '"model_stats"')
_FOREIGN_SUFFIXES = (".traj", ".traj.json")


def _looks_openai(d: JSONValue) -> bool:
    return (isinstance(d, dict) and d.get("role") in ROLES and not looks_like_goose_message(d)
            and ("content" in d or "tool_calls" in d) and "source" not in d)


def _detect(path: Path, head: str) -> bool:
    text = head.lstrip()
    if path.name.endswith(_FOREIGN_SUFFIXES) or any(k in head for k in _FOREIGN):
        return False
    if text.startswith("["):
        return _looks_openai(first_element(text))
    lines = head_json_lines(head, limit=1)
    if lines:
        return _looks_openai(lines[0]) or (
            isinstance(lines[0], dict) and isinstance(lines[0].get("messages"), list)
            and bool(lines[0]["messages"]) and _looks_openai(lines[0]["messages"][0]))
    return text.startswith("{") and _looks_openai(first_element(head, "messages"))


def _parts(content: JSONValue) -> list[Content]:
    if content is None:
        return []
    if isinstance(content, str):
        return [TextContent(text=content)]
    if not isinstance(content, list):
        return [UnknownContent(raw={"value": content})]
    items: list[Content] = []
    for part in content:
        if isinstance(part, str):
            items.append(TextContent(text=part))
        elif isinstance(part, dict) and part.get("type") in ("text", "input_text", "output_text") \
                and isinstance(part.get("text"), str):
            items.append(TextContent(text=part["text"]))
        elif isinstance(part, dict) and part.get("type") == "image_url":
            items.append(_image(part))
        else:
            items.append(UnknownContent(raw=part if isinstance(part, dict) else {"value": part}))
    return items


def _image(part: JSONObject) -> Content:
    url = part.get("image_url")
    url = url.get("url") if isinstance(url, dict) else url
    if isinstance(url, str) and url.startswith("data:") and ";base64," in url:
        mime, data = url[5:].split(";base64,", 1)
        return ImageContent(data=data, mime_type=mime)
    return UnknownContent(raw=part)  # a remote image URL has no Goose equivalent


def _tool_call(call: JSONValue) -> Content:
    fn = call.get("function") if isinstance(call, dict) else None
    if not isinstance(call, dict) or not isinstance(fn, dict):
        return UnknownContent(raw=call if isinstance(call, dict) else {"value": call})
    raw = fn.get("arguments")
    try:
        args = loads(raw) if isinstance(raw, str) and raw.strip() else raw
    except json.JSONDecodeError:
        args = raw
    return ToolRequest(id=str(call.get("id", "")), tool_call=ToolCallResult(
        status="success", value=ToolCall(name=str(fn.get("name", "")), arguments=args)))


class _Builder:
    def __init__(self, problems: Problems) -> None:
        self.problems = problems
        self.messages: list[Message] = []
        self.system: list[str] = []
        self._results: Message | None = None  # the open user message of tool results

    def add(self, where: int | str, raw: JSONValue) -> None:
        if not isinstance(raw, dict) or raw.get("role") not in ROLES:
            role = raw.get("role") if isinstance(raw, dict) else None
            found = f"role {role!r}" if isinstance(raw, dict) else f"a JSON {type(raw).__name__}"
            self.problems.bad(where, f"message has {found}", expected=EXPECTED_MESSAGE)
            return
        role = raw["role"]
        if role in ("system", "developer"):
            text = "\n".join(c.text for c in _parts(raw.get("content"))
                             if isinstance(c, TextContent))
            if not self.messages:
                self.system.append(text)
                return
            self._new("user", [TextContent(text=text)], {"instructionRole": role})
        elif role in ("tool", "function"):
            call_id = raw.get("tool_call_id") or raw.get("name") or ""
            item = tool_response(str(call_id), text_blocks(raw.get("content")))
            if self._results is not None:
                self._results.content.append(item)
            else:
                self._new("user", [item])
                self._results = self.messages[-1]
        elif role == "assistant":
            items = _parts(raw.get("content"))
            calls = raw.get("tool_calls") or []
            items += [_tool_call(c) for c in (calls if isinstance(calls, list) else [calls])]
            if isinstance(legacy := raw.get("function_call"), dict):
                items.append(_tool_call({"id": legacy.get("name", ""), "function": legacy}))
            self._new("assistant", items)
        else:
            self._new("user", _parts(raw.get("content")))

    def _new(self, role: str, items: list[Content], flags: JSONObject | None = None) -> None:
        msg = Message(role=role, content=items)  # type: ignore[arg-type]
        if flags:
            msg.metadata = msg.metadata.model_validate(flags)
        self.messages.append(msg)
        self._results = None


@importer(FORMAT, detect=_detect, description="OpenAI chat messages (JSON list or JSONL)")
def load_openai_chat(path: Path, errors: str = "raise", **select: object) -> list[Session]:
    """Load OpenAI chat messages from a JSON document or a JSONL file (one session).

    Raises:
        SessionFormatError: invalid JSON, or a message without a known role (named by line
            or list index).
        ConfigError: any selection keyword.
    """
    if select:
        raise ConfigError(f"openai-chat files hold one session; no selection {sorted(select)}")
    problems = Problems(path, errors)
    builder = _Builder(problems)
    extra: JSONObject = {}
    if _is_document(path):
        data = load_json_document(path, EXPECTED_DOC)
        if isinstance(data, dict):
            items = data.get("messages")
            extra = {k: v for k, v in data.items() if k != "messages"}
        else:
            items = data
        if not isinstance(items, list):
            raise SessionFormatError(str(path), None, "no messages list", expected=EXPECTED_DOC)
        for i, raw in enumerate(items):
            builder.add(f"messages[{i}]", raw)
    else:
        for number, raw in iter_json_lines(path, problems, EXPECTED_MESSAGE):
            builder.add(number, raw)
    meta: JSONObject = {}
    if builder.system:
        meta["system_prompt"] = "\n\n".join(builder.system)
    if isinstance(extra.get("model"), str):
        meta["models"] = [extra["model"]]
    if extra:
        meta["document"] = {k: v for k, v in extra.items() if k != "model"}
    problems.finish(meta)
    return [Session(id=path.stem, format=FORMAT, path=str(path), messages=builder.messages,
                    meta=meta)]


def _is_document(path: Path) -> bool:
    # A JSON document (one value over several lines) rather than JSONL (one message per line).
    with open(path, "rb") as fh:
        # A peek: decoding errors are reported when the file is read for real.
        first = fh.readline().removeprefix(BOM).decode("utf-8", errors="replace")
    try:
        value = loads(first)
    except json.JSONDecodeError:
        return first.lstrip().startswith(("[", "{"))
    return isinstance(value, list) or (isinstance(value, dict) and "messages" in value)
