"""Every normaliser, and the one matching rule the exact graders share."""

from __future__ import annotations

import pytest

from workbench.probes import (
    NORMALIZERS,
    contains,
    normalize_choice,
    normalize_command,
    normalize_error,
    normalize_number,
    normalize_path,
    normalize_text,
    path_matches,
)


@pytest.mark.parametrize(("raw", "expected"), [
    ("  The PORT is 50354. ", "the port is 50354"),
    ("“quoted” — dash", '"quoted" - dash'),
    ("**bold** and `code`", "bold and code"),
    ("line\none\ttwo", "line one two"),
    ("'seen_webhook_6930'", "seen_webhook_6930"),
    ("Answer: it's done.", "answer: it's done"),
    ("ﬁle", "file"),  # NFKC folds the ligature
])
def test_text_is_casefolded_plain_and_single_spaced(raw: str, expected: str) -> None:
    assert normalize_text(raw) == expected


@pytest.mark.parametrize(("raw", "expected"), [
    ("50,354", "50354"),
    ("1_234_567", "1234567"),
    ("port 8080,443", "port 8080,443"),  # a list of numbers is not a grouped number
    ("v3.10 and 2.0.1", "v3.10 and 2.0.1"),  # versions keep their zeros
])
def test_numbers_lose_thousands_separators_only(raw: str, expected: str) -> None:
    assert normalize_number(raw) == expected


@pytest.mark.parametrize(("raw", "expected"), [
    ("`./src/app.py`", "src/app.py"),
    ("src\\pkg\\mod.py", "src/pkg/mod.py"),
    ("tests/test_x.py:12:4", "tests/test_x.py"),
    ("build/", "build"),
    ("/", "/"),
    ("Src/App.py", "Src/App.py"),  # case is kept: paths are case-sensitive
])
def test_paths_are_written_one_way(raw: str, expected: str) -> None:
    assert normalize_path(raw) == expected


@pytest.mark.parametrize(("raw", "expected"), [
    ("E       KeyError: 'invoice_00a2e1'", "keyerror: 'invoice_00a2e1'"),
    ("`ValueError: bad input (line 3)`", "valueerror: bad input"),
    ("  AssertionError:   unexpected state  ", "assertionerror: unexpected state"),
])
def test_error_lines_drop_the_pytest_marker_and_a_trailing_location(raw: str,
                                                                    expected: str) -> None:
    assert normalize_error(raw) == expected


@pytest.mark.parametrize(("raw", "expected"), [
    ("Modified", "edited"), ("added", "created"), ("removed", "deleted"),
    ("EDITED.", "edited"), ("renamed", "renamed"),
])
def test_choices_map_their_synonyms(raw: str, expected: str) -> None:
    assert normalize_choice(raw) == expected


@pytest.mark.parametrize(("raw", "expected"), [
    ("git status --short", "git status"),
    ("cd /repo && mix test test/a_test.exs", "mix test"),
    ("FOO=1 BAR=2 pytest -q tests", "pytest"),
    ("python -m pytest -v tests/test_x.py", "python -m pytest"),
    ("/usr/bin/ls -la", "ls"),
    ("npm run build", "npm run"),
    ("bd ready", "bd ready"),
    ("echo 'unterminated", "echo"),
    ("", ""),
])
def test_a_command_reads_as_its_program_and_subcommand(raw: str, expected: str) -> None:
    assert normalize_command(raw) == expected


@pytest.mark.parametrize(("haystack", "needle", "found"), [
    ("port 8080 now", "8080", True),
    ("port 18080 now", "8080", False),
    ("port 80801", "8080", False),
    ("seen_a_1 and seen_a_12", "seen_a_12", True),
    ("keyerror: 'x'", "keyerror: 'x'", True),
    ("anything", "", False),
])
def test_contains_never_matches_inside_a_longer_word(haystack: str, needle: str,
                                                     found: bool) -> None:
    assert contains(haystack, needle) is found


@pytest.mark.parametrize(("answer", "expected", "found"), [
    ("I edited src/app.py today", "/repo/src/app.py", True),
    ("see `repo/src/app.py`", "/repo/src/app.py", True),
    ("just app.py", "/repo/src/app.py", False),  # a bare basename is too weak
    ("app.py", "app.py", True),
    ("myapp.py", "app.py", False),
])
def test_a_path_matches_by_itself_or_a_trailing_part_of_two_components(
        answer: str, expected: str, found: bool) -> None:
    assert path_matches(answer, expected) is found


def test_every_answer_type_has_a_normaliser() -> None:
    assert set(NORMALIZERS) == {"text", "number", "path", "error", "choice", "command"}
    assert all(callable(f) and f("x") == "x" for f in NORMALIZERS.values())
