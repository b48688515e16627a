"""What the runner stores per cell: outcome kind by exception class, error class, HTTP retries,
reported vs estimated tokens, and the effective window with the tokenizer the cap counted with."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from workbench.compaction import Usage
from workbench.compaction._summarize import CompactionCallFailed, CompactionContextExceeded
from workbench.errors import (
    AuthenticationError,
    CacheMiss,
    ConfigError,
    ContextLengthExceeded,
    RateLimited,
    TemplateError,
)
from workbench.harness import Experiment, run_experiment
from workbench.harness.results._outcomes import (
    error_cause,
    error_class,
    kind_from_row,
    outcome_kind,
)
from workbench.messages import Message
from workbench.models import WindowCap
from workbench.models._errors_map import TransientModelError
from workbench.models._window import window_facts
from workbench.sessions import Session
from workbench.testing import ScriptedModel

REPLY = ('```json\n{"user_intent": ["fix the bug in app.py"], "current_work": "editing"}\n```')


def wrapped(exc: BaseException) -> CompactionCallFailed:
    outer = CompactionCallFailed(str(exc), [], [])
    outer.__cause__ = exc
    return outer


@pytest.mark.parametrize(("exc", "kind", "cls"), [
    (None, "ok", None),
    (CompactionContextExceeded("exhausted", [], [], "m"), "failed", "ContextLengthExceeded"),
    (ContextLengthExceeded("too long"), "failed", "ContextLengthExceeded"),
    (wrapped(CacheMiss("no recording")), "error", "CacheMiss"),
    (wrapped(AuthenticationError("bad key")), "error", "AuthenticationError"),
    (wrapped(RateLimited("429")), "error", "RateLimited"),
    (wrapped(TransientModelError("503")), "error", "TransientModelError"),
    (TemplateError("t", "broken"), "error", "TemplateError"),
    (wrapped(RuntimeError("boom")), "error", "RuntimeError"),
])
def test_outcome_kind_and_error_class_follow_the_exception_class(exc, kind, cls) -> None:
    assert outcome_kind(exc) == kind
    if exc is not None:
        assert error_class(exc) == cls


def test_rows_stored_before_the_outcome_column_are_classified_by_their_type() -> None:
    assert [kind_from_row(s, t) for s, t in [
        ("ok", None), ("error", "CompactionContextExceeded"), ("error", "CompactionCallFailed"),
        ("error", "ContextLengthExceeded")]] == ["ok", "failed", "error", "failed"]
    assert error_cause("CacheMiss").startswith("replay-only cache has no recording")
    assert error_cause("Whatever") == "unexpected error; see the cell's traceback"


def write_session(folder: Path, sid: str) -> None:
    messages = [Message.user(f"fix the bug in app.py ({sid})"),
                Message.assistant("looking").with_tool_request("t0", "shell", {"command": "ls"}),
                Message.user().with_tool_response("t0", "app.py"), Message.assistant("done")]
    path = folder / f"{sid}.json"
    Session(sid, "goose-json", str(path), messages).write_goose_json(path)


def run_with(tmp_path: Path, factory: Any, **over: Any) -> list[dict[str, Any]]:
    write_session(tmp_path, "s1")
    exp = Experiment.from_dict({"name": "t", "sessions": ["s1.json"], "models": ["extractive"],
                                "base_dir": str(tmp_path), **over})
    results = run_experiment(exp, tmp_path / "run", model_factory=factory, progress=False)
    return results.cells.to_dict("records")


def test_a_reply_with_provider_counts_is_reported_and_its_http_retries_are_kept(
        tmp_path: Path) -> None:
    usage = Usage(model="p", input_tokens=900, output_tokens=100, cost=0.0,
                  extra={"retries_made": 2})
    (row,) = run_with(tmp_path, lambda cell: ScriptedModel([REPLY], usage=usage))
    assert (row["outcome_kind"], row["reported_tokens"], row["estimated_tokens"],
            row["http_retries"], row["retries"]) == ("ok", 1000, 0, 2, 0)


def test_a_reply_without_counts_is_estimated(tmp_path: Path) -> None:
    (row,) = run_with(tmp_path, lambda cell: ScriptedModel([REPLY]))
    assert row["reported_tokens"] == 0
    assert row["estimated_tokens"] == row["billed_input_tokens"] + row["billed_output_tokens"] > 0


def test_the_extractive_baseline_counts_as_estimated(tmp_path: Path) -> None:
    (row,) = run_with(tmp_path, None)
    assert row["reported_tokens"] == 0 and row["estimated_tokens"] > 0
    assert (row["effective_window"], row["window_tokenizer"]) == (None, None)  # no cap


def test_a_rate_limit_that_outlasted_its_retries_is_an_error_with_its_http_retries(
        tmp_path: Path) -> None:
    err = RateLimited("gave up after 5 attempts: 429", "p")
    err.attempts = 5  # type: ignore[attr-defined]
    (row,) = run_with(tmp_path, lambda cell: ScriptedModel(always_raise=err))
    assert (row["status"], row["outcome_kind"], row["error_class"], row["error_type"],
            row["http_retries"]) == ("error", "error", "RateLimited", "CompactionCallFailed", 4)


def test_a_cache_miss_is_an_infrastructure_error(tmp_path: Path) -> None:
    (row,) = run_with(tmp_path, lambda cell: ScriptedModel(always_raise=CacheMiss("none")))
    assert (row["outcome_kind"], row["error_class"]) == ("error", "CacheMiss")


def test_an_exhausted_ladder_is_a_failed_outcome(tmp_path: Path) -> None:
    (row,) = run_with(tmp_path, lambda cell: ScriptedModel(window=10))
    assert (row["outcome_kind"], row["error_class"], row["attempts"]) == (
        "failed", "ContextLengthExceeded", 5)


class OwnTokenizer(ScriptedModel):
    """A model with its own tokenizer: counts one token per character, window 50."""

    def count_prompt_tokens(self, system: str, messages: list[Message]) -> int:
        return len(system) + sum(len(m.concat_text()) for m in messages)

    def tokenizer_name(self) -> str:
        return "chars"

    def context_window(self) -> int:
        return 50


def test_the_cap_counts_with_the_model_own_tokenizer_and_reports_the_effective_window() -> None:
    cap = WindowCap(OwnTokenizer([REPLY]), 8192)
    assert window_facts(cap) == (50, "chars")
    cap.check_window("x" * 8000, [])
    with pytest.raises(ContextLengthExceeded, match="prompt of 8193 tokens exceeds"):
        cap.check_window("x" * 8193, [])
    plain = WindowCap(ScriptedModel([REPLY]), 8192)  # a model no tokenizer belongs to
    assert window_facts(plain) == (8192, "o200k (fallback)")


def test_a_model_whose_own_tokenizer_is_missing_is_a_config_error_not_another_tokenizer() -> None:
    class Missing(OwnTokenizer):
        def count_prompt_tokens(self, system: str, messages: list[Message]) -> None:
            return None

    cap = WindowCap(Missing([REPLY]), 100)
    assert cap.window_tokenizer() == "chars"
    with pytest.raises(ConfigError, match="counts prompts in chars, the model's own tokenizer"):
        cap.check_window("word " * 90, [])
