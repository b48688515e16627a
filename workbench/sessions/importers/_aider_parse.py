"""Line scanner for aider's ``.aider.chat.history.md``: sessions split into typed blocks.

One pass over the lines, no backtracking, so the cost is linear in the file size. A block is a
run of lines of one kind: ``user`` (``#### `` input), ``tool`` (``> `` output of aider itself,
commands, lint and tests) or ``assistant`` (unprefixed markdown). The tricky parts:

- aider prefixes only the first line of a multi-line output with ``> `` and appends two spaces
  only after its last line, so after a ``> `` line without the two trailing spaces the
  following lines belong to that output until a line that ends with two spaces (a
  whitespace-only line does not count: it is a blank line of indented output);
- inside an assistant reply, fenced code and SEARCH/REPLACE bodies may hold lines that look
  like input (``#### ``) or output (``> ``); they stay in the reply. A line that is surely
  aider's (``> Tokens:``, ``> Applied edit``, ``> ^C``, a ``#### `` input with its two
  trailing spaces) still ends an unterminated fence, so an interrupted reply cannot swallow
  the rest of the session;
- a ``#### heading`` without the two trailing spaces inside a reply is markdown, not input.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

HEADER = re.compile(r"# aider chat started at (\d{4}-\d\d-\d\d \d\d:\d\d:\d\d)")
SEARCH = re.compile(r"<{5,9} SEARCH\s*$")
DIVIDER = re.compile(r"={5,9}\s*$")
REPLACE = re.compile(r">{5,9} REPLACE\s*$")
SURELY_AIDER = re.compile(r"> (Tokens: |Applied edit to |\^C |Commit [0-9a-f]{7} )")


@dataclass
class Block:
    """A run of lines of one kind; `line` is the 1-based line of its first line."""

    kind: str
    line: int
    lines: list[str] = field(default_factory=list)

    @property
    def text(self) -> str:
        """The lines joined with newlines."""
        return "\n".join(self.lines)


@dataclass
class RawSession:
    """One ``# aider chat started at`` section (or the headerless start of the file)."""

    started: str | None
    line: int
    blocks: list[Block] = field(default_factory=list)


def _is_input(line: str) -> bool:
    return line.startswith("#### ") or line == "####"


def _is_output(line: str) -> bool:
    return line.startswith("> ") or line == ">"


def _strip_end(line: str) -> str:
    return line[:-2] if line.endswith("  ") else line


class _Scanner:
    def __init__(self) -> None:
        self.sessions: list[RawSession] = [RawSession(None, 1)]
        self.block: Block | None = None
        self.in_fence = False
        self.in_edit = False
        self.output_open = False

    def close(self) -> None:
        if self.block is not None:
            self.sessions[-1].blocks.append(self.block)
        self.block = None
        self.in_fence = self.in_edit = self.output_open = False

    def add(self, kind: str, lineno: int, text: str) -> None:
        if self.block is None or self.block.kind != kind:
            self.close()
            self.block = Block(kind, lineno)
        self.block.lines.append(text)

    def reply_line(self, lineno: int, line: str) -> None:
        self.add("assistant", lineno, line)
        if self.in_edit:
            if REPLACE.match(line):
                self.in_edit = False
        elif SEARCH.match(line):
            self.in_edit = True
        elif line.startswith("```") or line.startswith("<source>") or line == "</source>":
            self.in_fence = not self.in_fence

    def feed(self, lineno: int, line: str) -> None:
        kind = self.block.kind if self.block is not None else None
        if kind == "assistant" and (self.in_fence or self.in_edit):
            surely_input = _is_input(line) and line.endswith("  ")
            if not (surely_input or SURELY_AIDER.match(line)):
                self.reply_line(lineno, line)
                return
        if kind == "tool" and self.output_open:
            if not (_is_input(line) or _is_output(line)):
                self.block.lines.append(_strip_end(line))  # type: ignore[union-attr]
                if line.endswith("  ") and line.strip():
                    self.output_open = False
                return
            self.output_open = False
        if _is_input(line) and not (kind == "assistant" and not line.endswith("  ")):
            self.add("user", lineno, _strip_end(line[5:]))
        elif _is_output(line):
            self.add("tool", lineno, _strip_end(line[2:]))
            self.output_open = not line.endswith("  ") and line != ">"
        elif not line.strip():
            if kind == "assistant":
                self.reply_line(lineno, line)
            elif kind == "user":
                self.close()
            # A blank line between two outputs keeps them in one tool block.
        else:
            self.reply_line(lineno, line)


def scan(text: str) -> list[RawSession]:
    """Split an aider chat history into sessions of typed blocks.

    The first element is the part before the first header (``started`` None); it is empty when
    the file starts with a header.
    """
    scanner = _Scanner()
    for lineno, line in enumerate(text.splitlines(), 1):
        m = HEADER.match(line)
        if m and line.rstrip() == m.group(0):
            scanner.close()
            scanner.sessions.append(RawSession(m.group(1), lineno))
            continue
        scanner.feed(lineno, line)
    scanner.close()
    return scanner.sessions


@dataclass
class Edit:
    """One SEARCH/REPLACE block of an assistant reply."""

    path: str
    search: str
    replace: str


def split_edits(lines: list[str]) -> tuple[str, list[Edit]]:
    """Separate a reply's SEARCH/REPLACE blocks from its prose.

    Returns the prose (path lines and fences of the blocks removed) and the edits in order. A
    block without its own path line reuses the previous block's path, as aider does.
    """
    prose: list[str] = []
    edits: list[Edit] = []
    path = ""
    i, n = 0, len(lines)
    while i < n:
        line = lines[i]
        if not SEARCH.match(line):
            prose.append(line)
            i += 1
            continue
        if prose and _is_fence(prose[-1]):
            prose.pop()
            if prose and prose[-1].strip():
                path = _clean_path(prose.pop())
        search: list[str] = []
        replace: list[str] = []
        target = search
        i += 1
        while i < n and not REPLACE.match(lines[i]):
            if target is search and DIVIDER.match(lines[i]):
                target = replace
            else:
                target.append(lines[i])
            i += 1
        i += 1  # the REPLACE marker
        if i < n and _is_fence(lines[i]):
            i += 1
        if prose and not prose[-1].strip() and i < n and not lines[i].strip():
            i += 1  # the block sat between two blank lines: keep one
        edits.append(Edit(path, "\n".join(search), "\n".join(replace)))
    return "\n".join(prose).strip(), edits


def _is_fence(line: str) -> bool:
    return line.startswith("```") or line.startswith("<source>") or line == "</source>"


def _clean_path(line: str) -> str:
    return line.strip().strip("`*:").strip()
