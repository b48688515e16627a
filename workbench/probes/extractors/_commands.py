"""Commands: which commands the session ran, and what they printed.

- A shell call the agent described (Claude Code's ``Bash`` carries a ``description``: "Run the
  session tests") gives *which command did we run for "..."?*; the answer is the command, quoted
  exactly. A description whose words another call also holds is skipped (which call would the
  question mean?).
- A command that ran a program (not a reader or lister such as ``ls``, ``cat``, ``grep``: their
  output is a file, not an outcome) and succeeded gives *what did it print?*, at its first or
  last run: the last line of its output that says something (`outcome_line`), answered from the
  call's own output (`Question.answer_in`).

Failed commands are the failures extractor's. All are *recall* questions.
"""

from __future__ import annotations

import re
from collections import Counter

from workbench.metrics._common import normalize_ws, words
from workbench.probes._normalize import normalize_command
from workbench.probes._questions import Evidence, Question
from workbench.probes.extractors._anchor import anchor_of, occurrences
from workbench.probes.extractors._common import (
    MAX_LINE_CHARS,
    cue_words,
    occurrence,
    one_line,
    when,
)
from workbench.probes.extractors._history import Call, History

__all__ = ["command_questions", "outcome_line"]

SOURCE = "transcript:commands"
DESCRIBED_QUESTION = 'Which command did we run for "{description}"? Quote it exactly.'
PRINTED_QUESTION = "What did {anchor} print{when}? Quote its last line of output."
QUIET = frozenset("""
ls cat nl head tail less more grep rg find fd sed awk echo printf cd pwd wc sort uniq cut tr
diff cp mv rm mkdir touch chmod tree which file stat du df env export true false sleep
""".split())
"""Programs whose output is not an outcome (they show files or set things up)."""
QUIET_COMMANDS = frozenset({"git diff", "git show", "git log", "git blame", "git grep"})
"""Commands whose output is a file's text or history, not an outcome (a diff's last line is
some line of code)."""
_NOISE_LINE = re.compile(r"^(?:</?output>|<returncode>.*|\(Open file: .*\)"
                         r"|\(Current directory: .*\)"
                         r"|bash-\$.*|[=_\-*]{3,}|\s*)$")
_MIN_CHARS = 6


def outcome_line(output: str) -> str | None:
    """The last line of `output` that says something (not a prompt, a tag, a rule or an empty
    line), stripped; None when there is none or it is too long to quote."""
    for line in reversed(output.splitlines()):
        text = line.strip()
        if _NOISE_LINE.match(text) or len(text) < _MIN_CHARS:
            continue
        return text if len(text) <= MAX_LINE_CHARS else None
    return None


def _described(history: History) -> list[Question]:
    calls = [c for c in history.calls if c.command and isinstance(
        c.arguments.get("description"), str)]
    said = [set(words(" ".join(str(v) for v in c.arguments.values()))) for c in calls]
    commands = Counter(c.command.strip() for c in calls)
    out = []
    for n, call in enumerate(calls):
        description = str(call.arguments["description"]).strip().rstrip(".")
        command = call.command.strip()
        wanted = set(cue_words(description))
        if (not one_line(command) or "\\" in command or commands[command] > 1
                or len(wanted) < 2
                or any(wanted <= other for m, other in enumerate(said) if m != n)):
            continue  # another call says as much: which one is meant?
        out.append(Question(
            id="", kind="recall", text=DESCRIBED_QUESTION.format(description=description),
            expected=command, answer_type="text", source=SOURCE, cue=cue_words(description),
            answer_in="call",
            evidence=[Evidence(call.index, command)]))
    return out


def _runs_program(call: Call) -> bool:
    head = normalize_command(call.command)
    if head in QUIET_COMMANDS or call.output.lstrip().startswith(("diff --git", "<returncode>0"
                                                                  "</returncode>\n<output>\ndiff")):
        return False
    return bool(head) and head.split(" ", 1)[0] not in QUIET


def command_questions(history: History) -> list[Question]:
    """The command questions of the session (see the module docstring)."""
    out = _described(history)
    asked: set[tuple[str, int]] = set()
    for call in history.calls:
        if (not call.command or call.failed or call.result is None
                or not _runs_program(call)):
            continue
        anchor = anchor_of(call)
        line = outcome_line(call.output)
        if anchor is None or line is None:
            continue
        runs = occurrences(history, anchor)
        n = next((i for i, c in enumerate(runs) if c is call), -1)
        if n not in when(len(runs)) or (anchor.key, n) in asked:
            continue
        asked.add((anchor.key, n))
        position, phrase = occurrence(n, len(runs))
        out.append(Question(
            id="", kind="recall", text=PRINTED_QUESTION.format(anchor=anchor.phrase, when=phrase),
            expected=line, answer_type="text", source=SOURCE, cue=list(anchor.cue),
            position=position, answer_in="output",
            evidence=[Evidence(call.result, normalize_ws(line))]))
    return out
