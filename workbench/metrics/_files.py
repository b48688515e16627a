"""Files probe: which file paths the tools touched, and which of them the summary still names.

Paths come from two places:

- tool-call arguments under the keys in `PATH_KEYS` (a string, or a list of strings for ``paths``);
- path-like tokens of shell commands (argument keys in `COMMAND_KEYS`). To stay precise a token
  counts only when it holds a ``/`` or ends in a known file extension (`FILE_EXTENSIONS`: so
  ``pydicom.dataset`` or ``ds.Rows`` do not count), is not an option, URL, glob, variable or
  redirection, and is not ``/dev/null``.

Paths are normalised: surrounding quotes and trailing punctuation dropped, a ``:line[:col]``
suffix and a pytest ``::node`` suffix dropped, leading ``./`` removed, a trailing ``/`` removed.
A path is *recalled* when the summary holds it, or a trailing part of it with at least two
components (``src/app.py`` for ``/repo/src/app.py``, since summaries often make paths relative). Naming only the basename is a weaker match, counted
separately as ``files_basename_recalled`` (those files are still listed as missing).
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Mapping

from pydantic import JsonValue

from workbench._memo import memo
from workbench.messages import Message
from workbench.metrics._common import ProbeResult
from workbench.metrics._registry import MetricInput, metric
from workbench.metrics._shared import probe_once

PATH_KEYS = ("path", "file", "file_path", "filename", "target_file", "paths")
COMMAND_KEYS = ("command", "cmd", "script")

FILE_EXTENSIONS = frozenset("""
py pyi pyx ipynb md rst txt json jsonl yaml yml toml cfg ini conf env lock log csv tsv xml html
htm css scss sass less js mjs cjs ts tsx jsx vue svelte rs go java kt kts scala c h cc cpp cxx hpp
hh cs fs rb php pl pm lua r jl swift m mm dart ex exs heex eex erl hs ml clj sh bash zsh fish ps1
bat sql graphql proto tf hcl gradle properties mk cmake dockerfile patch diff png jpg jpeg gif svg
pdf zip gz tar whl so dll txt out err bak tmp db sqlite ts lockb template j2 jinja tpl
""".split())
"""Extensions that make a slash-less shell token a file name (``setup.cfg``, ``notes.md``)."""

_EXT = re.compile(r"\.([A-Za-z][A-Za-z0-9_]{0,9})$")
_LINE_SUFFIX = re.compile(r"(?::\d+){1,2}$")
_BAD_CHARS = set("|&;<>$*?`{}[]()!=\"'\\")
_IGNORED = {"/dev/null", "/dev/stdout", "/dev/stderr", "/", ".", "..", "~"}


def normalize_path(raw: str) -> str:
    """Normalise one path string (see the module docstring); may return an empty string."""
    p = raw.strip().strip("\"'`").rstrip(",;:)")
    p = p.split("::", 1)[0]  # a pytest node id names its file first
    p = _LINE_SUFFIX.sub("", p)
    while p.startswith("./"):
        p = p[2:]
    if len(p) > 1:
        p = p.rstrip("/")
    return p


def _looks_like_path(token: str) -> bool:
    if not token or token.startswith("-") or "://" in token or any(c in _BAD_CHARS for c in token):
        return False
    if token.startswith("@") or token in _IGNORED:
        return False
    if "/" in token:
        return True
    ext = _EXT.search(token)
    return ext is not None and ext.group(1).lower() in FILE_EXTENSIONS


def command_paths(command: str) -> list[str]:
    """Path-like tokens of a shell command, normalised, in order of appearance.

    Every cell of a session (and every round of a replay) reads the same commands: the answer
    depends on the text alone, so each distinct command is split once (the run memo's
    ``command_paths``)."""
    return list(memo().command_paths.get_or(command, lambda: _command_paths(command)))


def _command_paths(command: str) -> tuple[str, ...]:
    try:
        tokens = shlex.split(command, comments=False, posix=True)
    except ValueError:
        tokens = command.split()
    out = []
    for tok in tokens:
        if any(c.isspace() for c in tok):
            continue  # a quoted script or message, not a path
        if tok.startswith("--") and "=" in tok:
            tok = tok.split("=", 1)[1]
        p = normalize_path(tok)
        is_dir = tok.rstrip(",;:)").endswith("/")
        if p not in _IGNORED and (_looks_like_path(p) or (is_dir and _looks_like_path(p + "/"))):
            out.append(p)
    return tuple(out)


def _argument_paths(arguments: Mapping[str, JsonValue]) -> list[str]:
    out: list[str] = []
    for key in PATH_KEYS:
        value = arguments.get(key)
        values = value if isinstance(value, list) else [value]
        for v in values:
            if isinstance(v, str):
                p = normalize_path(v)
                if p and p not in _IGNORED:
                    out.append(p)
    for key in COMMAND_KEYS:
        value = arguments.get(key)
        if isinstance(value, str):
            out.extend(command_paths(value))
    return out


def touched_files(messages: list[Message]) -> list[str]:
    """Distinct file paths that tool calls touched, in order of first appearance.

    Every cell of a session asks this of the same messages: the answer is worked out once per
    list of message objects while they are unchanged (the run memo's ``session_facts``).

    Args:
        messages: The session's messages.

    Returns:
        Normalised paths from tool-call arguments and shell commands.
    """
    return list(memo().session_facts.get(messages, "touched files", _touched_files, messages))


def _touched_files(messages: list[Message]) -> tuple[str, ...]:
    seen: dict[str, None] = {}
    paths = memo().touched_paths
    for msg in messages:
        for p in paths.get(msg, None, _message_paths, msg):
            seen.setdefault(p, None)
    return tuple(seen)


def _message_paths(msg: Message) -> tuple[str, ...]:
    paths: list[str] = []
    for req in msg.tool_requests():
        if req.arguments:
            paths.extend(_argument_paths(req.arguments))
    return tuple(paths)


def path_suffixes(path: str) -> list[str]:
    """The path itself and its trailing parts with at least two components."""
    parts = [p for p in path.split("/") if p]
    out = [path]
    for i in range(1, len(parts) - 1):
        out.append("/".join(parts[i:]))
    return out


def _mentions(summary: str, needle: str) -> bool:
    """True when `summary` holds `needle` not as the middle of a longer name: `app.py` inside
    `myapp.py` does not count (no word character, ``.`` or ``-`` before it, no word character
    or ``-`` after it). A substring search checking the characters around each find: no
    pattern is compiled per path."""
    size = len(needle)
    start = summary.find(needle)
    while start >= 0:
        end = start + size
        if ((start == 0 or not _name_char(summary[start - 1], ".-"))
                and (end == len(summary) or not _name_char(summary[end], "-"))):
            return True
        start = summary.find(needle, start + 1)
    return False


def _name_char(ch: str, also: str) -> bool:
    """A word character (as the ``re`` module's ``\\w`` tells it), or one of `also`."""
    return ch.isalnum() or ch == "_" or ch in also


def _probe_items(messages: list[Message]) -> tuple[tuple[str, tuple[str, ...], str], ...]:
    """Per touched file: its path, the suffixes that name it, its basename."""
    return tuple((path, tuple(path_suffixes(path)), path.rsplit("/", 1)[-1])
                 for path in touched_files(messages))


@probe_once
def files_probe(messages: list[Message], summary_text: str) -> ProbeResult:
    """Which touched files the summary names.

    Args:
        messages: The session's messages.
        summary_text: The summary text.

    Returns:
        A `ProbeResult`; ``extra`` holds ``files_basename_recalled`` (files named only by basename).
    """
    files = memo().session_facts.get(messages, "files probe", _probe_items, messages)
    recalled, basename_only, missing = 0, 0, []
    for path, suffixes, base in files:
        if any(_mentions(summary_text, s) for s in suffixes):
            recalled += 1
            continue
        if base and _mentions(summary_text, base):
            basename_only += 1
        missing.append(path)
    return ProbeResult(total=len(files), recalled=recalled, missing=missing,
                       extra={"files_basename_recalled": basename_only})


@metric("files")
def files_metrics(inp: MetricInput) -> dict[str, float | int | None]:
    """``files_total``, ``files_recalled``, ``files_recall``, ``files_basename_recalled``."""
    return files_probe(inp.session.messages, inp.summary_text).as_metrics("files")
