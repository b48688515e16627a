"""The compaction workbench: evaluate and tune LLM conversation compaction.

Layers, smallest first (each depends only on the ones above it):

- `workbench.messages`, `workbench.tokens`: Goose's message model and token estimation.
- `workbench.compaction`: the faithful port of ``goose-context-management`` (format, templates,
  structured summary, summarize, compact, provider).
- `workbench.context_mgmt`: Goose's ``context_mgmt`` (threshold, compact_messages, visibility).
- `workbench.strategies`: other ways to fit a window, beside the port.
- `workbench.models`: `CompactionModel` implementations and wrappers (litellm, local, extractive,
  window cap, response cache); `workbench.testing` holds scripted fakes.
- `workbench.sessions`: importers for recorded sessions and the planted-fact generator.
- `workbench.harness`: experiments, runner, results store, metrics, tables; `workbench.cli`.
- `workbench.tune`, `workbench.export`: the tuning search and template export with evidence.

Public names are imported lazily so ``import workbench`` stays fast (litellm and pandas load
only when used).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from workbench._lazy import lazy_exports
from workbench._version import __version__

_EXPORTS: dict[str, str] = {
    # messages and tokens
    "Message": "workbench.messages",
    "MessageMetadata": "workbench.messages",
    "TokenEstimator": "workbench.tokens",
    "TiktokenEstimator": "workbench.tokens",
    # errors
    "WorkbenchError": "workbench.errors",
    "ContextLengthExceeded": "workbench.errors",
    "SessionFormatError": "workbench.errors",
    "TemplateError": "workbench.errors",
    "ConfigError": "workbench.errors",
    "ModelCallError": "workbench.errors",
    "CompactionError": "workbench.errors",
    "CacheMiss": "workbench.errors",
    # the compaction port
    "Usage": "workbench.compaction",
    "CompactionModel": "workbench.compaction",
    "Templates": "workbench.compaction",
    "RenderLimits": "workbench.compaction",
    "code_fence": "workbench.compaction",
    "StructuredSummary": "workbench.compaction",
    "FileActivity": "workbench.compaction",
    "format_message_for_compacting": "workbench.compaction",
    "filter_tool_responses": "workbench.compaction",
    "REMOVAL_PERCENTAGES": "workbench.compaction",
    "summarize": "workbench.compaction",
    "Summary": "workbench.compaction",
    "compact": "workbench.compaction",
    "CompactionInput": "workbench.compaction",
    "CompactionOutput": "workbench.compaction",
    "CompactingProvider": "workbench.compaction",
    "DEFAULT_COMPACTION_THRESHOLD": "workbench.compaction",
    "auto_compact_enabled": "workbench.compaction",
    # goose context_mgmt
    "compact_messages": "workbench.context_mgmt",
    "check_if_compaction_needed": "workbench.context_mgmt",
    "CompactionResult": "workbench.context_mgmt",
    # sessions
    "Session": "workbench.sessions",
    "load_session": "workbench.sessions",
    "load_sessions": "workbench.sessions",
    # models
    "load_model": "workbench.models",
    # harness
    "Experiment": "workbench.harness",
    "ExecutorSpec": "workbench.harness",
    "run_experiment": "workbench.harness",
    "Results": "workbench.harness",
    "run_experiment_async": "workbench.harness",
    "ResultsStore": "workbench.harness",
    "compute_metrics": "workbench.harness",
    "metric": "workbench.harness",
    "comparison_table": "workbench.harness",
    "paired_comparison": "workbench.harness",
    "write_report": "workbench.harness",
    "verdict": "workbench.harness",
    "Verdict": "workbench.harness",
    "Recommendation": "workbench.harness",
    # more of the port and the layers around it
    "Attempt": "workbench.compaction",
    "inspect_session": "workbench.sessions",
    "generate_session": "workbench.sessions",
    "parse_model_spec": "workbench.models",
    "WindowCap": "workbench.models",
    "ResponseCache": "workbench.models",
    "CachedModel": "workbench.models",
    "ExtractiveModel": "workbench.models",
    "user_dir": "workbench._paths",
    # hardening (issue 9)
    "redact": "workbench._redact",
    "redact_obj": "workbench._redact",
    "RunFolderLocked": "workbench.errors",
    "StorageError": "workbench.errors",
    "BudgetReached": "workbench.errors",
    # strategies and whole-session replay (issue 10)
    "Strategy": "workbench.strategies",
    "StrategyResult": "workbench.strategies",
    "CompactionRequest": "workbench.strategies",
    "strategy": "workbench.strategies",
    "get_strategy": "workbench.strategies",
    "strategy_names": "workbench.strategies",
    "replay_session": "workbench.strategies",
    "replay_session_async": "workbench.strategies",
    "ReplayResult": "workbench.strategies",
    "replay_table": "workbench.strategies",
    "replay_ranking": "workbench.strategies",
    "plot_replay": "workbench.strategies",
    # the agents' policies and the failures users report (issue 35)
    "POLICIES": "workbench.strategies",
    "survival_curve": "workbench.strategies",
    "policy_verdict": "workbench.harness.results",
    "PolicyVerdict": "workbench.harness.results",
    "StrategyUnavailable": "workbench.errors",
    # tuning (issue 11): shared calls, the search, export with evidence
    "SharedCalls": "workbench.models",
    "Objective": "workbench.tune",
    "TuneResult": "workbench.tune",
    "tune_async": "workbench.tune",
    "write_winner": "workbench.tune",
    "load_variant": "workbench.harness.experiment",
    "point_label": "workbench.harness.experiment",
    "template_variables": "workbench.harness.experiment",
    "export_from_run": "workbench.export",
    "restore_last_export": "workbench.export",
    # functional probes (issue 19): questions answered from the compacted context
    "Question": "workbench.probes",
    "QuestionSet": "workbench.probes",
    "build_questions": "workbench.probes",
    "grade_answer": "workbench.probes",
    "LookupAnswerer": "workbench.probes",
    "ReplyFormatError": "workbench.errors",
}

__all__ = sorted(_EXPORTS)


__getattr__, __dir__ = lazy_exports("workbench", _EXPORTS, globals())


if TYPE_CHECKING:  # pragma: no cover - for type checkers and IDEs only
    from workbench._paths import (
        user_dir,
    )
    from workbench._redact import (
        redact,
        redact_obj,
    )
    from workbench.compaction import (
        DEFAULT_COMPACTION_THRESHOLD,
        REMOVAL_PERCENTAGES,
        Attempt,
        CompactingProvider,
        CompactionInput,
        CompactionModel,
        CompactionOutput,
        FileActivity,
        RenderLimits,
        StructuredSummary,
        Summary,
        Templates,
        Usage,
        auto_compact_enabled,
        code_fence,
        compact,
        filter_tool_responses,
        format_message_for_compacting,
        summarize,
    )
    from workbench.context_mgmt import (
        CompactionResult,
        check_if_compaction_needed,
        compact_messages,
    )
    from workbench.errors import (
        BudgetReached,
        CacheMiss,
        CompactionError,
        ConfigError,
        ContextLengthExceeded,
        ModelCallError,
        ReplyFormatError,
        RunFolderLocked,
        SessionFormatError,
        StorageError,
        StrategyUnavailable,
        TemplateError,
        WorkbenchError,
    )
    from workbench.export import (
        export_from_run,
        restore_last_export,
    )
    from workbench.harness import (
        ExecutorSpec,
        Experiment,
        Recommendation,
        Results,
        ResultsStore,
        Verdict,
        comparison_table,
        compute_metrics,
        metric,
        paired_comparison,
        run_experiment,
        run_experiment_async,
        verdict,
        write_report,
    )
    from workbench.harness.experiment import (
        load_variant,
        point_label,
        template_variables,
    )
    from workbench.harness.results import PolicyVerdict, policy_verdict
    from workbench.messages import (
        Message,
        MessageMetadata,
    )
    from workbench.models import (
        CachedModel,
        ExtractiveModel,
        ResponseCache,
        SharedCalls,
        WindowCap,
        load_model,
        parse_model_spec,
    )
    from workbench.probes import (
        LookupAnswerer,
        Question,
        QuestionSet,
        build_questions,
        grade_answer,
    )
    from workbench.sessions import (
        Session,
        generate_session,
        inspect_session,
        load_session,
        load_sessions,
    )
    from workbench.strategies import (
        POLICIES,
        CompactionRequest,
        ReplayResult,
        Strategy,
        StrategyResult,
        get_strategy,
        plot_replay,
        replay_ranking,
        replay_session,
        replay_session_async,
        replay_table,
        strategy,
        strategy_names,
        survival_curve,
    )
    from workbench.tokens import (
        TiktokenEstimator,
        TokenEstimator,
    )
    from workbench.tune import (
        Objective,
        TuneResult,
        tune_async,
        write_winner,
    )
