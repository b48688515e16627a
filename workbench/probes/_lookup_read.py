"""What ``lookup`` reads out of the passages it chose (`workbench.probes._lookup`).

- `subject_terms`: what a question is about, by the names it puts in backticks;
- `values_in`: the value of a question's answer type in the best passages: after the words
  before a blank when the question has some, else the first such value a passage holds that
  the question does not;
- `text_error`: the error line of a text (a summary quotes errors; tool outputs have their own);
- `written_in`: the files a statement says were written (an edit word with paths, or a file
  record's path);
- `attributed_choice`: a file's fate from the statements about it, read by precedence
  (deleted over created over edited over read), never by where a statement stands;
- the reading of the context itself: what the agent sees of a message (`agent_view`), the
  prompt a compaction replays (`replayed_prompt`), a word found whole (`find_word`).
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Sequence

from workbench.messages import Message, TextContent, ToolResponse
from workbench.metrics._errors import error_line
from workbench.probes._normalize import normalize_text
from workbench.probes._questions import Question
from workbench.probes._transcript import NOT_HUMAN_FLAGS, is_injected
from workbench.probes._units import iter_clauses, path_like

__all__ = ["CHOICE_WORDS", "EDIT_WORDS", "ERROR_HINTS", "SECTION_CHARS", "UNKNOWN",
           "agent_view", "attributed_choice", "candidates", "cap_texts", "find_word",
           "names_path", "path_tokens", "replayed_prompt", "same_path", "subject_terms",
           "text_error", "values_in", "written_in"]

SECTION_CHARS = 1500
"""An open answer joins the best passages up to this many characters."""
UNKNOWN = "unknown"
"""What ``lookup`` answers when the context does not give an answer."""
EDIT_WORDS = ("edited", "modified", "changed", "updated", "created", "wrote", "written",
              "deleted", "removed", "patched")
"""A statement holding one of these says the paths it names were written."""
CHOICE_WORDS = {
    "created": ("created", "create", "wrote", "write", "write_file", "create_file", "new",
                "added", "cat <<"),
    "edited": ("edited", "edit", "edit_file", "modified", "changed", "updated", "patched",
               "fixed", "str_replace", "multiedit", "sed -i"),
    "deleted": ("deleted", "delete", "delete_file", "removed", "rm"),
    "read": ("read", "read_file", "view", "open", "cat", "nl", "head", "tail", "sed -n"),
}
"""Words that say what happened to a file, per choice."""
PRECEDENCE = ("deleted", "created", "edited", "read")
"""Which fate wins when statements say several: a deletion is the last word; a file created
and then edited was created; any change beats a read."""
ERROR_HINTS = ("error", "exception", "failed", "fatal", "traceback", "not found", "denied")
"""A text is searched for an error line only when it holds one of these."""

_NUMBER = re.compile(r"(?<![\w.])\d[\d,_]*(?:\.\d+)?(?!\w)")
_TOKEN = re.compile(r"[A-Za-z0-9_./~-]+")
_BACKTICKED = re.compile(r"`([^`\n]{1,120})`")
_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*")
_BROAD_ERROR = re.compile(r"[A-Za-z_][\w.]*(?:Error|Exception):.*|\b(?:error|fatal):.*")
_TOKEN_AFTER = re.compile(r"\s*[`'\"(\[]?([^\s`'\"()\[\],;]+)")
_BULLET = re.compile(r"^[ \t]*(?:[-*+\u2022]|\d+[.)])[ \t]+", re.MULTILINE)
_BLANK = "____"
_EDIT = re.compile(r"(?<![\w])(?:" + "|".join(EDIT_WORDS) + r")(?![\w])")


def subject_terms(text: str) -> list[str]:
    """The thing a question is about: the longest name it puts in backticks (a file, a
    command, an identifier), not a blank; none when it backticks nothing."""
    terms = [t.strip() for t in _BACKTICKED.findall(text)]
    terms = [t for t in terms if t and _BLANK not in t and any(ch.isalnum() for ch in t)]
    return sorted(terms, key=len, reverse=True)[:1]


def candidates(text: str, answer_type: str) -> list[tuple[int, str]]:
    """(offset, value) of every value of `answer_type` in `text`, in order."""
    if answer_type == "number":
        return [(m.start(), m.group()) for m in _NUMBER.finditer(text)]
    if answer_type == "path":
        return [(m.start(), m.group().strip(".,;:)(`'\"")) for m in _TOKEN.finditer(text)
                if path_like(m.group())]
    if answer_type == "identifier":
        found = [(m.start(1), m.group(1).strip()) for m in _BACKTICKED.finditer(text)]
        found += [(m.start(), m.group()) for m in _IDENTIFIER.finditer(text)
                  if "_" in m.group() or any(c.isdigit() for c in m.group())]
        return sorted(found)
    return sorted(candidates(text, "number") + candidates(text, "path")
                  + candidates(text, "identifier"))


def values_in(texts: Sequence[str], question: Question, asked: str) -> str:
    """The first value of `texts` (best first) that `asked` (the normalised question) does
    not hold; a ``value`` blank is looked for after its words in every text first."""
    found = "" if question.answer_type != "value" else next(
        (v for text in texts if (v := _after_lead(text, question, asked))), "")
    return found or next((v for text in texts if (v := _value(text, question, asked))), "")


def _after_lead(text: str, question: Question, asked: str) -> str:
    """The token right after the words before the blank (whitespace aside; their last
    occurrence for a question about the latest value), or ``""``."""
    lead = question.blank_before.strip().lower()
    if not lead:
        return ""
    flat = " ".join(text.split())
    at = flat.lower().rfind(lead) if question.position == "last" else flat.lower().find(lead)
    token = _TOKEN_AFTER.match(flat, at + len(lead)) if at >= 0 else None
    value = token.group(1).rstrip(".:") if token else ""
    return value if value and normalize_text(value) not in asked else ""


def _value(text: str, question: Question, asked: str) -> str:
    kind = question.answer_type if question.answer_type != "value" else "any"
    found = [(at, v) for at, v in candidates(text, kind) if v and normalize_text(v) not in asked]
    if not found:
        return ""
    lead = question.blank_before.strip().lower()
    if lead:
        at = text.lower().find(lead)
        if at >= 0:
            after = [v for offset, v in found if offset >= at + len(lead)]
            if after:
                return after[0]
    return found[0][1]


def text_error(text: str, body: int = 0) -> str | None:
    """The error line a text quotes, or None. With `body`, the offset where the text starts
    after a lead-in that labels it (``Error or fix: ``), the lead-in counts only when what
    follows it says nothing of an error (``Error: cannot connect``)."""
    if body:
        rest = text[body:]
        if any(h in rest.lower() for h in ERROR_HINTS):
            return text_error(rest)
    lower = text.lower()
    if not any(h in lower for h in ERROR_HINTS):
        return None
    # A summary lists errors as bullets: the marker hides progress lines from error_line.
    line = error_line(_BULLET.sub("", text))
    if line is not None:
        return line
    match = _BROAD_ERROR.search(text)
    return " ".join(match.group().split()) if match else None


def has_word(lower: str, word: str) -> bool:
    """True when `lower` holds `word` with no word character (as the ``re`` module's ``\\w``
    tells it) just before or after it: a substring search, no pattern built per word."""
    size = len(word)
    start = lower.find(word)
    while start >= 0:
        end = start + size
        if ((start == 0 or not _is_word(lower[start - 1]))
                and (end == len(lower) or not _is_word(lower[end]))):
            return True
        start = lower.find(word, start + 1)
    return False


def path_tokens(text: str, path: str = "") -> list[str]:
    """The path-like tokens of `text`; with `path`, only those naming it (`names_path`)."""
    found = [m.group().strip(".,;:)(`'\"") for m in _TOKEN.finditer(text) if path_like(m.group())]
    return [t for t in found if names_path(t, path)] if path else found


def names_path(token: str, path: str) -> bool:
    """True when `token` names the file `path`: the same path, or one ends with the other
    (a relative path for an absolute one, or the bare file name)."""
    a = token.strip("`'\"").lstrip("./").lower()
    b = path.strip("`'\"").lstrip("./").lower()
    return bool(a and b) and (a == b or a.endswith("/" + b) or b.endswith("/" + a))


def written_in(text: str, subject: str = "") -> list[str]:
    """The paths a statement says were written: when it holds an edit word, the paths it
    names and the path of the file record it belongs to."""
    if not _EDIT.search(text.lower()):
        return []
    found = path_tokens(text)
    return ([subject] if subject else []) + [p for p in found if p != subject]


def attributed_choice(statements: Sequence[tuple[str, bool]], path: str,
                      choices: Sequence[str]) -> str:
    """A file's fate, read from `statements` about it: (text, whether it is the file's own
    record). A record counts whole; another statement by its clauses that name `path`. Of
    the fates they say, `PRECEDENCE` picks; a choice that is not offered (``created`` when
    the question asks edited or read) counts as ``edited``."""
    allowed = list(choices) or list(CHOICE_WORDS)
    said: set[str] = set()
    for text, record in statements:
        parts = [text] if record or not path else [
            c for c in iter_clauses(text) if path_tokens(c, path)]
        for part in parts:
            lower = part.lower()
            for choice, words in CHOICE_WORDS.items():
                if any(has_word(lower, w) for w in words):
                    said.add(choice if choice in allowed or choice == "read" else "edited")
    return next((c for c in PRECEDENCE if c in said and c in allowed), "")


def agent_view(message: Message) -> Message:
    """What the agent sees of `message` (`Message.agent_projection`, skipped when nothing in
    it is annotated for an audience, which is almost always)."""
    for item in message.content:
        if isinstance(item, TextContent) and item.annotations is not None:
            return message.agent_projection()
        if isinstance(item, ToolResponse) and any(
                getattr(b, "annotations", None) is not None for b in item.tool_result.blocks()):
            return message.agent_projection()
    return message


def replayed_prompt(message: Message, text: str, after_assistant: bool) -> bool:
    """True for the human's prompt that a compaction replays after its summary (an agent-only
    copy, read after the continuation note): a user text that follows an assistant message."""
    flags = message.metadata.model_extra or {}
    return (after_assistant and message.role == "user" and not message.has_tool_response()
            and not message.is_turn_context and not any(flags.get(f) for f in NOT_HUMAN_FLAGS)
            and not is_injected(text))


def _is_word(ch: str) -> bool:
    return ch.isalnum() or ch == "_"


def find_word(haystack: str, starts: Sequence[int] | None, word: str) -> set[int]:
    """Indexes of the pieces of `haystack` (pieces start at `starts`, else one per line) that
    hold `word` as a whole word."""
    found: set[int] = set()
    size = len(word)
    start = haystack.find(word)
    while start >= 0:
        end = start + size
        if ((start == 0 or not _is_word(haystack[start - 1]) or not _is_word(word[0]))
                and (end == len(haystack) or not _is_word(haystack[end])
                     or not _is_word(word[-1]))):
            if starts is None:
                found.add(haystack.count("\n", 0, start))
            else:
                found.add(bisect.bisect_right(starts, start) - 1)
        start = haystack.find(word, start + 1)
    return found


def cap_texts(texts: Sequence[str]) -> str:
    """`texts` joined by lines, up to `SECTION_CHARS` (the first always)."""
    out: list[str] = []
    size = 0
    for text in texts:
        if out and size + len(text) > SECTION_CHARS:
            break
        out.append(text)
        size += len(text)
    return "\n".join(out)


def same_path(subject: str, path: str) -> bool:
    """True when a record's `subject` and `path` name one file."""
    if not subject:
        return False
    a, b = subject.strip("./").lower(), path.strip("./").lower()
    return a == b or a.endswith("/" + b) or b.endswith("/" + a)
