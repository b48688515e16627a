"""The strategy registry: names, settings validation, plugins, and the public names."""

from __future__ import annotations

import asyncio

import pytest

import workbench
from workbench.errors import ConfigError
from workbench.strategies import (
    STRATEGIES,
    CompactionRequest,
    Strategy,
    StrategyResult,
    get_strategy,
    strategy,
    strategy_names,
)


def test_the_built_in_strategies_are_registered() -> None:
    assert sorted(strategy_names()) == [
        "aider", "anthropic-clear-tool-uses", "anthropic-server-compaction", "awaken",
        "claude-code", "codex", "gemini-cli", "goose", "langchain", "mask", "none",
        "openai-responses-compact", "opencode", "reference", "sliding-window", "truncate"]
    free = sorted(n for n, c in STRATEGIES.items() if not c.uses_model)
    assert free == ["anthropic-clear-tool-uses", "mask", "none", "reference", "truncate"]


def test_settings_are_validated_by_each_strategy() -> None:
    assert get_strategy("mask", {"keep_last": 1}, placeholder="[x]").settings.model_dump() == {
        "keep_last": 1, "placeholder": "[x]"}
    with pytest.raises(ConfigError, match="strategy 'mask': keep_last: Input should be greater "
                                          "than or equal to 0"):
        get_strategy("mask", keep_last=-1)
    with pytest.raises(ConfigError, match="strategy 'goose': temperature: Extra inputs are not "
                                          "permitted"):
        get_strategy("goose", temperature=0)
    with pytest.raises(ConfigError, match=r"unknown strategy 'trim' \(known: aider, "
                                          r"anthropic-clear-tool-uses, "):
        get_strategy("trim")


def test_a_registered_plugin_strategy_runs_like_a_built_in() -> None:
    @strategy("keep-last-two")
    class KeepLastTwo(Strategy):
        uses_model = False

        async def compact(self, request: CompactionRequest) -> StrategyResult:
            return StrategyResult(context=list(request.messages)[-2:])

    try:
        from workbench.messages import Message

        out = asyncio.run(get_strategy("keep-last-two").compact(CompactionRequest(
            messages=[Message.user("a"), Message.user("b"), Message.user("c")])))
        assert [m.concat_text() for m in out.context] == ["b", "c"]
        with pytest.raises(ConfigError, match="already registered by "):
            strategy("keep-last-two")(type("Other", (KeepLastTwo,), {}))
    finally:
        STRATEGIES.pop("keep-last-two")


@pytest.mark.parametrize("name", ["Strategy", "StrategyResult", "CompactionRequest", "strategy",
                                  "get_strategy", "strategy_names", "replay_session",
                                  "replay_session_async", "ReplayResult", "replay_table",
                                  "plot_replay"])
def test_the_strategy_names_are_public(name: str) -> None:
    assert name in workbench.__all__
    assert getattr(workbench, name) is not None
