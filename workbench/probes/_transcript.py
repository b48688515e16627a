"""What a transcript alone says: files modified, tool calls and their main arguments, texts.

Real sessions carry no manifest, so their ground truth is read from what the agent did:

- `modified_files`: paths of tool calls that write (``Write``, ``Edit``, ``edit_file``,
  ``str_replace_editor`` with a writing ``command``, ``apply_patch``...), in first-touch order;
- `main_argument`: what a tool call acts on, the part two calls must share to count as the same
  action: its file path (argument keys in `PATH_KEYS`), else its command's head
  (`normalize_command`: ``git status``, ``mix test``), else its pattern, query or URL;
- `message_text`: every text a message shows the agent (texts, tool outputs, tool calls).
"""

from __future__ import annotations

import json
import re
import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from workbench._json_types import JSONObject, JSONValue
from workbench.messages import Message
from workbench.metrics._files import command_paths, normalize_path
from workbench.probes._normalize import normalize_command

__all__ = ["HARNESS_REPLIES", "INJECTED_TAGS", "ToolAction", "action_of", "call_head", "is_human",
           "is_injected",
           "main_argument", "message_text", "modified_files", "shell_file_ops", "tool_actions",
           "written_paths"]

PATH_KEYS = ("file_path", "path", "notebook_path", "file", "filename", "target_file")
COMMAND_KEYS = ("command", "cmd", "script")
QUERY_KEYS = ("pattern", "query", "url", "regex", "glob")
WRITE_TOOLS = frozenset({
    "write", "edit", "multiedit", "notebookedit", "write_file", "edit_file", "create_file",
    "delete_file", "apply_patch", "str_replace", "insert", "create", "replace_in_file",
    "append_file", "patch", "search_replace", "replace_file_content", "write_to_file"})
"""Tool names (lowercased) whose path argument is a file the call modifies."""
EDITOR_TOOLS = frozenset({"str_replace_editor", "text_editor", "developer__text_editor",
                          "str_replace_based_edit_tool", "editor"})
"""Editor tools that modify only for some values of their ``command`` argument."""
EDITOR_WRITES = frozenset({"create", "write", "str_replace", "insert", "edit", "undo_edit"})
SHELL_WRITES = frozenset({"rm", "git rm", "mv", "git mv", "touch"})
"""Shell command heads whose path arguments are files the call deletes, moves or creates."""
READERS = frozenset({"cat", "nl", "head", "tail", "less", "more", "wc"})
"""Shell programs whose path arguments are files they read."""
INJECTED_TAGS = frozenset({
    "task-notification", "command-name", "command-message", "command-args",
    "local-command-stdout", "local-command-stderr", "local-command-caveat", "system-reminder",
    "user-prompt-submit-hook", "bash-input", "bash-stdout", "bash-stderr"})
"""Tags that open a user-role text an agent or a hook wrote, not the human (Claude Code's
hook, command and background-task echoes). A task a harness wraps in its own tags
(mini-swe-agent's ``<pr_description>``) is the human's request."""
HARNESS_REPLIES = ("Please always provide EXACTLY ONE action in triple backticks",
                   "The last command <command>")
"""How an agent harness's own user-role replies open (mini-swe-agent's format-error and
timeout messages): the harness wrote them, not the human."""
NOT_HUMAN_FLAGS = ("isMeta", "isDemo", "compactSummary")
"""Message metadata flags the importers set on user messages nobody typed: a skill's text
(Claude Code's ``isMeta``), a pasted demonstration (SWE-agent), the recorded summary. A
``recordedRole`` other than ``user`` (a system message kept in the user role) is not typed
by the human either."""
_INJECTED = re.compile(r"^\s*<([a-z][\w-]*)>")
_PATCH_FILE = re.compile(r"^\*\*\* (?:Add|Update|Delete) File: (.+)$", re.MULTILINE)


@dataclass(frozen=True)
class ToolAction:
    """A tool call reduced to what it does: the tool and its main argument.

    Attributes:
        tool: The tool name as called (None: the turn called no tool).
        kind: ``path``, ``command``, ``query`` or ``""`` (no main argument).
        argument: The normalised main argument (``""`` when there is none).
    """

    tool: str | None
    kind: str = ""
    argument: str = ""

    def to_dict(self) -> JSONObject:
        """JSON-ready."""
        return {"tool": self.tool, "kind": self.kind, "argument": self.argument}

    def describe(self) -> str:
        """``Edit lib/app.ex``, ``Bash git status``, or ``no tool call``."""
        if self.tool is None:
            return "no tool call"
        return f"{self.tool} {self.argument}".strip()


def main_argument(arguments: Mapping[str, JSONValue] | None) -> tuple[str, str]:
    """``(kind, normalised argument)`` of a tool call's arguments (see the module docstring)."""
    args = arguments or {}
    for key in PATH_KEYS:
        value = args.get(key)
        if isinstance(value, str) and value.strip():
            return "path", normalize_path(value)
    for key in COMMAND_KEYS:
        value = args.get(key)
        if isinstance(value, str) and value.strip():
            return "command", normalize_command(value)
    for key in QUERY_KEYS:
        value = args.get(key)
        if isinstance(value, str) and value.strip():
            return "query", " ".join(value.split())
    return "", ""


def action_of(name: str | None, arguments: Mapping[str, JSONValue] | None) -> ToolAction:
    """The `ToolAction` of one tool call."""
    if name is None:
        return ToolAction(None)
    kind, argument = main_argument(arguments)
    return ToolAction(name, kind, argument)


def call_head(name: str, arguments: Mapping[str, JSONValue] | None) -> str:
    """What a tool call does, without what it carries: its name, its command's first line
    and its path arguments (not a file's content, nor an edit's old and new text, whose
    words would say anything)."""
    args = arguments or {}
    parts = [name]
    for key in COMMAND_KEYS:
        value = args.get(key)
        if isinstance(value, str):
            parts.append(value.strip().split("\n", 1)[0])
    parts.extend(v for k in PATH_KEYS if isinstance(v := args.get(k), str))
    return " ".join(p for p in parts if p)


def tool_actions(messages: Sequence[Message]) -> list[ToolAction]:
    """Every tool call of `messages` as a `ToolAction`, in order."""
    return [action_of(r.name or "", r.arguments) for m in messages for r in m.tool_requests()]


def _paths(arguments: Mapping[str, JSONValue]) -> list[str]:
    return [normalize_path(v) for k in PATH_KEYS
            if isinstance(v := arguments.get(k), str) and v.strip()]


def _patch_paths(arguments: Mapping[str, JSONValue]) -> list[str]:
    """Files an ``apply_patch`` body names (``*** Update File: path``), direct or in a shell."""
    for key in ("input", "patch", "command"):
        text = arguments.get(key)
        if isinstance(text, str) and "*** " in text:
            return [normalize_path(p) for p in _PATCH_FILE.findall(text)]
    return []


def _segments(line: str) -> list[list[str]]:
    """A shell line's simple commands (cut at ``&&``, ``||``, ``;``, ``|``, quotes kept), each
    as its words with redirection operators as words of their own."""
    lexer = shlex.shlex(line, posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    try:
        tokens = list(lexer)
    except ValueError:  # an unclosed quote: the line as plain words
        tokens = line.split()
    out: list[list[str]] = [[]]
    for token in tokens:
        if token in ("&&", "||", ";", "|", "&", ";;"):
            out.append([])
        else:
            out[-1].append(token)
    return [words for words in out if words]


def _file_like(token: str) -> bool:
    """A file name: with an extension, or a dot file (``.env``); no glob or variable."""
    name = token.rsplit("/", 1)[-1]
    dotted = "." in name.strip(".") or (name.startswith(".") and len(name) > 1
                                        and name != "..")
    return (dotted and not token.startswith("/dev/")
            and not any(c in token for c in "*?$`{}()=&<>|;"))


def shell_file_ops(command: str) -> list[tuple[str, str]]:
    """``(path, how)`` of the files a shell command's first line touches, in order: ``write``
    (a redirect or ``tee`` into it), ``edit`` (``sed -i``), ``create`` (``touch``), ``delete``
    (``rm``, ``git rm``) or ``read`` (``cat``, ``nl``, ``head``, ``tail``, ``sed -n``...)."""
    out: list[tuple[str, str]] = []
    for words in _segments(command.split("\n", 1)[0]):
        plain: list[str] = []
        for n, word in enumerate(words):
            if word in (">", ">>") and n + 1 < len(words):
                out.append((words[n + 1], "write"))
            elif word[:1] not in ("<", ">") and (n == 0 or words[n - 1][:1] not in ("<", ">")):
                plain.append(word)
        if not plain:
            continue
        program, args = plain[0].rsplit("/", 1)[-1], plain[1:]
        if program == "git" and args[:1] == ["rm"]:
            program, args = "rm", args[1:]
        named = [a for a in args if not a.startswith("-")]
        if program == "sed":
            scripted = any(a.startswith("-e") for a in args)
            how = "edit" if any(a.startswith("-i") for a in args) else "read"
            out.extend((a, how) for a in (named if scripted else named[1:]))
        else:
            how = {"rm": "delete", "touch": "create", "tee": "write"}.get(
                program, "read" if program in READERS else "")
            out.extend((a, how) for a in named if how)
    return [(p, how) for p, how in out if _file_like(p)]


def _shell_paths(arguments: Mapping[str, JSONValue]) -> list[str]:
    """Files a shell command deletes, moves or creates (``rm``, ``git rm``, ``mv``, ``touch``),
    else writes or edits (a redirect, ``tee``, ``sed -i``)."""
    command = next((v for k in COMMAND_KEYS if isinstance(v := arguments.get(k), str)), "")
    head = normalize_command(command) if command else ""
    if head in SHELL_WRITES:
        return command_paths(command)
    return [normalize_path(p) for p, how in shell_file_ops(command) if how != "read"]


def _own_create(tool: str, arguments: Mapping[str, JSONValue]) -> list[str]:
    """SWE-agent's ``create path`` command: the file it creates."""
    words = str(arguments.get("command") or "").split("\n", 1)[0].split()
    if tool == "create" and words[:1] == ["create"] and len(words) == 2:
        return [normalize_path(words[1])]
    return []


def written_paths(name: str, arguments: Mapping[str, JSONValue]) -> list[str]:
    """The paths one tool call writes, creates or deletes (none for a call that only reads)."""
    lower = name.lower()
    base = lower.rsplit("__", 1)[-1]  # Goose prefixes tools with their extension
    if lower in EDITOR_TOOLS or base in EDITOR_TOOLS:
        writes = str(arguments.get("command") or "").lower() in EDITOR_WRITES
        return _paths(arguments) if writes else []
    if base in WRITE_TOOLS:
        return _paths(arguments) or _patch_paths(arguments) or _own_create(base, arguments)
    return _patch_paths(arguments) or _shell_paths(arguments)


def modified_files(messages: Sequence[Message]) -> list[str]:
    """Distinct paths the session's tool calls wrote, created or deleted, in first-touch order."""
    seen: dict[str, None] = {}
    for message in messages:
        for request in message.tool_requests():
            for path in written_paths(request.name or "", request.arguments or {}):
                if path:
                    seen.setdefault(path, None)
    return list(seen)


def is_injected(text: str) -> bool:
    """True for a user-role text that an agent, a hook or a harness injected rather than the
    human typed (it opens with one of `INJECTED_TAGS`: ``<task-notification>``,
    ``<command-name>``, ``<system-reminder>``...; or as one of `HARNESS_REPLIES`)."""
    match = _INJECTED.match(text)
    return ((match is not None and match.group(1) in INJECTED_TAGS)
            or text.lstrip().startswith(HARNESS_REPLIES))


def is_human(message: Message, text: str) -> bool:
    """True for a user message the human typed: shown to the user, no tool output, not a
    per-turn context, no `NOT_HUMAN_FLAGS` flag, and `text` (its text) not injected."""
    flags = message.metadata.model_extra or {}
    return (message.role == "user" and message.is_user_visible
            and not message.has_tool_response() and not message.is_turn_context
            and not any(flags.get(f) for f in NOT_HUMAN_FLAGS)
            and flags.get("recordedRole", "user") == "user" and not is_injected(text))


def message_text(message: Message) -> str:
    """Everything `message` shows the agent, as text: texts, tool outputs, then tool calls."""
    parts = [message.concat_text()]
    for response in message.tool_responses():
        result = response.tool_result
        parts.append(response.text() if result.ok else str(result.error or ""))
    for request in message.tool_requests():
        args = request.arguments or {}
        parts.append(f"{request.name} {json.dumps(args, ensure_ascii=False)}")
    return "\n".join(p for p in parts if p)
