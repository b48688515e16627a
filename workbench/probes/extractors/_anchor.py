"""Anchors: how a question names one tool call so that it can be found again.

A question about a call's outcome quotes the call: a shell command in backticks (``the command
`pytest -q tests/a.py```), else the tool and the file it acted on (``the `Edit` call on
`lib/app.ex```), else the first line of its own command (SWE-agent's ``edit 287:295``). The
anchor's text is also the cue ``lookup`` finds the call by. A call whose anchor repeats is asked
about only at its first or last run (`occurrences`), so the question can say which.
"""

from __future__ import annotations

from dataclasses import dataclass

from workbench.probes.extractors._common import mentions, one_line
from workbench.probes.extractors._history import Call, History

__all__ = ["Anchor", "anchor_of", "occurrences"]

PATH_KEYS = ("file_path", "path", "notebook_path", "file", "filename")


@dataclass(frozen=True)
class Anchor:
    """How a question names a call: `phrase` for the question text, `key` the string the
    call's arguments hold verbatim (the command, or the path), `cue` the words to find it,
    `tool` the tool a path anchor is about (``""``: any call holding `key`)."""

    phrase: str
    key: str
    cue: tuple[str, ...]
    tool: str = ""


def anchor_of(call: Call) -> Anchor | None:
    """The anchor of `call`, or None when it has none short enough to quote (or none that
    shows as written: a backslash, or quotes of both kinds, are escaped wherever the call is
    shown as JSON or a dict)."""
    if call.command:
        command = one_line(call.command)
        if command is None or "\\" in command or ("'" in command and '"' in command):
            return None
        return Anchor(f"the command `{command}`", command, (command.lower(),))
    path = next((v.strip() for k in PATH_KEYS if isinstance(v := call.arguments.get(k), str)
                 and v.strip()), "")
    if path and one_line(path):
        return Anchor(f"the `{call.name}` call on `{path}`", path,
                      (path.lower(), call.name.lower()), call.name)
    own = str(call.arguments.get("command") or "").strip().split("\n", 1)[0]
    if own and one_line(own):
        return Anchor(f"the `{own}` command", own, (own.lower(),))
    return None


def _mentions(call: Call, anchor: Anchor) -> bool:
    if anchor.tool and call.name != anchor.tool:
        return False
    if call.command:
        return mentions(call.command, anchor.key)
    return any(isinstance(v, str) and mentions(v, anchor.key) for v in call.arguments.values())


def occurrences(history: History, anchor: Anchor) -> list[Call]:
    """The calls that mention `anchor` (a longer command holding it counts: it ran it too)."""
    return [c for c in history.calls if _mentions(c, anchor)]
