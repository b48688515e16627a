"""The errors probe on tool outputs of real recorded sessions: it picks the error line, never a
progress, banner, exit-status or code-listing line."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from workbench.metrics import error_line, session_errors
from workbench.sessions import load_session

ROOT = Path(__file__).resolve().parents[2]
MINI = "mini-swe-agent/swebench_results/20251118_gemini-3-pro-74pct/trajs"

# Written independently of the probe's own patterns: what a chosen line must never look like.
NEVER = [
    re.compile(r"\[\s*\d+%\]\s*$"),                       # pytest progress
    re.compile(r"^=+ .*(passed|failed|error).* =+$"),     # pytest session summary
    re.compile(r"^(_{3,}|={3,})"),                        # section banners
    re.compile(r"^(Exit code \d+|<returncode>\d+</returncode>|</?output>)$"),
    re.compile(r"^\d+\s*[→:]"),                           # numbered code listings
]


def assert_no_noise(errors: list[str], where: str) -> None:
    for line in errors:
        for pattern in NEVER:
            assert not pattern.search(line), f"{where}: picked {line!r}"


def test_pytest_runs_of_a_real_swe_bench_session_give_their_exception_lines(
        shared_sessions: Path) -> None:
    path = shared_sessions / MINI / "pytest-dev__pytest-6197/pytest-dev__pytest-6197.traj.json"
    errors = session_errors(load_session(path).messages)
    assert_no_noise(errors, path.name)
    for expected in ("ModuleNotFoundError: No module named 'xmlschema'",
                     "IndexError: list index out of range",
                     "UnboundLocalError: local variable 'm' referenced before assignment",
                     "IndentationError: expected an indented block",
                     "bash: line 1: ed: command not found"):
        assert expected in errors, f"{expected!r} not among {errors}"
    # A short-summary line cut by the terminal keeps its test id rather than "Fai...".
    assert ("FAILED testing/test_collection.py::test_collect_sub_with_symlinks[True] - Fai..."
            in errors)


def test_a_real_session_with_assertion_and_shell_errors(shared_sessions: Path) -> None:
    path = shared_sessions / MINI / "pytest-dev__pytest-6202/pytest-dev__pytest-6202.traj.json"
    errors = session_errors(load_session(path).messages)
    assert_no_noise(errors, path.name)
    assert "AssertionError: assert 'test_boo[.[]' == 'test_boo[..[]'" in errors
    assert "SyntaxError: invalid syntax" in errors
    assert "ERROR: file not found: testing/test_python.py" in errors


def test_missing_commands_in_real_sessions_are_the_shell_line_not_the_return_code(
        shared_sessions: Path) -> None:
    path = shared_sessions / MINI / "sympy__sympy-19637/sympy__sympy-19637.traj.json"
    errors = session_errors(load_session(path).messages)
    assert_no_noise(errors, path.name)
    assert "bash: line 1: pytest: command not found" in errors
    assert "/opt/miniconda3/envs/testbed/bin/python: No module named pytest" in errors
    assert "UnboundLocalError: local variable 'kern' referenced before assignment" in errors


def test_claude_code_transcripts_skip_exit_codes_and_code_listings(shared_sessions: Path) -> None:
    folder = shared_sessions / "claude-code/test/fixtures/transcripts"
    found: list[str] = []
    for path in sorted(folder.glob("*.jsonl")):
        errors = session_errors(load_session(path).messages)
        assert_no_noise(errors, path.name)
        found += errors
    assert "fatal: The current branch spotter-dov has no upstream branch." in found
    assert "(eval):1: permission denied:" in found
    assert "Pre-commit validation failed:" in found
    assert not any("json(%{error:" in e for e in found)  # a code listing, not an error


@pytest.mark.parametrize("name", ["gen-005k-s1.json", "gen-025k-s3.json", "gen-090k-s5.json"])
def test_the_shipped_datasets_yield_exception_lines_never_pytest_progress(name: str) -> None:
    errors = session_errors(load_session(ROOT / "datasets" / name).messages)
    assert errors, name
    assert_no_noise(errors, name)
    assert all(re.match(r"^\w+(Error|Exception): ", e) for e in errors), errors


@pytest.mark.parametrize(("text", "expected"), [
    ("tests/a.py::test_x FAILED                 [ 66%]\n"
     "E       RuntimeError: lock not held\n"
     "=========== short test summary info ===========\n"
     "FAILED tests/a.py::test_x - RuntimeError: lock not held\n"
     "========== 1 failed, 2 passed in 0.31s ==========",
     "RuntimeError: lock not held"),
    ("tests/a.py::test_x FAILED [ 50%]\nFAILED tests/a.py::test_x - KeyError: 'k'",
     "KeyError: 'k'"),
    ("src/main.c:12:5: error: 'count' undeclared (first use in this function)\n"
     "1 error generated.", "src/main.c:12:5: error: 'count' undeclared (first use in this function)"),
    ("   Compiling app v0.1.0\nerror[E0308]: mismatched types\n  --> src/lib.rs:4:5",
     "error[E0308]: mismatched types"),
    ("src/index.ts(3,7): error TS2322: Type 'string' is not assignable to type 'number'.",
     "src/index.ts(3,7): error TS2322: Type 'string' is not assignable to type 'number'."),
    ("Exit code 127\nbash: rg: command not found", "bash: rg: command not found"),
    ("tests/a.py ..F.                                  [100%]", None),
])
def test_error_line_prefers_the_real_error_over_progress_and_summaries(text, expected) -> None:
    assert error_line(text) == expected
