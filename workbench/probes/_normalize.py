"""Normalisers: how an expected answer and a given answer are made comparable before matching.

Each answer type has one normaliser, applied to both sides alike, so the exact graders compare
like with like. They are deliberately narrow: they forgive the ways a correct answer is
*written* (case, quotes, markdown, thousands separators, a relative path for an absolute one),
never a different value.

- `normalize_text`: Unicode NFKC, curly quotes and dashes made plain, markdown emphasis and
  backticks dropped, casefolded, whitespace collapsed, end punctuation stripped, and a pair
  of quotes around the whole text dropped.
- `normalize_number`: `normalize_text`, then thousands separators removed (``50,354`` and
  ``50_354`` -> ``50354``; a list such as ``8080,443`` is left alone).
- `normalize_path`: quotes and backticks dropped, ``\\`` -> ``/``, ``./`` prefixes, trailing ``/``
  and ``:line[:col]`` suffixes removed; case is kept (paths are case-sensitive).
- `normalize_error`: `normalize_text` plus pytest's leading ``E`` marker and a trailing ``(...)``
  location dropped, so ``E   KeyError: 'x'`` equals ``KeyError: 'x'``.
- `normalize_choice`: one of a question's choices, with synonyms (``modified`` -> ``edited``,
  ``added`` -> ``created``, ``removed`` -> ``deleted``).
- `normalize_command`: a shell command's head (the program, plus its sub-command when it has
  one: ``git status``, ``mix test``), after ``cd dir &&`` prefixes and ``VAR=value``
  assignments.

`contains` is the one matching rule every exact grader uses: the normalised needle occurs in the
normalised haystack and is not part of a longer word (``8080`` is not found in ``18080``).
"""

from __future__ import annotations

import re
import shlex
import unicodedata
from collections.abc import Callable

__all__ = ["NORMALIZERS", "contains", "normalize_choice", "normalize_command", "normalize_error",
           "normalize_number", "normalize_path", "normalize_text", "path_in", "path_matches"]

_QUOTES = str.maketrans({"\u2018": "'", "\u2019": "'", "\u201c": '"', "\u201d": '"',
                         "\u2013": "-", "\u2014": "-", "\u2212": "-", "\u00a0": " "})
_EMPHASIS = re.compile(r"(\*\*|__|`+)")
_WS = re.compile(r"\s+")
_END_PUNCT = " \t\n.,;:!?"
_PAIRED = ("\"", "'")
_GROUPED = re.compile(r"\b\d{1,3}(?:[,_]\d{3})+\b")
_LINE_SUFFIX = re.compile(r"(?::\d+){1,2}$")
_PYTEST_E = re.compile(r"^e\s+")
_LOCATION = re.compile(r"\s*\((?:line|at) [^)]*\)$")
_ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")
_SUBCOMMAND = re.compile(r"^[a-z][a-z0-9-]*$")

CHOICE_SYNONYMS: dict[str, str] = {
    "created": "created", "create": "created", "added": "created", "add": "created",
    "new": "created", "wrote": "created", "written": "created",
    "edited": "edited", "edit": "edited", "modified": "edited", "modify": "edited",
    "changed": "edited", "updated": "edited", "patched": "edited", "fixed": "edited",
    "deleted": "deleted", "delete": "deleted", "removed": "deleted", "remove": "deleted",
}
"""Words a correct answer may use for one of the file-change choices."""

SUBCOMMAND_PROGRAMS = frozenset("""
git npm pnpm yarn npx cargo go mix uv pip pip3 poetry docker kubectl make gh bd rake bundle
dotnet terraform helm brew apt apt-get conda just nox tox pytest python python3 node deno bun
""".split())
"""Programs whose first bare-word argument is part of the command's head (``git status``)."""


def normalize_text(text: str) -> str:
    """Plain, casefolded, single-spaced text (see the module docstring)."""
    plain = unicodedata.normalize("NFKC", str(text)).translate(_QUOTES)
    plain = _WS.sub(" ", _EMPHASIS.sub("", plain)).strip(_END_PUNCT)
    for quote in _PAIRED:  # a whole answer in quotes: drop the pair
        if len(plain) > 1 and plain[0] == plain[-1] == quote:
            plain = plain[1:-1].strip(_END_PUNCT)
    return plain.casefold()


def normalize_number(text: str) -> str:
    """`normalize_text` with thousands separators removed (``1,234,567`` -> ``1234567``)."""
    return _GROUPED.sub(lambda m: re.sub(r"[,_]", "", m[0]), normalize_text(text))


def normalize_path(text: str) -> str:
    """A path written the one way (see the module docstring); case is kept."""
    p = unicodedata.normalize("NFKC", str(text)).translate(_QUOTES).strip().strip("\"'`")
    p = p.replace("\\", "/").rstrip(",;)")
    p = _LINE_SUFFIX.sub("", p)
    while p.startswith("./"):
        p = p[2:]
    return p.rstrip("/") if len(p) > 1 else p


def normalize_error(text: str) -> str:
    """An error line without pytest's ``E`` marker or a trailing location (see above)."""
    plain = _PYTEST_E.sub("", normalize_text(text))
    return _LOCATION.sub("", plain)


def normalize_choice(text: str) -> str:
    """The choice a word stands for (``modified`` -> ``edited``), else `normalize_text`."""
    plain = normalize_text(text)
    return CHOICE_SYNONYMS.get(plain, plain)


def normalize_command(command: str) -> str:
    """The head of a shell command: its program, plus a sub-command when it has one."""
    text = str(command).strip()
    while True:  # ``cd repo && cmd`` runs cmd
        head, sep, rest = text.partition("&&")
        if sep and head.strip().split()[:1] == ["cd"]:
            text = rest.strip()
            continue
        break
    try:
        tokens = shlex.split(text, posix=True)
    except ValueError:
        tokens = text.split()
    tokens = [t for t in tokens if t]
    while tokens and _ASSIGNMENT.match(tokens[0]):
        tokens = tokens[1:]
    if not tokens:
        return ""
    program = tokens[0].rsplit("/", 1)[-1].casefold()
    if program in SUBCOMMAND_PROGRAMS and len(tokens) > 1:
        sub = tokens[1].casefold()
        if program.startswith("python") and sub == "-m" and len(tokens) > 2:
            return f"{program} -m {tokens[2].casefold()}"
        if _SUBCOMMAND.match(sub):
            return f"{program} {sub}"
    return program


def _is_word(ch: str) -> bool:
    return ch.isalnum() or ch == "_"


def contains(haystack: str, needle: str) -> bool:
    """True when `needle` occurs in `haystack` and is not the middle of a longer word.

    Both are expected to be normalised already (by the same normaliser).
    """
    if not needle:
        return False
    start = haystack.find(needle)
    while start >= 0:
        end = start + len(needle)
        before_ok = start == 0 or not _is_word(haystack[start - 1]) or not _is_word(needle[0])
        after_ok = (end == len(haystack) or not _is_word(haystack[end])
                    or not _is_word(needle[-1]))
        if before_ok and after_ok:
            return True
        start = haystack.find(needle, start + 1)
    return False


def _path_tails(path: str) -> list[str]:
    """The path and its trailing parts of at least two components (``src/app.py``)."""
    parts = [p for p in path.split("/") if p]
    tails = [path]
    for i in range(1, len(parts) - 1):
        tails.append("/".join(parts[i:]))
    return tails


def path_matches(answer: str, expected: str) -> bool:
    """True when `answer` names the path `expected`: the path itself, or a trailing part of it
    with at least two components (summaries and models often make absolute paths relative);
    a bare file name counts only when `expected` is itself a bare file name."""
    return path_in(normalize_path(answer), expected)


def path_in(normalized: str, expected: str) -> bool:
    """`path_matches` on an answer already passed through `normalize_path` (grading a list
    normalises the answer once, not once per expected item)."""
    for tail in _path_tails(normalize_path(expected)):
        start = normalized.find(tail)
        while start >= 0:
            end = start + len(tail)
            before = normalized[start - 1] if start else " "
            after = normalized[end] if end < len(normalized) else " "
            # Not the middle of a longer name: `app.py` inside `myapp.py` does not count.
            if not (before.isalnum() or before in "_.-") and not (after.isalnum()
                                                                  or after in "_-"):
                return True
            start = normalized.find(tail, start + 1)
    return False


NORMALIZERS: dict[str, Callable[[str], str]] = {
    "text": normalize_text,
    "number": normalize_number,
    "path": normalize_path,
    "error": normalize_error,
    "choice": normalize_choice,
    "command": normalize_command,
}
"""Answer type -> its normaliser (``identifier`` and ``value`` answers use ``text``)."""
