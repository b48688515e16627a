"""The names the issues promise are importable from `workbench` and listed in `__all__`."""

from __future__ import annotations

import importlib

import pytest

import workbench

PROMISED = [
    # issue 2: the compaction core
    "Message", "Usage", "ContextLengthExceeded", "CompactionModel", "TokenEstimator",
    "TiktokenEstimator", "Templates", "code_fence", "StructuredSummary", "FileActivity",
    "format_message_for_compacting", "filter_tool_responses", "REMOVAL_PERCENTAGES", "summarize",
    "Summary", "compact", "CompactingProvider", "DEFAULT_COMPACTION_THRESHOLD",
    "auto_compact_enabled",
    # issue 3: sessions
    "load_session", "load_sessions", "Session", "SessionFormatError",
    # issue 4: models
    "load_model",
    # issue 5: harness
    "Experiment", "run_experiment", "Results",
    # issue 8: the verdict
    "verdict", "Verdict",
    # issue 9: hardening
    "redact", "RunFolderLocked", "BudgetReached", "RenderLimits",
    # issue 10: strategies and replay
    "Strategy", "strategy", "replay_session", "ReplayResult", "replay_table", "plot_replay",
    # issue 11: shared calls
    "SharedCalls",
    # issue 12: the executor spec
    "ExecutorSpec",
    # issue 19: functional probes
    "Question", "QuestionSet", "build_questions", "grade_answer", "LookupAnswerer",
    "ReplyFormatError",
]

AWAKEN_PROMISED = [
    "ContextWindowPolicy", "CompactionConfig", "estimate_tokens", "truncate",
    "adjust_split_for_tool_pairs", "patch_dangling_tool_calls", "compact_tool_results",
    "find_compaction_boundary", "plan_compaction", "render_transcript",
]


@pytest.mark.parametrize("name", AWAKEN_PROMISED)
def test_every_awaken_name_issue_10_fixes_is_exported_from_its_package(name: str) -> None:
    awaken = importlib.import_module("workbench.strategies.awaken")
    assert name in awaken.__all__, f"{name} missing from workbench.strategies.awaken.__all__"
    assert getattr(awaken, name) is not None


@pytest.mark.parametrize("name", PROMISED)
def test_every_promised_name_is_exported_and_importable(name: str) -> None:
    assert name in workbench.__all__, f"{name} missing from workbench.__all__"
    assert getattr(workbench, name) is not None


def test_every_name_in_all_resolves() -> None:
    for name in workbench.__all__:
        assert hasattr(workbench, name), name


def test_unknown_attribute_raises_attribute_error() -> None:
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        workbench.nope  # noqa: B018


def test_importing_workbench_does_not_import_litellm_or_pandas() -> None:
    import subprocess
    import sys

    code = ("import sys, workbench; "
            "print(int('litellm' in sys.modules), int('pandas' in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["0", "0"]


def test_each_subpackage_lists_its_public_names() -> None:
    for pkg in ["workbench.messages", "workbench.tokens", "workbench.sessions"]:
        mod = importlib.import_module(pkg)
        for name in mod.__all__:
            assert hasattr(mod, name), f"{pkg}.{name}"
