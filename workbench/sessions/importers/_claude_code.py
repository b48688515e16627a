"""Claude Code transcripts (``~/.claude/projects/**/<session>.jsonl``) as Goose messages.

One API response is written as several ``assistant`` records sharing ``message.id`` (one content
block each), and with parallel tool calls the ``tool_result`` user records sit between them. The
importer builds one assistant message per ``message.id`` at the place of its first record, so the
tool results that were interleaved come after it. ``progress``, ``file-history-snapshot`` and
``queue-operation`` records duplicate content or are UI state and are skipped (counted in
``meta["skipped_records"]``); a ``system/compact_boundary`` becomes a recorded compaction point.
A line repeating an earlier record byte for byte (same ``uuid``) is read once and noted in
``meta["warnings"]``.

A sub-agent transcript carries its parent's ``sessionId``; loaded on its own (a glob over a
project folder picks up ``<session>/subagents/agent-*.jsonl`` too) it gets the id it has under
``include_subagents``, ``<session>/agent-<agentId>``, so it is never taken for its parent.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import TypedDict

from workbench._json_types import JSONObject, JSONValue
from workbench.compaction._model import Usage
from workbench.errors import ConfigError
from workbench.messages import (
    Content,
    ImageContent,
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
from workbench.sessions._session import Session, as_int, meta_list, meta_records
from workbench.sessions.importers._readers import (
    Problems,
    head_json_lines,
    iter_json_lines,
    parse_time,
    text_blocks,
    tool_response,
)

FORMAT = "claude-code"
EXPECTED_LINE = "one Claude Code transcript record (a JSON object) per line"
SKIPPED_TYPES = frozenset({"progress", "file-history-snapshot", "queue-operation"})
RECORD_TYPES = frozenset({"user", "assistant", "system", "summary"}) | SKIPPED_TYPES
ACOMPACT_PREFIX = "agent-acompact-"


def _detect(path: Path, head: str) -> bool:
    for rec in head_json_lines(head):
        if isinstance(rec, dict) and rec.get("type") in RECORD_TYPES and (
                "sessionId" in rec or "parentUuid" in rec or rec.get("type") in SKIPPED_TYPES
                or "leafUuid" in rec):
            return True
    # A first record longer than the head: fall back to Claude Code's distinctive envelope keys.
    return head.lstrip().startswith("{") and '"parentUuid"' in head and '"sessionId"' in head


def _assistant_block(block: JSONValue) -> Content:
    if not isinstance(block, dict):
        return UnknownContent(raw={"value": block})
    kind = block.get("type")
    if kind == "text" and isinstance(text := block.get("text"), str):
        return TextContent(text=text)
    if kind == "thinking" and isinstance(thinking := block.get("thinking"), str):
        return ThinkingContent(thinking=thinking, signature=block.get("signature") or "")
    if kind == "redacted_thinking":
        return RedactedThinkingContent(data=str(block.get("data", "")))
    if kind == "tool_use" and isinstance(call_id := block.get("id"), str):
        call = ToolCall(name=str(block.get("name", "")), arguments=block.get("input"))
        return ToolRequest(id=call_id, tool_call=ToolCallResult(status="success", value=call))
    if kind == "image":
        return _image(block)
    return UnknownContent(raw=block)


def _image(block: JSONObject) -> Content:
    source = block.get("source")
    if isinstance(source, dict) and source.get("type") == "base64":
        return ImageContent(data=str(source.get("data", "")),
                            mime_type=str(source.get("media_type", "")))
    return UnknownContent(raw=block)


def _user_block(block: JSONValue) -> Content:
    if not isinstance(block, dict):
        return UnknownContent(raw={"value": block})
    kind = block.get("type")
    if kind == "text" and isinstance(text := block.get("text"), str):
        return TextContent(text=text)
    if kind == "tool_result" and isinstance(call_id := block.get("tool_use_id"), str):
        return tool_response(call_id, text_blocks(block.get("content")),
                             is_error=bool(block.get("is_error")))
    if kind == "image":
        return _image(block)
    return UnknownContent(raw=block)


class _Reader:
    """Builds one session from the records of one transcript file."""

    def __init__(self, path: Path, problems: Problems) -> None:
        self.path = path
        self.problems = problems
        self.messages: list[Message] = []
        self.by_id: dict[str, Message] = {}
        self.usage_by_id: dict[str, JSONObject] = {}
        self.model_by_id: dict[str, str] = {}
        self.compactions: list[JSONValue] = []
        self.summaries: list[JSONValue] = []
        self.skipped: Counter[str] = Counter()
        self.envelope: JSONObject = {}
        self.titles: list[JSONValue] = []

    def read(self) -> None:
        for number, rec in iter_json_lines(self.path, self.problems, EXPECTED_LINE,
                                           identity=_uuid):
            if not isinstance(rec, dict):
                self.problems.bad(number, f"record is a JSON {type(rec).__name__}, not an object",
                                  expected="a Claude Code record object with a 'type'")
                continue
            kind = rec.get("type")
            if kind in SKIPPED_TYPES:
                self.skipped[str(kind)] += 1
            elif kind == "assistant":
                self._assistant(number, rec)
            elif kind == "user":
                self._user(number, rec)
            elif kind == "system":
                self._system(rec)
            elif kind == "summary":
                self.titles.append(str(rec.get("summary", "")))
            else:
                # Unknown record types are kept whole so nothing disappears silently.
                msg = Message(role="user", content=[UnknownContent(raw=rec)],
                              created=parse_time(rec.get("timestamp")), id=rec.get("uuid"))
                msg.metadata = MessageMetadata.model_validate({"unknownRecord": True})
                self.messages.append(msg)
            if kind in ("user", "assistant") and not self.envelope:
                self.envelope = rec

    def _message_of(self, number: int, rec: JSONObject,
                    role: str) -> tuple[JSONObject, str | list[JSONValue]] | None:
        """The record's ``message`` and its content, or None (a problem noted) without them."""
        msg = rec.get("message")
        content = msg.get("content") if isinstance(msg, dict) else None
        if not isinstance(msg, dict) or not isinstance(content, (str, list)):
            self.problems.bad(number, f"{role} record {rec.get('uuid', '?')} has no message content",
                              expected="message: {role, content: string or list of blocks}")
            return None
        return msg, content

    def _assistant(self, number: int, rec: JSONObject) -> None:
        found = self._message_of(number, rec, "assistant")
        if found is None:
            return
        msg, content = found
        blocks: list[Content] = [TextContent(text=content)] if isinstance(content, str) else [
            _assistant_block(b) for b in content]
        mid = str(msg["id"] if isinstance(msg.get("id"), str)
                  else rec.get("uuid") or f"line-{number}")
        target = self.by_id.get(mid)
        if target is None:
            target = Message(role="assistant", content=[], created=parse_time(rec.get("timestamp")),
                             id=mid)
            self.by_id[mid] = target
            self.messages.append(target)
        target.content.extend(blocks)
        if isinstance(usage := msg.get("usage"), dict):
            self.usage_by_id[mid] = usage  # later records of a response hold the final count
        if isinstance(model := msg.get("model"), str):
            self.model_by_id[mid] = model

    def _user(self, number: int, rec: JSONObject) -> None:
        found = self._message_of(number, rec, "user")
        if found is None:
            return
        content = found[1]
        items: list[Content] = [TextContent(text=content)] if isinstance(content, str) else [
            _user_block(b) for b in content]
        out = Message(role="user", content=items, created=parse_time(rec.get("timestamp")),
                      id=rec.get("uuid"))
        flags: dict[str, bool] = {}
        if rec.get("isMeta"):
            flags["isMeta"] = True
        if rec.get("isCompactSummary"):
            flags["compactSummary"] = True
            self.summaries.append({"index": len(self.messages), "source": "compact_summary",
                                   "text": out.concat_text()})
        if flags:
            out.metadata = MessageMetadata.model_validate(flags)
        self.messages.append(out)

    def _system(self, rec: JSONObject) -> None:
        if rec.get("subtype") != "compact_boundary":
            self.skipped[f"system/{rec.get('subtype')}"] += 1
            return
        recorded = rec.get("compactMetadata")
        info = recorded if isinstance(recorded, dict) else {}
        self.compactions.append({"index": len(self.messages), "trigger": info.get("trigger"),
                                 "pre_tokens": info.get("preTokens"),
                                 "timestamp": rec.get("timestamp")})

    def usage(self) -> tuple[JSONObject | None, list[str]]:
        models = list(dict.fromkeys(self.model_by_id.values()))
        if not self.usage_by_id:
            return None, models
        total = Usage()
        for raw in self.usage_by_id.values():
            inp = as_int(raw.get("input_tokens") or 0)
            read = as_int(raw.get("cache_read_input_tokens") or 0)
            write = as_int(raw.get("cache_creation_input_tokens") or 0)
            out = as_int(raw.get("output_tokens") or 0)
            total = total + Usage(input_tokens=inp + read + write, output_tokens=out,
                                  total_tokens=inp + read + write + out,
                                  cache_read_input_tokens=read, cache_write_input_tokens=write)
        counts = Counter(self.model_by_id.values())
        total.model = counts.most_common(1)[0][0] if counts else ""
        return total.to_dict(), models

    def session(self, sid: str) -> Session:
        usage, models = self.usage()
        env = self.envelope
        meta: JSONObject = {
            "session_id": env.get("sessionId"), "cwd": env.get("cwd"),
            "version": env.get("version"), "git_branch": env.get("gitBranch"),
            "models": list(models), "compactions": self.compactions,
            "reference_summaries": self.summaries,
            "skipped_records": dict(self.skipped),
        }
        if usage is not None:
            meta["usage"] = usage
        if env.get("agentId"):
            meta["agent_id"] = env["agentId"]
        if self.titles:
            meta["titles"] = self.titles
        self.problems.finish(meta)
        return Session(id=sid, format=FORMAT, path=str(self.path), messages=self.messages,
                       meta=meta)


def _uuid(record: object) -> object:
    return record.get("uuid") if isinstance(record, dict) else None


def _read_file(path: Path, errors: str, sid: str | None = None) -> Session:
    reader = _Reader(path, Problems(path, errors))
    reader.read()
    parent = str(reader.envelope.get("sessionId") or path.stem)
    agent = reader.envelope.get("agentId")
    if sid is None and isinstance(agent, str) and agent:
        session = reader.session(f"{parent}/agent-{agent}")
        session.meta["parent_session"] = parent
        return session
    return reader.session(sid or parent)


class _Answer(TypedDict):
    """The final answer of a compaction call's transcript."""

    source: str
    text: str
    created: int


def _acompact_summary(path: Path, errors: str) -> _Answer | None:
    sub = _read_file(path, errors)
    answers = [m for m in sub.messages if m.role == "assistant" and m.concat_text().strip()]
    if not answers:
        return None
    last = answers[-1]
    return {"source": path.name, "text": last.concat_text(), "created": last.created}


def _attach_acompact(parent: Session, folder: Path, errors: str) -> None:
    boundaries = meta_records(parent, "compactions")
    for file in sorted(folder.glob(f"{ACOMPACT_PREFIX}*.jsonl")):
        found = _acompact_summary(file, errors)
        if found is None:
            continue
        # The compaction call ends just before its boundary is written: pick the nearest in time.
        index = None
        if boundaries:
            best = min(boundaries, key=lambda b: abs(parse_time(b.get("timestamp"))
                                                     - found["created"]))
            index = best["index"]
        meta_list(parent, "reference_summaries").append(  # the list meta holds, in place
            {"index": index, "source": found["source"], "text": found["text"]})


@importer(FORMAT, detect=_detect, description="Claude Code transcript JSONL (+ sub-agents)")
def load_claude_code(path: Path, errors: str = "raise", include_subagents: bool = False,
                     **select: object) -> list[Session]:
    """Load a Claude Code transcript; with `include_subagents`, its sub-agent transcripts too.

    A sibling folder ``<stem>/subagents/`` is searched for ``agent-acompact-*.jsonl`` (Claude
    Code's own compaction calls): their final answer is added to the parent's
    ``meta["reference_summaries"]``. Other ``agent-*.jsonl`` files load as sessions of their own
    (id ``<session>/agent-<id>``) when `include_subagents` is true.

    Args:
        path: The transcript (a main session or a sub-agent file).
        errors: ``"raise"`` or ``"skip"`` for bad records.
        include_subagents: Also return the sub-agent sessions, after the parent.

    Raises:
        SessionFormatError: a line is not JSON or a record has the wrong shape.
        ConfigError: an unknown selection keyword.
    """
    if select:
        raise ConfigError(f"claude-code sessions take no selection {sorted(select)}; "
                          "pass include_subagents=True to load sub-agents")
    parent = _read_file(path, errors)
    folder = path.parent / path.stem / "subagents"
    sessions = [parent]
    if folder.is_dir():
        _attach_acompact(parent, folder, errors)
        if include_subagents:
            for file in sorted(folder.glob("agent-*.jsonl")):
                if file.name.startswith(ACOMPACT_PREFIX):
                    continue
                sub = _read_file(file, errors, sid=f"{parent.id}/{file.stem}")
                sub.meta["parent_session"] = parent.id
                sessions.append(sub)
    return sessions

