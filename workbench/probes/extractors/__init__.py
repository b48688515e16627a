"""Extractors: questions a transcript alone can ground, one kind of fact per module.

A recording without a manifest (a user's own Claude Code, Codex, SWE-agent... session) is read
once (`History`) and each extractor turns one kind of fact into questions, each with its
evidence (the message and the verbatim span that hold the answer):

- `file_questions` (*artifact*): files created, edited, deleted or only read;
- `failure_questions` (*recall*): error messages, exit codes and failing tests of failed calls;
- `command_questions` (*recall*): which command did what, and what it printed;
- `identifier_questions` (*recall*): functions, classes, endpoints, versions, commit hashes,
  numeric limits;
- `constraint_questions` (*decision*): what the user required or forbade;
- `request_questions` (*continuation*): the last request, the task, what was pending, the
  last tool call;
- `update_questions` (*recall*): values that changed, asked for the newest.

`EXTRACTORS` names them in that order; `workbench.probes.build_transcript_questions` runs them,
checks every question's evidence and keeps a number of questions that grows with the session.
"""

from collections.abc import Callable

from workbench.probes._questions import Question
from workbench.probes.extractors._commands import command_questions
from workbench.probes.extractors._constraints import constraint_questions
from workbench.probes.extractors._failures import failure_questions
from workbench.probes.extractors._files import file_questions
from workbench.probes.extractors._history import Call, History, Turn
from workbench.probes.extractors._identifiers import identifier_questions
from workbench.probes.extractors._requests import request_questions
from workbench.probes.extractors._updates import update_questions

__all__ = ["EXTRACTORS", "Call", "History", "Turn", "command_questions", "constraint_questions",
           "failure_questions", "file_questions", "identifier_questions", "request_questions",
           "update_questions"]

EXTRACTORS: dict[str, Callable[[History], list[Question]]] = {
    "files": file_questions,
    "failures": failure_questions,
    "commands": command_questions,
    "identifiers": identifier_questions,
    "constraints": constraint_questions,
    "requests": request_questions,
    "updates": update_questions,
}
"""Extractor name -> the function; a question's source is ``transcript:<name>``."""
