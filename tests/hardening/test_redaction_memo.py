"""Redaction remembered by text while a run lasts: the same answer every time, and a secret
that appears later (set in the environment, registered) masked in a text redacted before."""

from __future__ import annotations

import pytest

from workbench._memo import run_memo
from workbench._redact import redact, redactor

SECRET = "zq-memo-9f8e7d6c5b4a3f2e1d"
TEXT = f'the provider echoed "{SECRET}" back'


def test_a_text_is_redacted_once_per_run_and_the_same_every_time() -> None:
    with run_memo() as memo:
        row = redactor()
        assert [row.text(TEXT), row.text(TEXT), redact(TEXT)] == [TEXT] * 3
        assert len(memo.redacted) == 1
        assert redact("api_key=abcdefgh12345678") == "api_key=***"
        assert len(memo.redacted) == 2
    assert len(memo.redacted) == 0  # dropped with the run


def test_a_secret_known_only_after_a_text_was_redacted_is_masked_in_it(
        monkeypatch: pytest.MonkeyPatch) -> None:
    with run_memo():
        assert redact(TEXT) == TEXT
        monkeypatch.setenv("MEMO_TEST_API_KEY", SECRET)
        assert redact(TEXT) == 'the provider echoed "***" back'
        assert redact(TEXT, secrets=["provider"]) == 'the *** echoed "***" back'
