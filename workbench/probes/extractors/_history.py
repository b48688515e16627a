"""`History`: one read of a transcript that every extractor shares.

An extractor asks the same few things of a session: which turns the human typed, which tool
calls ran and what came back (the output, whether it failed, the exit code it printed), what
the agent wrote. `History` answers them once per session:

- **human turns**: user messages the human typed (`workbench.probes._transcript.is_human`:
  not an injected hook or command echo, a harness's format-error reply, a skill's text, a
  demonstration or the recorded agent's own summary) that the agent sees;
- **calls**: every tool call with its response (paired by id), the shell command it ran (aider's
  ``/run`` and ``/test`` commands included, its other slash commands not), its
  output, whether it failed (flagged, or a non-zero exit code) and the exit code's line
  (``<returncode>1</returncode>``, ``Exit code 1``);
- **agent texts**: what the assistant wrote, per message.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping
from dataclasses import dataclass, field

from pydantic import JsonValue

from workbench._json_types import JSONValue
from workbench.messages import Message
from workbench.metrics._common import normalize_ws
from workbench.probes._evidence import message_texts
from workbench.probes._transcript import is_human
from workbench.sessions import Session, meta_list, meta_records

__all__ = ["Call", "History", "Turn"]

SHELL_TOOLS = frozenset({"bash", "shell", "sh", "run", "execute_bash", "execute_command",
                         "exec_command", "local_shell", "terminal", "run_command",
                         "run_terminal_cmd", "container.exec"})
"""Tool names (lowercased, extension prefix dropped) whose ``command`` is a shell command."""
NOT_SHELL = frozenset({"open", "goto", "scroll_up", "scroll_down", "create", "edit", "insert",
                       "search_file", "search_dir", "find_file", "submit", "str_replace_editor",
                       "filemap", "view"})
"""SWE-agent's own commands: their ``command`` argument is not run by a shell."""
_EXIT_LINES = (re.compile(r"^[ \t]*<returncode>\s*(-?\d+)\s*</returncode>[ \t]*$", re.MULTILINE),
               re.compile(r"^[ \t]*Exit code (-?\d+)[ \t]*$", re.MULTILINE))
_COMMAND_KEYS = ("command", "cmd", "script")
_RUN_PREFIX = re.compile(r"^/(?:run|test)\s+")  # aider's /run and /test


@dataclass(frozen=True)
class Turn:
    """A message's text: `index` in the session, the `text` as written."""

    index: int
    text: str


@dataclass(frozen=True)
class Call:
    """One tool call and what came back.

    Attributes:
        index: The message index of the call.
        id: The call id.
        name: The tool name.
        arguments: The call's arguments.
        command: The shell command it ran (``""`` for a tool that is not a shell).
        result: The message index of its response (None: unanswered).
        output: The response's text (a failed call's error text).
        failed: The response was flagged as an error or printed a non-zero exit code.
        exit_code: The exit code the output printed (None when it printed none).
        exit_line: The line that printed it, verbatim.
    """

    index: int
    id: str
    name: str
    arguments: dict[str, JsonValue]
    command: str = ""
    result: int | None = None
    output: str = ""
    failed: bool = False
    exit_code: int | None = None
    exit_line: str = ""

    @property
    def tool(self) -> str:
        """The lowercased tool name without an extension prefix (``developer__shell``)."""
        return self.name.lower().rsplit("__", 1)[-1]


def _command(name: str, arguments: Mapping[str, JSONValue]) -> str:
    tool = name.lower().rsplit("__", 1)[-1]
    text = next((v for k in _COMMAND_KEYS if isinstance(v := arguments.get(k), str)), "")
    if not text or tool in NOT_SHELL:
        return ""
    text = _RUN_PREFIX.sub("", text.strip())
    if text.startswith("/") and not text.split(None, 1)[0].count("/") > 1:
        return ""  # aider's own commands (/undo, /add f, /clear) run no shell
    first = text.split(None, 1)[0] if text.split() else ""
    if tool in SHELL_TOOLS or first not in NOT_SHELL:
        return text
    return ""


def _exit(output: str) -> tuple[int | None, str]:
    for pattern in _EXIT_LINES:
        match = pattern.search(output)
        if match:
            return int(match.group(1)), match.group(0).strip()
    return None, ""


@dataclass
class History:
    """A transcript read once for the extractors (see the module docstring).

    Attributes:
        session: The session (or the prefix a question set covers).
        messages: Its messages.
        human: The human turns, in order.
        calls: Every tool call, in order.
        agent: The assistant's texts, in order.
    """

    session: Session
    messages: list[Message]
    human: list[Turn] = field(default_factory=list)
    calls: list[Call] = field(default_factory=list)
    agent: list[Turn] = field(default_factory=list)

    @classmethod
    def read(cls, session: Session) -> History:
        """Read `session` (see the module docstring)."""
        history = cls(session, list(session.messages))
        summaries = {normalize_ws(str(r.get("text") or ""))
                     for r in meta_records(session, "reference_summaries")}
        demos = set(meta_list(session, "demonstration_messages"))
        responses: dict[str, tuple[int, str, bool]] = {}
        for index, message in enumerate(history.messages):
            for response in message.tool_responses():
                result = response.tool_result
                text = response.text() if result.ok else str(result.error or "")
                responses.setdefault(response.id, (index, text, result.is_error))
        for index, message in enumerate(history.messages):
            text = message.concat_text().strip()
            if message.role == "assistant" and text:
                history.agent.append(Turn(index, text))
            elif (text and message.is_agent_visible and index not in demos
                  and is_human(message, text) and normalize_ws(text) not in summaries):
                history.human.append(Turn(index, text))
            for request in message.tool_requests():
                history.calls.append(_call(index, request.id, request.name or "",
                                           request.arguments or {}, responses))
        return history

    @functools.cached_property
    def corpus(self) -> str:
        """Every text of the session (`message_texts`), whitespace-normalised, one per line."""
        return "\n".join(normalize_ws(t) for m in self.messages for t in message_texts(m))

    @functools.cached_property
    def corpus_lower(self) -> str:
        """`corpus`, lowercased (what a blank's leading words are looked for in)."""
        return self.corpus.lower()

    def tool_outputs(self) -> list[Call]:
        """The calls that were answered, in order."""
        return [c for c in self.calls if c.result is not None]


def _call(index: int, call_id: str, name: str, arguments: dict[str, JsonValue],
          responses: dict[str, tuple[int, str, bool]]) -> Call:
    command = _command(name, arguments)
    found = responses.get(call_id)
    if found is None:
        return Call(index, call_id, name, arguments, command)
    result, output, flagged = found
    code, line = _exit(output)
    return Call(index, call_id, name, arguments, command, result, output,
                flagged or bool(code), code, line)
