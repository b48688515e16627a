"""The exit codes of the ``workbench`` commands, in one table that ``workbench --help`` prints.

A script or CI job branches on these numbers, so each has one meaning across commands: 1 and 2
are click's (bad input, usage), and the regression gate and ``compare --fail-on`` keep their
documented 1 and 2; 3, 4 and 130 are the run's own.
"""

from __future__ import annotations

import textwrap

EXIT_OK = 0
EXIT_INFRASTRUCTURE = 3
"""A cell hit an infrastructure error (cache miss, credentials, network, retries exhausted)."""
EXIT_BUDGET = 4
"""The run's ``[budget]`` stopped it before every cell ran."""
EXIT_INTERRUPTED = 130
"""Ctrl-C (128 + SIGINT, as shells report it)."""

EXIT_CODES: tuple[tuple[int, str], ...] = (
    (EXIT_OK, "success (run: every cell produced an outcome; a compaction failure such as "
              "context exhausted is an outcome)"),
    (1, "bad input: a spec, session, template or option that cannot be used (the message "
        "names file and line); regress: a summary or metric regressed; compare --fail-on: "
        "B is worse than A"),
    (2, "usage error (unknown command or option); regress: the gate could not run"),
    (EXIT_INFRASTRUCTURE, "run: a cell hit an infrastructure error (cache miss, "
                          "credentials, network); fix it and rerun with --retry-errors"),
    (EXIT_BUDGET, "run: the budget stopped the run; raise [budget] and run again to "
                  "continue"),
    (EXIT_INTERRUPTED, "interrupted (Ctrl-C); run: finished cells are saved, and the command "
                       "it prints resumes"),
)
"""Every exit code and what it means, as listed in ``workbench --help`` and the docs."""


HELP_WIDTH = 78


def exit_codes_help() -> str:
    """The ``Exit codes`` section of ``workbench --help`` (``\\b`` keeps click from rewrapping)."""
    lines = ["Exit codes:", "", "\b"]
    for code, text in EXIT_CODES:
        lines += textwrap.wrap(text, width=HELP_WIDTH, initial_indent=f"  {code:<4} ",
                               subsequent_indent=" " * 7, break_on_hyphens=False)
    return "\n".join(lines)
