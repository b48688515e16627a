"""`ExtractiveModel`: a deterministic, no-LLM summarizer used as a baseline and in tests.

It reads the transcript the compaction template put in the system prompt, in either style
``format_message_for_compacting`` writes: goose (``[user]: ...`` lines, a message running until
the next ``[role]:`` line) or jsonl (one ``{"role": ..., "content": [...]}`` object per line).
Every line that starts a message is parsed wherever it sits; the last message stops where the
template's own text resumes: the first markdown heading or lone tag line whose next lines
mention ``<analysis>`` or JSON (the answer instructions), else the first such line at all. When the system
prompt holds no transcript (a prefix-style template sends the conversation as messages), the
request messages themselves are read, minus the trailing instruction.

The answer is ``<analysis>extractive</analysis>`` then one ```json block in the structured
summary schema, filled by rules (see `ExtractiveModel`). Window limits are not its business:
put it behind a window (`WindowCap`) for that.

It is a *simulated summarizer*, not a model: it follows the schema the compaction prompt asks
for (`requested_schema`): only the fields present in the prompt's last ```json example are
filled, and a list cap the prompt states ("at most N entries in each list", or per field:
"`user_intent`: at most N entries") truncates those lists. A prompt with no readable schema,
like the built-in one with no caps, gets every field in full, so prompt-side variants show their
effect offline without changing the baseline's answers to the shipped prompts.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from workbench._json_types import JSONObject, JSONValue
from workbench.compaction._format import format_content_item
from workbench.compaction._model import Usage
from workbench.messages import Message, TextContent, ToolRequest, ToolResponse
from workbench.models._requested_schema import (
    _JSON_BLOCK,
    SCHEMA_FIELDS,
    STRING_FIELDS,
    RequestedSchema,
    apply_schema,
    clip_text,
    requested_schema,
)
from workbench.tokens import TokenEstimator, default_estimator

__all__ = ["ANSWER_HINTS", "ANSWER_HINT_LINES", "CURRENT_WORK_CHARS", "EDIT_WORDS",
           "EMPTY_MESSAGE", "ERROR_CHARS", "ESTIMATED_KEY", "ExtractiveModel", "MAX_ERRORS",
           "MAX_INTENTS", "MODEL_ID", "PATH_KEYS", "RequestedSchema", "SCHEMA_FIELDS",
           "SECTION_ANSWERERS", "STRING_FIELDS", "SectionAnswerer", "USER_TEXT_CHARS", "VERSION",
           "apply_schema", "extract_summary", "parse_transcript", "render_answer",
           "requested_schema"]

MODEL_ID = "extractive"
VERSION = 1
MAX_INTENTS = 10
MAX_ERRORS = 10
USER_TEXT_CHARS = 300
ERROR_CHARS = 300
CURRENT_WORK_CHARS = 500
PATH_KEYS = ("path", "file", "file_path", "filename")
EDIT_WORDS = ("write", "edit", "str_replace", "insert", "create", "patch", "replace", "undo")
EMPTY_MESSAGE = "<empty message>"
ANSWER_HINTS = ("<analysis>", "```json", "JSON")
ANSWER_HINT_LINES = 3

_GOOSE_START = re.compile(r"^\[(user|assistant)\]: ?(.*)$")
_TOOL_REQUEST = re.compile(r"^tool_request\(([^)]*)\): ?(.*)$")
_TOOL_RESPONSE = "tool_response: "
_TEMPLATE_RESUMES = re.compile(r"^(#{1,6}\s|</?[A-Za-z][\w-]*>\s*$)")
_ERROR_LINE = re.compile(r"Error:|error:|FAILED")
_FILE_EXT = re.compile(r"\.[A-Za-z][A-Za-z0-9]{0,7}$")
_SHELL_SPLIT = re.compile(r"[\s;|&<>()'\"`=]+")


@dataclass
class _Turn:
    role: str
    texts: list[str] = field(default_factory=list)
    requests: list[tuple[str, JSONValue]] = field(default_factory=list)
    responses: list[str] = field(default_factory=list)

    def add_part(self, part: str) -> None:
        match = _TOOL_REQUEST.match(part)
        if match:
            try:
                args = json.loads(match.group(2))
            except ValueError:
                args = None
            self.requests.append((match.group(1), args))
        elif part.startswith(_TOOL_RESPONSE):
            self.responses.append(part[len(_TOOL_RESPONSE):])
        elif part.strip() and part != EMPTY_MESSAGE:
            self.texts.append(part)

    @property
    def text(self) -> str:
        return "\n".join(self.texts).strip()


# ---- reading the transcript ----------------------------------------------------------------

def _jsonl_turn(line: str) -> _Turn | None:
    if not line.startswith("{"):
        return None
    try:
        data = json.loads(line)
    except ValueError:
        return None
    if not isinstance(data, dict) or data.get("role") not in ("user", "assistant"):
        return None
    content = data.get("content")
    if not isinstance(content, list):
        return None
    turn = _Turn(role=data["role"])
    for part in content:
        if isinstance(part, str):
            turn.add_part(part)
    return turn


def _goose_parts(lines: list[str]) -> list[str]:
    # A multi-line part continues until the next line that opens a tool part.
    parts: list[str] = []
    for line in lines:
        opens = line.startswith(_TOOL_RESPONSE) or _TOOL_REQUEST.match(line) is not None
        if opens or not parts or _TOOL_REQUEST.match(parts[-1]):
            parts.append(line)
        else:
            parts[-1] += "\n" + line
    return parts


def _template_resumes_at(lines: list[str]) -> int:
    # The last message may hold markdown headings of its own; prefer the heading that
    # introduces the answer format (the template's next lines mention <analysis> or JSON).
    marks = [i for i, line in enumerate(lines) if i > 0 and _TEMPLATE_RESUMES.match(line)]
    for n, i in enumerate(marks):
        end = marks[n + 1] if n + 1 < len(marks) else len(lines)
        section = [line for line in lines[i + 1:end] if line.strip()][:ANSWER_HINT_LINES]
        if any(hint in line for line in section for hint in ANSWER_HINTS):
            return i
    return marks[0] if marks else len(lines)


def parse_transcript(text: str) -> list[_Turn]:
    """The messages found in a rendered compaction prompt (both transcript styles)."""
    turns: list[_Turn] = []
    pending: tuple[str, list[str]] | None = None  # goose message being read: role, lines

    def flush(last: bool) -> None:
        nonlocal pending
        if pending is None:
            return
        role, lines = pending
        if last:
            lines = lines[:_template_resumes_at(lines)]
        turn = _Turn(role=role)
        for part in _goose_parts(lines):
            turn.add_part(part)
        turns.append(turn)
        pending = None

    for line in text.splitlines():
        start = _GOOSE_START.match(line)
        if start:
            flush(last=False)
            pending = (start.group(1), [start.group(2)])
            continue
        jsonl = _jsonl_turn(line)
        if jsonl is not None:
            flush(last=False)
            turns.append(jsonl)
            continue
        if pending is not None:
            pending[1].append(line)
    flush(last=True)
    return turns


def _turns_from_messages(messages: Sequence[Message]) -> list[_Turn]:
    turns = []
    for message in messages:
        turn = _Turn(role=message.role)
        for item in message.content:
            if isinstance(item, TextContent):
                turn.add_part(item.text)
            elif isinstance(item, (ToolRequest, ToolResponse)):
                part = format_content_item(item)
                if part is not None:
                    turn.add_part(part)
        turns.append(turn)
    return turns


# ---- rules -------------------------------------------------------------------------------------


def _dedup(items: list[str]) -> list[str]:
    return list(dict.fromkeys(items))


def _is_edit(tool: str, args: JSONValue) -> bool:
    words = [tool.rsplit("__", 1)[-1].lower()]
    command = args.get("command") if isinstance(args, dict) else None
    if isinstance(command, str):
        words.append(command.strip().lower())
    return any(w in word for word in words for w in EDIT_WORDS)


def _paths_in_command(command: str) -> list[str]:
    if " " not in command.strip():
        return []  # a one-word "command" is a sub-command name (text_editor's "view"), not a shell line
    found = []
    for token in _SHELL_SPLIT.split(command):
        token = token.strip(",:")
        if (not token or token.startswith("-") or "://" in token or token.startswith("/dev/")
                or any(c in token for c in "*?[]{}$")):
            continue
        if "/" in token.strip("/.") or _FILE_EXT.search(token):
            if not token.replace(".", "").isdigit():
                found.append(token)
    return found


def _request_paths(args: JSONValue) -> list[str]:
    if not isinstance(args, dict):
        return []
    paths = [path for k in PATH_KEYS if isinstance(path := args.get(k), str) and path.strip()]
    command = args.get("command")
    if isinstance(command, str):
        paths.extend(_paths_in_command(command))
    return paths


def _error_lines(response: str) -> list[str]:
    lines = response.splitlines()
    found = []
    for i, line in enumerate(lines):
        if line.startswith("Traceback (most recent call last)"):
            for later in lines[i + 1:]:
                if later.strip() and not later[0].isspace():
                    found.append(later.strip())
                    break
        elif _ERROR_LINE.search(line):
            found.append(line.strip())
    return found


def extract_summary(turns: list[_Turn]) -> JSONObject:
    """The structured-summary fields for a parsed conversation (rules in `ExtractiveModel`)."""
    requests = [t.text for t in turns if t.role == "user" and t.text]
    intents = _dedup([clip_text(r, USER_TEXT_CHARS) for r in requests])
    if len(intents) > MAX_INTENTS:
        intents = intents[:1] + intents[-(MAX_INTENTS - 1):]
    tools: list[str] = []
    files: dict[str, str] = {}
    errors: list[str] = []
    for turn in turns:
        for tool, args in turn.requests:
            tools.append(tool)
            for path in _request_paths(args):
                if _is_edit(tool, args) or files.get(path) == "edited":
                    files[path] = "edited"
                else:
                    files.setdefault(path, "read")
        for response in turn.responses:
            errors.extend(clip_text(e, ERROR_CHARS) for e in _error_lines(response))
    assistant_texts = [t.text for t in turns if t.role == "assistant" and t.text]
    return {
        "user_intent": [*intents],
        "technical_concepts": [*_dedup(tools)],
        "files": [{"path": p, "summary": s, "key_code": None} for p, s in files.items()],
        "errors_and_fixes": [*_dedup(errors)[:MAX_ERRORS]],
        "problem_solving": [],
        "user_messages": [clip_text(r, USER_TEXT_CHARS) for r in requests],
        "pending_tasks": [clip_text(requests[-1], USER_TEXT_CHARS)] if requests else [],
        "current_work": clip_text(assistant_texts[-1], CURRENT_WORK_CHARS) if assistant_texts else None,
        "next_step": None,
    }


def render_answer(summary: JSONObject) -> str:
    """The reply text: a stub analysis and one fenced JSON block.

    ``</`` is written ``<\\/`` (valid JSON) so quoted text can never contain ``</analysis>``.
    """
    body = json.dumps(summary, indent=2, ensure_ascii=False).replace("</", "<\\/")
    return f"<analysis>extractive</analysis>\n```json\n{body}\n```"


SectionAnswerer = Callable[[str, list[Message]], "str | None"]
SECTION_ANSWERERS: list[SectionAnswerer] = []
"""Answerers for prompts without a JSON schema, tried in order: ``(system, messages) -> the
answer, or None`` (`workbench.models._sections` adds the one for prompts asking for sections
when the package is imported)."""

ESTIMATED_KEY = "estimated"
"""``usage.extra`` key set to True when token counts are estimates, not a provider's report."""


class ExtractiveModel:
    """A summary built by rules from the transcript; no LLM, same output for the same prompt.

    Fields: ``user_intent`` = the user's requests (text of user messages that are not tool
    output), deduplicated, in order, at most 10 (the first plus the latest 9); ``technical_concepts``
    = tool names used, in first-use order; ``files`` = paths from tool-call arguments (``path``,
    ``file``, ``file_path``, ``filename``, or path-like tokens of a shell ``command``), summary
    ``"edited"`` when an editing tool or sub-command touched them, else ``"read"``;
    ``errors_and_fixes`` = failure lines quoted verbatim from tool output (a traceback's final
    line, lines with ``Error:``, ``error:`` or ``FAILED``), at most 10; ``user_messages`` = every
    user request clipped to 300 characters; ``pending_tasks`` = the last request;
    ``current_work`` = the last assistant text clipped to 500 characters; ``next_step`` = null.
    Then only the fields the prompt's schema requests are kept, and the list caps it states are
    applied (`requested_schema`): a simulated summarizer that follows the prompt's form.

    Usage: input tokens = the estimator's count of the prompt, output tokens = the count of the
    answer, cost 0.0.

    Args:
        estimator: Token estimator for usage; the process-wide tiktoken estimator by default.
    """

    model = MODEL_ID

    def __init__(self, estimator: TokenEstimator | None = None) -> None:
        self._estimator = estimator

    @property
    def estimator(self) -> TokenEstimator:
        """The estimator used for usage figures. (the process-wide estimator unless one was given)."""
        return self._estimator or default_estimator()

    async def complete(self, system: str, messages: list[Message]) -> tuple[Message, Usage]:
        """Summarize the transcript found in `system` (or in `messages`) by rules.

        A prompt with no JSON schema is first offered to `SECTION_ANSWERERS`: an agent
        policy's prompt that shows the sections it wants is answered in those sections
        (`workbench.models._sections`)."""
        if _JSON_BLOCK.search(system) is None:
            for answerer in SECTION_ANSWERERS:
                sections = answerer(system, messages)
                if sections is not None:
                    return self._reply(system, messages, sections)
        turns = parse_transcript(system)
        if not turns:
            convo = list(messages)
            if len(convo) > 1 and convo[-1].role == "user" and not convo[-1].has_tool_response():
                convo = convo[:-1]  # the trailing instruction of a prefix-style template
            turns = _turns_from_messages(convo)
        answer = render_answer(apply_schema(extract_summary(turns), requested_schema(system)))
        return self._reply(system, messages, answer)

    def _reply(self, system: str, messages: list[Message],
               answer: str) -> tuple[Message, Usage]:
        input_tokens = self.estimator.count_chat_tokens(system, messages)
        output_tokens = self.estimator.count_text_tokens(answer)
        # No provider bills these: they are the workbench's own counts, and say so.
        usage = Usage(model=MODEL_ID, input_tokens=input_tokens, output_tokens=output_tokens,
                      total_tokens=input_tokens + output_tokens, cost=0.0,
                      extra={ESTIMATED_KEY: True})
        return Message.assistant(answer), usage

    def cache_identity(self) -> JSONObject:
        """``{"model": "extractive", "version": 1}``."""
        return {"model": MODEL_ID, "version": VERSION}

    def describe(self) -> str:
        """Label for tables."""
        return MODEL_ID

    def __repr__(self) -> str:
        return "ExtractiveModel()"
