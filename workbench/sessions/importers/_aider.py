"""aider chat history markdown (``.aider.chat.history.md``): one file, many sessions.

Every ``# aider chat started at YYYY-MM-DD HH:MM:SS`` line starts a session; the text before
the first header (the file was truncated at the front) is session 0 with ``meta["partial"]``.
`load_sessions` returns them all; ``index=N`` or ``started="YYYY-MM-DD HH:MM:SS"`` selects.

Mapping (aider records no structured calls, so the importer makes them):

- ``#### `` lines are user input (consecutive lines merged, the two trailing spaces removed);
- an assistant reply's SEARCH/REPLACE blocks become `ToolRequest` items named ``edit`` with
  ``{"path", "search", "replace"}`` (id ``edit_<n>``), the prose stays text, and the ``> ``
  output right after the reply answers them: the first edit's response holds the whole output,
  each later one the output lines naming its file; an edit is an error when the output reports
  ``SearchReplaceNoExactMatch`` for its file, a malformed/unmatched reply, or no "Applied edit";
  an edit with no output at all (interrupted) gets an error result saying so;
- a slash command (``/run``, ``/test``, ``/add``...) stays user text; when ``> `` output follows
  it, the importer adds an assistant `ToolRequest` named after the command (``run``, ``test``,
  ``add``; arguments ``{"command": <input>}``, id ``cmd_<n>``) and a user `ToolResponse` with the
  output, both marked ``metadata.aiderCommand = true`` because aider, not the model, ran it;
- any other ``> `` output (banner, confirmations, commit notes) is user-visible only
  (``agentVisible: false``): aider printed it, the model never saw it;
- ``> Tokens: X sent, Y received. Cost: $Z ...`` lines are summed into ``meta["usage"]`` and
  dropped from tool results; ``> Model: ...`` lines give ``meta["models"]``.

Whole-file edits (the ``whole`` edit format) stay assistant text. A header with nothing under
it (aider quit at once) is kept as a session with no messages, ``meta["empty"]`` and a warning
in ``meta["warnings"]``, so indices stay those of the file; a file whose headers have no input
under any of them is a `SessionFormatError` naming the first header's line.
"""

from __future__ import annotations

import re
from pathlib import Path

from workbench._json_types import JSONObject
from workbench.compaction._model import Usage
from workbench.errors import ConfigError, SessionFormatError
from workbench.messages import Message, MessageMetadata
from workbench.sessions._registry import Errors, importer
from workbench.sessions._session import Session
from workbench.sessions.importers._agent_common import Problems, sum_usage
from workbench.sessions.importers._aider_parse import Block, RawSession, scan, split_edits
from workbench.sessions.importers._readers import read_text

FORMAT = "aider"
EXPECTED = 'an aider chat history: "# aider chat started at ..." headers and "#### " input lines'
TOKENS = re.compile(
    r"Tokens: (?P<sent>[\d.,]+k?) sent(?:, (?P<write>[\d.,]+k?) cache write)?"
    r"(?:, (?P<hit>[\d.,]+k?) cache hit)?, (?P<recv>[\d.,]+k?) received\."
    r"(?: Cost: \$(?P<cost>[\d.,]+) (?:request|message))?")
MODEL = re.compile(r"(?:Main model|Model|Models): (\S+)")
NO_MATCH = re.compile(r"SearchReplaceNoExactMatch: .*? lines in (\S+)")
EDIT_FAILED = re.compile(r"SearchReplaceNoExactMatch|Malformed|did not conform to the edit format"
                         r"|UnifiedDiffNoMatch|ValueError")
COMMAND_FAILED = re.compile(r"Traceback \(most recent call last\)|\bFAILED\b|exit code: [1-9]"
                            r"|command not found")
SELECT_KEYS = {"index", "started"}
NO_INPUT = ("{n:,} session header(s) but no input line ('#### ...') under any of them: not an "
            "aider chat history, or one whose sessions were all cut")
EMPTY = "{path}:{line}: a session header with nothing under it (kept, with 0 messages)"
_HEAD_HEADER = re.compile(r"^# aider chat started at \d{4}-", re.MULTILINE)
_HEAD_LITERAL = "# aider chat started at "
"""The text every `_HEAD_HEADER` match holds."""


def _detect(path: Path, head: str) -> bool:
    # The literal first: a substring search skips a head without it far faster than the
    # pattern (every session file whose format is detected passes here first).
    return path.name.endswith(".aider.chat.history.md") or (
        _HEAD_LITERAL in head and bool(_HEAD_HEADER.search(head)))


MAX_COUNT = 10**15
"""Largest token count or cost a ``Tokens:`` line may report; beyond it the line is kept as text."""


def _count(value: str) -> int:
    value = value.replace(",", "")
    number = float(value[:-1]) * 1000 if value.endswith("k") else float(value)
    if not 0 <= number <= MAX_COUNT:  # inf from thousands of digits, too: not a usage line
        raise ValueError(value)
    return int(round(number))


def parse_tokens_line(line: str) -> Usage | None:
    """The usage an aider ``Tokens: ...`` line reports, or None when `line` is not one (or
    reports numbers no real session has: the line then stays in the output as text)."""
    m = TOKENS.match(line)
    if m is None:
        return None
    try:
        cost = float(m["cost"].replace(",", "")) if m["cost"] else None
        if cost is not None and not 0 <= cost <= MAX_COUNT:
            raise ValueError(m["cost"])
        return Usage(
            input_tokens=_count(m["sent"]), output_tokens=_count(m["recv"]),
            cache_write_input_tokens=_count(m["write"]) if m["write"] else None,
            cache_read_input_tokens=_count(m["hit"]) if m["hit"] else None,
            cost=cost,
        )
    except ValueError:
        return None


@importer(FORMAT, detect=_detect, description="aider .aider.chat.history.md (many sessions)")
def load_aider(path: Path, errors: Errors = "raise", **select: object) -> list[Session]:
    """Read every session of an aider chat history, or the one `select` names."""
    unknown = set(select) - SELECT_KEYS
    if unknown:
        raise ConfigError(f"aider sessions are selected by index= or started=, not "
                          f"{', '.join(sorted(unknown))}")
    text = read_text(path)
    raw = scan(text)
    if not any(b.kind == "user" for rs in raw for b in rs.blocks):
        headers = [rs for rs in raw if rs.started is not None]
        if not headers:
            raise SessionFormatError(str(path), None, "no aider session found", expected=EXPECTED)
        raise SessionFormatError(str(path), headers[0].line, NO_INPUT.format(n=len(headers)),
                                 expected=EXPECTED)
    if not raw[0].blocks:
        raw = raw[1:]  # the file starts with a header: there is no partial session
    out: list[Session] = []
    for index, rs in enumerate(raw):
        if "index" in select and select["index"] != index:
            continue
        if "started" in select and select["started"] != rs.started:
            continue
        out.append(_build(path, index, rs, errors))
    return out


class _Builder:
    def __init__(self) -> None:
        self.messages: list[Message] = []
        self.usages: list[Usage] = []
        self.models: list[str] = []
        self.edits = self.commands = 0
        self.unanswered = 0

    def output_lines(self, block: Block) -> list[str]:
        kept = []
        for line in block.lines:
            usage = parse_tokens_line(line)
            if usage is not None:
                self.usages.append(usage)
                continue
            m = MODEL.match(line)
            if m and m.group(1) not in self.models:
                self.models.append(m.group(1))
            kept.append(line)
        return kept

    def assistant(self, block: Block, output: Block | None) -> bool:
        """Add a reply (and its edits' results); True when `output` was used."""
        prose, edits = split_edits(block.lines)
        msg = Message(role="assistant", created=0)
        if prose:
            msg.with_text(prose)
        ids = []
        for edit in edits:
            self.edits += 1
            ids.append(f"edit_{self.edits}")
            msg.with_tool_request(ids[-1], "edit", {"path": edit.path, "search": edit.search,
                                                    "replace": edit.replace})
        self.messages.append(msg)
        if not edits:
            return False
        result = Message(role="user", created=0)
        if output is None:
            for call_id in ids:
                self.unanswered += 1
                result.with_tool_response(call_id, error="aider recorded no result for this edit")
            self.messages.append(result)
            return False
        lines = self.output_lines(output)
        whole = "\n".join(lines)
        failed_paths = set(NO_MATCH.findall(whole))
        failed_all = bool(EDIT_FAILED.search(whole)) and not failed_paths
        for k, (call_id, edit) in enumerate(zip(ids, edits, strict=True)):
            mine = [ln for ln in lines if edit.path and edit.path in ln]
            applied = any(ln.startswith("Applied edit to") for ln in mine)
            is_error = edit.path in failed_paths or failed_all or not applied
            result.with_tool_response(call_id, whole if k == 0 else "\n".join(mine),
                                      is_error=is_error)
        self.messages.append(result)
        return True

    def command(self, user: Block, output: Block) -> None:
        self.commands += 1
        call_id = f"cmd_{self.commands}"
        command = user.text.strip()
        name = command[1:].split(maxsplit=1)[0] if len(command) > 1 else "command"
        marked = MessageMetadata.model_validate({"aiderCommand": True})
        text = "\n".join(self.output_lines(output))
        self.messages.append(Message(role="assistant", created=0, metadata=marked.model_copy())
                             .with_tool_request(call_id, name, {"command": command}))
        self.messages.append(Message(role="user", created=0, metadata=marked.model_copy())
                             .with_tool_response(call_id, text,
                                                 is_error=bool(COMMAND_FAILED.search(text))))

    def output(self, block: Block) -> None:
        text = "\n".join(self.output_lines(block))
        if text.strip():
            self.messages.append(Message.user(text, created=0,
                                              metadata=MessageMetadata.user_only()))


def _build(path: Path, index: int, rs: RawSession, errors: Errors) -> Session:
    b = _Builder()
    blocks = rs.blocks
    i = 0
    while i < len(blocks):
        block = blocks[i]
        nxt = blocks[i + 1] if i + 1 < len(blocks) else None
        following = nxt if nxt is not None and nxt.kind == "tool" else None
        if block.kind == "user":
            b.messages.append(Message.user(block.text, created=0))
            if block.text.startswith("/") and following is not None:
                b.command(block, following)
                i += 1
        elif block.kind == "assistant":
            if b.assistant(block, following):
                i += 1
        else:
            b.output(block)
        i += 1
    meta: JSONObject = {"index": index, "started": rs.started, "line": rs.line,
                            "partial": rs.started is None}
    if b.models:
        meta["models"] = list(b.models)
    usage = sum_usage(b.usages)
    if usage is not None:
        meta["usage"] = usage
    meta["edits"] = b.edits
    if b.unanswered:
        meta["unanswered_edits"] = b.unanswered
    Problems(path, errors).into(meta)
    if not b.messages:  # aider writes the header at start-up: a session quit at once is empty
        meta["empty"] = True
        warned = meta["warnings"]
        if isinstance(warned, list):  # Problems.into wrote a list
            warned.append(EMPTY.format(path=path, line=rs.line))
    return Session(id=f"{path.name}#{index}", format=FORMAT, path=str(path),
                   messages=b.messages, meta=meta)
