"""Errors probe: the error messages of failing tool calls, and whether the summary quotes them.

An error comes from a tool response that failed (``is_error`` set, or an error result) or whose
text holds an error line. From each response the probe keeps the most specific line, in this
order of preference:

1. the exception line at the end of a Python traceback (``ValueError: invalid literal ...``);
2. pytest's ``E   SomeError: message`` line (the ``E`` marker dropped), else its short summary
   line ``FAILED path::test - SomeError: message`` (only the message when it is an exception
   line);
3. a line starting with an exception name (``SomethingError: ...``, ``...Exception: ...``);
4. a compiler diagnostic (``src/a.c:3:5: error: ...``, ``error[E0308]: ...``, ``error TS2322:
   ...``) or a shell failure (``bash: foo: command not found``, ``No such file or directory``,
   ``Permission denied``, ``No module named x``);
5. any other line with ``error:``/``Error:``/``ERROR``/``Exception:``, then a ``FAILED`` line;
6. for a flagged failure, its first line that is not a bare status line (up to a literal
   ``\\n``, for hooks that print JSON-escaped text).

Never chosen: pytest progress lines (``tests/x.py::test_y FAILED  [ 66%]``), session and section
banners (``==== 1 failed, 5 passed in 0.2s ====``, ``____ test_y ____``), exit-status lines
(``Exit code 1``, ``<returncode>1</returncode>``) and numbered code listings (``12: except
ValueError as error:``, ``12→ ...``), which quote code rather than report an error.

Lines are whitespace-normalised and cut to `MAX_ERROR_CHARS`. An error is *recalled* when the
summary quotes it verbatim (a substring match after both sides are whitespace-normalised). The
looser ``errors_token_overlap`` is the mean, over errors, of the fraction of an error's words that
appear anywhere in the summary.
"""

from __future__ import annotations

import re

from workbench._memo import memo
from workbench.messages import Message, ToolResponse
from workbench.metrics._common import ProbeResult, normalize_ws, word_set, words
from workbench.metrics._registry import MetricInput, metric
from workbench.metrics._shared import probe_once

MAX_ERROR_CHARS = 200
"""Longer error lines are cut here: the probe then asks for the first 200 characters verbatim."""

_TRACEBACK = "Traceback (most recent call last):"
_EXC_NAME = r"(?:[A-Za-z_][\w.]*\.)?[A-Z]\w*(?:Error|Exception|Exit|Interrupt|Failure)\b"
# At the end of a traceback the bare name is enough (``KeyboardInterrupt``); elsewhere the name
# must lead the line and be followed by a colon, so code listings (``ValueError,``) do not count.
_TB_EXC_LINE = re.compile(r"^" + _EXC_NAME)
_EXC_LINE = re.compile(r"^\s*" + _EXC_NAME + r":")
_PYTEST_E_LINE = re.compile(r"^E\s{2,}(\S.*)$")
_PYTEST_SHORT = re.compile(r"^(?:FAILED|ERROR) \S+ - (\S.*)$")
_COMPILER_LINE = re.compile(
    r"(?:^\S+?:\d+(?::\d+)?:\s*(?:fatal )?error\b"  # gcc, clang, go, javac-like
    r"|^(?:fatal )?error(?:\[\w+\])?:\s"           # rustc, cargo, ld
    r"|\berror TS\d+:"                              # tsc
    r"|^\S+\(\d+,\d+\): error\b)")                  # tsc/msbuild (file(l,c): error)
_SHELL_LINE = re.compile(r"(?:command not found|No such file or directory|Permission denied"
                         r"|No module named \S"
                         r"|not recognized as an internal or external command)")
_ERROR_LINE = re.compile(r"(?:\berror:|\bError:|\bERROR\b|\bException:)")
_FAILED_LINE = re.compile(r"\bFAILED\b")

_PROGRESS_LINE = re.compile(
    r"(?:^\S+::\S*.*\b(?:PASSED|FAILED|ERROR|SKIPPED|XFAIL|XPASS)\b\s*\[\s*\d+%\]\s*$"
    r"|^\S+\.py\s+[.FEsxX]+\s*\[\s*\d+%\]\s*$)")
_BANNER_LINE = re.compile(r"^\s*(?:={3,}|_{3,}|-{3,}|\*{3,}).*(?:={3,}|_{3,}|-{3,}|\*{3,})\s*$")
_STATUS_LINE = re.compile(r"^\s*(?:Exit code \d+|<returncode>\s*-?\d+\s*</returncode>|</?output>"
                          r"|exit status \d+|Process exited with code \d+)\s*$", re.IGNORECASE)
_LISTING_LINE = re.compile(r"^\s*\d+\s*(?:[:|\t→]|-\s)")


def _flagged_text(resp: ToolResponse) -> str:
    if not resp.tool_result.ok:
        return resp.tool_result.error or ""
    return resp.text()


def _ignorable(line: str) -> bool:
    """Progress, banner, exit-status and code-listing lines: never an error line."""
    return bool(_PROGRESS_LINE.search(line) or _BANNER_LINE.match(line)
                or _STATUS_LINE.match(line) or _LISTING_LINE.match(line))


def _pytest_line(lines: list[str]) -> str | None:
    e_lines = [m.group(1) for ln in lines
               if (m := _PYTEST_E_LINE.match(ln)) and not _ignorable(ln)]
    named = [ln for ln in e_lines if _EXC_LINE.match(ln)]
    if named:
        return named[0]
    for ln in lines:
        m = _PYTEST_SHORT.match(ln.strip())
        if m and not _ignorable(ln):
            # The message alone when it is a whole exception line; else (``assert 0``, or cut
            # short by the terminal width: ``- Fai...``) the line with its test id.
            return m.group(1) if _EXC_LINE.match(m.group(1)) else ln
    return e_lines[0] if e_lines else None


def error_line(text: str, flagged: bool = False) -> str | None:
    """The most specific error line of a tool output, or None when it holds no error.

    Every cell of a session scans the same tool outputs (metrics and forgotten items both):
    the answer depends on the text alone, so it is found once per distinct output (the run
    memo's ``error_lines_of``).

    Args:
        text: The tool output.
        flagged: The response was marked as failed (then any non-empty text yields a line).

    Returns:
        The chosen line (see the module docstring for the order), whitespace-normalised and cut
        to `MAX_ERROR_CHARS`, or None.
    """
    return memo().error_lines_of.get_or((text, flagged), lambda: (_error_line(text, flagged),))[0]


def _error_line(text: str, flagged: bool) -> str | None:
    if not flagged and not _may_hold_error(text):
        return None
    # Every non-blank line; a line is skipped when `_ignorable`, asked only of the lines a
    # rule would choose (most lines of an output match none).
    lines = [ln for ln in text.splitlines() if ln.strip()]
    chosen: str | None = None
    if _TRACEBACK in text:
        after = text.rsplit(_TRACEBACK, 1)[1].splitlines()
        exc = [ln for ln in after if _TB_EXC_LINE.match(ln)]
        if exc:
            chosen = exc[-1]
    if chosen is None:
        chosen = _pytest_line(lines)
    for pattern, hints in _RULES:
        if chosen is not None:
            break
        if any(hint in text for hint in hints):  # else no line can match
            chosen = next((ln for ln in lines if pattern.search(ln) and not _ignorable(ln)),
                          None)
    if chosen is None and flagged:
        first = next((ln for ln in lines if not _ignorable(ln)), None)
        if first is not None:
            # Hooks sometimes print JSON-escaped text: keep the first of its escaped lines.
            chosen = first.split("\\n", 1)[0] or first
    if chosen is None:
        return None
    return normalize_ws(chosen)[:MAX_ERROR_CHARS]


_RULES = ((_EXC_LINE, ("Error:", "Exception:", "Exit:", "Interrupt:", "Failure:")),
          (_COMPILER_LINE, ("error",)),
          (_SHELL_LINE, ("command not found", "No such file or directory", "Permission denied",
                         "No module named", "not recognized as an internal or external command")),
          (_ERROR_LINE, ("error:", "Error:", "ERROR", "Exception:")),
          (_FAILED_LINE, ("FAILED",)))
"""The line rules after a traceback's and pytest's, in order, each with the texts one of which
any line it matches holds (an exception name ends in one of the first, and a colon follows),
so a rule no line can meet costs a few substring searches, not a pattern per line."""
_HINTS = ("Error", "error", "ERROR", "Exception", "Exit", "Interrupt", "Failure", "FAILED",
          "command not found", "No such file or directory", "Permission denied",
          "No module named", "not recognized as an internal or external command")
_E_HINT = re.compile(r"E\s\s")


def _may_hold_error(text: str) -> bool:
    """False only for a text no rule above can choose a line of: each rule's pattern needs
    one of `_HINTS` (an exception name ends in one; a traceback's last line is one), or,
    pytest's ``E`` line, an ``E`` and two spaces. Most tool outputs are told by a few
    substring searches, not a pattern per line."""
    return any(hint in text for hint in _HINTS) or _E_HINT.search(text) is not None


def session_errors(messages: list[Message]) -> list[str]:
    """Distinct error lines of the session's failing tool responses, in order (worked out
    once per list of message objects while they are unchanged: the run memo's
    ``session_facts``)."""
    return list(memo().session_facts.get(messages, "errors", _session_errors, messages))


def _session_errors(messages: list[Message]) -> tuple[str, ...]:
    seen: dict[str, None] = {}
    lines = memo().error_lines
    for msg in messages:
        for line in lines.get(msg, None, _message_errors, msg):
            seen.setdefault(line, None)
    return tuple(seen)


def _message_errors(msg: Message) -> tuple[str, ...]:
    lines = []
    for resp in msg.tool_responses():
        line = error_line(_flagged_text(resp), flagged=resp.tool_result.is_error)
        if line:
            lines.append(line)
    return tuple(lines)


def token_overlap(error: str, summary_words: set[str]) -> float:
    """Fraction of the error's distinct words (3+ characters) found in `summary_words`."""
    return _overlap(_error_words(error), summary_words)


def _error_words(error: str) -> frozenset[str]:
    return frozenset(w for w in words(error) if len(w) >= 3)


def _overlap(toks: frozenset[str], summary_words: set[str]) -> float:
    if not toks:
        return 0.0
    return sum(1 for w in toks if w in summary_words) / len(toks)


def _probe_items(messages: list[Message]) -> tuple[tuple[str, frozenset[str]], ...]:
    """Per error line of the session: the line and its words that `token_overlap` reads."""
    return tuple((e, _error_words(e)) for e in session_errors(messages))


@probe_once
def errors_probe(messages: list[Message], summary_text: str) -> ProbeResult:
    """Which tool errors the summary quotes verbatim.

    Args:
        messages: The session's messages.
        summary_text: The summary text.

    Returns:
        A `ProbeResult`; ``extra`` holds ``errors_token_overlap`` (None when there were no errors).
    """
    errors = memo().session_facts.get(messages, "errors probe", _probe_items, messages)
    summary = normalize_ws(summary_text)
    summary_words = word_set(summary_text)
    missing = [e for e, _ in errors if e not in summary]
    overlap = (sum(_overlap(toks, summary_words) for _, toks in errors) / len(errors)
               if errors else None)
    return ProbeResult(total=len(errors), recalled=len(errors) - len(missing), missing=missing,
                       extra={"errors_token_overlap": overlap})


@metric("errors")
def errors_metrics(inp: MetricInput) -> dict[str, float | int | None]:
    """``errors_total``, ``errors_recalled``, ``errors_recall``, ``errors_token_overlap``."""
    return errors_probe(inp.session.messages, inp.summary_text).as_metrics("errors")
