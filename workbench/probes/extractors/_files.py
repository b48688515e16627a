"""Files: which files the session created, edited, deleted or only read, from its tool calls.

Every tool call is read for the files it touches and how (`file_touches`):

- writing tools (``Write``, ``Edit``, ``str_replace_editor``, ``apply_patch``, aider's edit
  blocks...: `workbench.probes._transcript.written_paths`): a file is *created* when the tool
  says so (``File created successfully``, an editor's ``create``, an edit block with nothing to
  search) or was never seen before the write, else *edited*;
- shell commands: a redirect or ``tee`` into a file (created, or edited when it was read
  before), ``sed -i`` (edited), ``touch`` (created), ``rm`` / ``git rm`` (deleted);
- SWE-agent's own commands: ``create f`` creates, ``edit a:b`` edits the open file (named by
  the output's ``[File: ...]`` line), ``open f`` reads;
- reading tools (``Read``, an editor's ``view``) and shell readers (``cat``, ``nl``, ``head``,
  ``tail``, ``sed -n``...) read.

Questions (kind *artifact*):

- which files were created, edited or deleted (a list, each item with its first write as
  evidence);
- for each written file whose fate one word says (only created, only edited, or deleted
  without being created first: a file created and then edited was both), whether it was
  created, edited or deleted;
- for each file only read, whether it was changed or only read.

The last two are answered from the tool calls (`Question.answer_in` ``call``): ``lookup``
reads what the calls naming the file did, not what they wrote into it.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

from workbench.metrics._common import normalize_ws
from workbench.metrics._files import normalize_path
from workbench.probes._questions import Evidence, Question
from workbench.probes._transcript import EDITOR_TOOLS, shell_file_ops, written_paths
from workbench.probes.extractors._common import cue_words
from workbench.probes.extractors._history import Call, History

__all__ = ["FileTouch", "file_questions", "file_touches"]

SOURCE = "transcript:files"
FILES_QUESTION = "Which files did we create, edit or delete in this session? List every path."
FILES_CUE = ["edited", "created", "wrote", "modified", "changed", "files"]
CHANGE_QUESTION = "Was the file `{path}` created, edited or deleted in this session?"
CHANGES = ["created", "edited", "deleted"]
READ_QUESTION = "Did we change the file `{path}` in this session, or only read it?"
READ_CHOICES = ["edited", "read"]
READ_TOOLS = frozenset({"read", "read_file", "view", "view_file", "open_file", "cat"})
_CREATED_SAYS = re.compile(r"\b(?:File created successfully|created successfully|"
                           r"Created file|New file created)\b", re.IGNORECASE)
_OPEN_FILE = re.compile(r"^\[File: (\S+) \(\d+ lines total\)\]", re.MULTILINE)


@dataclass(frozen=True)
class FileTouch:
    """One file touched by one call: how (``create``, ``edit``, ``delete``, ``read``), where
    (the message index of the call, or of the output that names the file), and the path as
    written there (`quote`)."""

    path: str
    how: str
    index: int
    quote: str


def _swe_agent(call: Call, current: str) -> tuple[list[FileTouch], str]:
    """SWE-agent's ``create``/``open``/``edit`` commands, and the file open after them."""
    text = str(call.arguments.get("command") or "").strip()
    words = text.split("\n", 1)[0].split()
    if not words or words[0] not in ("create", "open", "edit", "insert"):
        return [], current
    shown = _OPEN_FILE.search(call.output)
    if words[0] in ("create", "open") and len(words) > 1:
        path = words[1].strip("\"'")
        how = "create" if words[0] == "create" else "read"
        return [FileTouch(path, how, call.index, path)], path
    if shown and call.result is not None and not call.failed:
        return [FileTouch(shown.group(1), "edit", call.result, shown.group(1))], current
    return [], current


def file_touches(history: History) -> list[FileTouch]:
    """Every file touch of the session, in order (see the module docstring). A file named
    by its absolute path after a relative one (``/repo/a.py`` after ``a.py``) keeps the name
    it was first given."""
    out: list[FileTouch] = []
    seen: set[str] = set()
    current = ""
    for call in history.calls:
        tool = call.tool
        own = str(call.arguments.get("command") or "").split(None, 1)[:1]
        if tool in ("create", "open", "edit", "insert") and own == [tool]:
            touches, current = _swe_agent(call, current)
        else:
            touches = _tool_touches(call, seen)
        for touch in touches:
            known = next((p for p in seen if not p.startswith("/")
                          and touch.path.startswith("/") and touch.path.endswith("/" + p)), None)
            if known is not None:
                touch = FileTouch(known, touch.how, touch.index, touch.quote)
            seen.add(normalize_path(touch.path))
            out.append(touch)
    return out


def _tool_touches(call: Call, seen: set[str]) -> list[FileTouch]:
    arguments = call.arguments
    written = written_paths(call.name, arguments)
    touches: list[FileTouch] = []
    if written and not call.command:
        created = (bool(_CREATED_SAYS.search(call.output))
                   or str(arguments.get("command") or "") == "create"
                   or ("search" in arguments and not str(arguments.get("search") or "").strip()))
        for path in written:
            raw = _raw(arguments, path)
            how = "create" if created or (call.tool == "write" and path not in seen) else "edit"
            if call.tool in ("delete_file",):
                how = "delete"
            touches.append(FileTouch(raw, how, call.index, raw))
        return [t for t in touches if not call.failed]
    if call.command:
        for path, how in shell_file_ops(call.command):
            if how == "write":
                how = "edit" if normalize_path(path) in seen else "create"
            touches.append(FileTouch(path, how, call.index, path))
        return [] if call.failed else touches
    reading = call.tool in READ_TOOLS or (
        call.tool in EDITOR_TOOLS and str(arguments.get("command") or "") == "view")
    path = next((v for k in ("file_path", "path", "file") if isinstance(v := arguments.get(k), str)
                 and v.strip()), "")
    if reading and path and not call.failed:
        return [FileTouch(path.strip(), "read", call.index, path.strip())]
    return []


def _raw(arguments: Mapping[str, object], path: str) -> str:
    """The path as the call's arguments spell it (before normalisation)."""
    for value in arguments.values():
        if isinstance(value, str) and normalize_path(value) == path:
            return value.strip()
    return path


def _fate(ops: list[str]) -> str | None:
    """What happened to a file, when one word says it: only read, only created, only edited,
    or deleted (not created first); None for a mix (created, then edited)."""
    writes = set(o for o in ops if o != "read")
    if not writes:
        return "read"
    if writes == {"create"}:
        return "created"
    if writes == {"edit"}:
        return "edited"
    return "deleted" if ops[-1] == "delete" and "create" not in writes else None


def file_questions(history: History) -> list[Question]:
    """The artifact questions of the session (see the module docstring)."""
    touches = file_touches(history)
    by_path: dict[str, list[FileTouch]] = {}
    for touch in touches:
        by_path.setdefault(touch.path, []).append(touch)
    written = {p: ts for p, ts in by_path.items() if any(t.how != "read" for t in ts)}
    out: list[Question] = []
    if written:
        firsts = [next(t for t in ts if t.how != "read") for ts in written.values()]
        out.append(Question(
            id="", kind="artifact", text=FILES_QUESTION, expected=list(written), grader="list",
            answer_type="paths", source=SOURCE, cue=FILES_CUE,
            evidence=[Evidence(t.index, normalize_ws(t.quote)) for t in firsts]))
    for path, ts in by_path.items():
        fate = _fate([t.how for t in ts])
        if fate is None:
            continue
        if fate == "read":
            first = ts[0]
            out.append(Question(
                id="", kind="artifact", text=READ_QUESTION.format(path=path), expected="read",
                answer_type="choice", choices=READ_CHOICES, source=SOURCE,
                cue=cue_words(path, [path.lower()]), answer_in="call",
                evidence=[Evidence(first.index, normalize_ws(first.quote))]))
            continue
        decisive = next(t for t in reversed(ts) if t.how != "read")
        out.append(Question(
            id="", kind="artifact", text=CHANGE_QUESTION.format(path=path), expected=fate,
            answer_type="choice", choices=CHANGES, source=SOURCE,
            cue=cue_words(path, [path.lower()]), answer_in="call",
            evidence=[Evidence(decisive.index, normalize_ws(decisive.quote))]))
    return out
