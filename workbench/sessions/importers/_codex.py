"""Codex CLI rollouts (``~/.codex/sessions/YYYY/MM/DD/rollout-*.jsonl``) as Goose messages.

Each line is ``{timestamp, type, payload}``. ``response_item`` payloads are OpenAI Responses-API
items and make the conversation: consecutive assistant-side items (reasoning, message, tool
calls) form one assistant message, consecutive tool outputs one user message. ``event_msg``
payloads are UI events that repeat the items; only ``token_count`` is read (recorded usage).
A ``compacted`` line is a compaction point whose ``message`` is the reference summary.
Leading ``developer``/``system`` messages go to ``meta["system_prompt"]``; later ones stay in
the conversation as user messages flagged ``metadata.instructionRole``.
"""

from __future__ import annotations

import json
import warnings
from pathlib import Path

from workbench._json_types import JSONObject, JSONValue
from workbench.compaction._model import Usage
from workbench.errors import ConfigError
from workbench.messages import (
    Content,
    Message,
    MessageMetadata,
    RedactedThinkingContent,
    TextContent,
    ThinkingContent,
    ToolCall,
    ToolCallResult,
    ToolRequest,
    UnknownContent,
)
from workbench.sessions._registry import importer
from workbench.sessions._session import Session
from workbench.sessions.importers._agent_common import token_count
from workbench.sessions.importers._readers import (
    Problems,
    first_line_dict,
    iter_json_lines,
    loads,
    parse_time,
    text_blocks,
    tool_response,
)

FORMAT = "codex"
EXPECTED_LINE = "one Codex rollout line {timestamp, type, payload} per line"
LINE_TYPES = frozenset({"session_meta", "response_item", "event_msg", "turn_context", "compacted"})
CALL_TYPES = frozenset({"function_call", "local_shell_call", "custom_tool_call"})
OUTPUT_TYPES = frozenset({"function_call_output", "local_shell_call_output",
                          "custom_tool_call_output"})
INSTRUCTION_ROLES = frozenset({"developer", "system"})
UNKNOWN_ROLE = ("{where}: a message with role {role} (not user, assistant, developer or "
                "system) kept as unknown content")


def _detect(path: Path, head: str) -> bool:
    first = first_line_dict(head)
    if first is not None:
        return first.get("type") in LINE_TYPES and isinstance(first.get("payload"), dict)
    # A session_meta line longer than the head (long instructions): look at its opening.
    start = head.lstrip()[:200]
    return start.startswith("{") and '"payload"' in start and '"session_meta"' in start


def _message_text(payload: JSONObject) -> tuple[list[Content], list[str]]:
    items: list[Content] = []
    texts: list[str] = []
    content = payload.get("content")
    if isinstance(content, str):
        content = [{"type": "input_text", "text": content}]
    for part in content if isinstance(content, list) else []:
        if isinstance(part, dict) and part.get("type") in ("input_text", "output_text", "text") \
                and isinstance(text := part.get("text"), str):
            items.append(TextContent(text=text))
            texts.append(text)
        else:
            items.append(UnknownContent(raw=part if isinstance(part, dict) else {"value": part}))
    return items, texts


def _call(payload: JSONObject) -> ToolRequest:
    kind = payload["type"]
    if kind == "function_call":
        raw = payload.get("arguments")
        try:
            args = loads(raw) if isinstance(raw, str) else raw
        except json.JSONDecodeError:
            args = raw  # kept as {"value": raw}: the model sent arguments that are not JSON
        name = str(payload.get("name", ""))
    elif kind == "local_shell_call":
        args, name = payload.get("action"), "local_shell"
    else:
        args, name = {"input": payload.get("input")}, str(payload.get("name", ""))
    call_id = payload.get("call_id") or payload.get("id") or ""
    return ToolRequest(id=str(call_id), tool_call=ToolCallResult(
        status="success", value=ToolCall(name=name, arguments=args)))


def _exit_code_failed(text: str) -> bool:
    # Shell outputs carry their exit code: as JSON {"output", "metadata": {"exit_code"}} in
    # older rollouts, as a leading "Exit code: N" line in newer ones.
    head = text[:64]
    if head.startswith("Exit code:"):
        code = head[len("Exit code:"):].split("\n", 1)[0].strip()
        return code not in ("0", "")
    if head.startswith("{") and '"exit_code"' in text[-400:]:
        try:
            meta = loads(text).get("metadata", {})
        except (json.JSONDecodeError, AttributeError):
            return False
        return isinstance(meta, dict) and meta.get("exit_code") not in (0, None)
    return False


def _output(payload: JSONObject) -> Content:
    out = payload.get("output")
    is_error = False
    if isinstance(out, dict):
        is_error = out.get("success") is False
        out = out.get("content")
    if isinstance(out, str):
        is_error = is_error or _exit_code_failed(out)
    return tool_response(str(payload.get("call_id", "")), text_blocks(out), is_error=is_error)


def _reasoning(payload: JSONObject) -> Content | None:
    summary = payload.get("summary")
    texts = [s.get("text", "") for s in summary if isinstance(s, dict)] \
        if isinstance(summary, list) else []
    text = "\n\n".join(str(t) for t in texts if t)
    encrypted = payload.get("encrypted_content")
    if text:
        item = ThinkingContent(thinking=text, signature="")
        if encrypted:
            item = ThinkingContent.model_validate(
                {"thinking": text, "signature": "", "encryptedContent": encrypted})
        return item
    if encrypted:
        return RedactedThinkingContent(data=str(encrypted))
    return None


class _Builder:
    """Groups response items into Goose messages."""

    def __init__(self) -> None:
        self.messages: list[Message] = []
        self.system: list[str] = []
        self.unknown_roles: list[str] = []  # warnings: messages kept whole under an unknown role
        self._open: Message | None = None  # the message the next item of its role joins

    def append(self, role: str, items: list[Content], created: int, merge: bool,
               flags: JSONObject | None = None) -> None:
        if merge and self._open is not None and self._open.role == role:
            self._open.content.extend(items)
            return
        msg = Message(role=role, content=items, created=created)  # type: ignore[arg-type]
        if flags:
            msg.metadata = MessageMetadata.model_validate(flags)
        self.messages.append(msg)
        self._open = msg if merge else None

    def item(self, payload: JSONObject, created: int, where: str = "") -> None:
        kind = payload.get("type")
        kind = kind if isinstance(kind, str) else None  # never hash what a hostile file holds
        if kind == "message":
            recorded = payload.get("role")
            role = recorded if isinstance(recorded, str) else None  # a number, a list...
            items, texts = _message_text(payload)
            if role in INSTRUCTION_ROLES:
                if not self.messages:
                    self.system.extend(texts)
                else:
                    self.append("user", items, created, False, {"instructionRole": role})
            elif role == "assistant":
                self.append("assistant", items, created, True)
            elif role == "user":
                self.append("user", items, created, False)
            else:
                # Neither the user's nor the model's: kept whole, never guessed to be either.
                self.append("user", [UnknownContent(raw=payload)], created, False,
                            {"unknownRecord": True})
                self.unknown_roles.append(UNKNOWN_ROLE.format(where=where, role=repr(recorded)))
        elif kind in CALL_TYPES:
            self.append("assistant", [_call(payload)], created, True)
        elif kind in OUTPUT_TYPES:
            self.append("user", [_output(payload)], created, True)
        elif kind == "reasoning":
            item = _reasoning(payload)
            if item is not None:
                self.append("assistant", [item], created, True)
        else:
            # Unknown item types (web_search_call, image_generation_call...) are kept whole.
            self.append("assistant", [UnknownContent(raw=payload)], created, True)

def _usage(info: JSONValue) -> JSONObject | None:
    if not isinstance(info, dict):
        return None
    extra = {k: v for k, v in info.items()
             if k not in ("input_tokens", "output_tokens", "total_tokens", "cached_input_tokens")}
    return Usage(input_tokens=token_count(info.get("input_tokens")),
                 output_tokens=token_count(info.get("output_tokens")),
                 total_tokens=token_count(info.get("total_tokens")),
                 cache_read_input_tokens=token_count(info.get("cached_input_tokens")),
                 extra=extra).to_dict()


@importer(FORMAT, detect=_detect, description="Codex CLI rollout JSONL")
def load_codex(path: Path, errors: str = "raise", **select: object) -> list[Session]:
    """Load a Codex CLI rollout (id = ``session_meta.id`` or the file stem).

    Raises:
        SessionFormatError: a line is not JSON or not a ``{type, payload}`` object.
        ConfigError: any selection keyword (a rollout holds one session).
    """
    if select:
        raise ConfigError(f"codex rollouts hold one session; no selection {sorted(select)}")
    problems = Problems(path, errors)
    builder = _Builder()
    models: list[JSONValue] = []
    compactions: list[JSONValue] = []
    summaries: list[JSONValue] = []
    meta: JSONObject = {"models": models, "compactions": compactions,
                        "reference_summaries": summaries}
    session_meta: JSONObject = {}
    last_usage: JSONObject | None = None
    for number, line in iter_json_lines(path, problems, EXPECTED_LINE):
        if not isinstance(line, dict) or not isinstance(line.get("payload"), dict):
            problems.bad(number, "line is not a {type, payload} object",
                         expected="{timestamp, type, payload: {...}}")
            continue
        kind, payload = line.get("type"), line["payload"]
        created = parse_time(line.get("timestamp"))
        if kind == "response_item":
            builder.item(payload, created, f"{path}:{number}")
        elif kind == "session_meta":
            session_meta = payload
        elif kind == "turn_context":
            model = payload.get("model")
            if isinstance(model, str) and model not in models:
                models.append(model)
        elif kind == "event_msg":
            if payload.get("type") == "token_count" and isinstance(info := payload.get("info"), dict):
                last_usage = info
        elif kind == "compacted":
            index = len(builder.messages)
            compactions.append({"index": index, "trigger": None, "pre_tokens": None})
            summaries.append(
                {"index": index, "source": "compacted", "text": str(payload.get("message", ""))})
        else:
            # A line type this reader does not know is kept whole rather than dropped.
            builder.append("user", [UnknownContent(raw=line)], created, False,
                           {"unknownRecord": True})
    messages = builder.messages
    if builder.system:
        meta["system_prompt"] = "\n\n".join(builder.system)
    for key in ("id", "cwd", "cli_version", "originator", "model_provider", "instructions"):
        if session_meta.get(key) is not None:
            meta[f"session_{key}" if key == "id" else key] = session_meta[key]
    if last_usage is not None:
        usage = _usage(last_usage.get("total_token_usage"))
        if usage is not None:
            usage["model"] = models[-1] if models else ""
            meta["usage"] = usage
        meta["last_usage"] = _usage(last_usage.get("last_token_usage"))
        if last_usage.get("model_context_window") is not None:
            meta["context_window"] = last_usage["model_context_window"]
    problems.finish(meta)
    if builder.unknown_roles:
        warned = meta["warnings"]
        if isinstance(warned, list):  # Problems.finish wrote a list
            warned += builder.unknown_roles
        meta["unknown_roles"] = len(builder.unknown_roles)
        warnings.warn(f"{path}: {len(builder.unknown_roles)} message(s) with an unknown role "
                      "kept as unknown content; see session.meta['warnings']", stacklevel=2)
    sid = str(session_meta.get("id") or path.stem)
    return [Session(id=sid, format=FORMAT, path=str(path), messages=messages, meta=meta)]
