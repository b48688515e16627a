"""The agents experiment: the memory set selected as ``dataset:memory`` and kept out of
``dataset:all``, a ``[replay]`` at each policy's own trigger with loops allowed, the provider-side
policies stored ``n/a`` with their reason, and ``experiments/agents.toml`` run offline, printing
every policy with its detectors, survival curve and cliff."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from click.testing import CliRunner

from tests.conftest import ROOT
from workbench.errors import ConfigError
from workbench.harness import Experiment, run_experiment
from workbench.harness.experiment._cells import load_experiment_sessions
from workbench.strategies import POLICIES

AGENTS = ROOT / "experiments" / "agents.toml"


def _spec(tmp_path: Path, **over: Any) -> Experiment:
    data: dict[str, Any] = {"name": "t", "sessions": ["dataset:memory"], "models": ["extractive"],
                            "base_dir": str(tmp_path)}
    data.update(over)
    return Experiment.from_dict(data)


def test_dataset_memory_is_the_memory_set_and_dataset_all_never_holds_it(tmp_path: Path) -> None:
    memory = [s.id for s in load_experiment_sessions(_spec(tmp_path))]
    assert memory == ["mem-024k-s49", "mem-028k-s52", "mem-030k-s50", "mem-032k-s54",
                      "mem-036k-s51", "mem-040k-s53"]
    shipped = [s.id for s in load_experiment_sessions(_spec(tmp_path, sessions=["dataset:all"]))]
    assert len(shipped) == 48 and not any(i.startswith("mem-") for i in shipped)


def test_an_unknown_dataset_set_names_the_known_ones(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"^sessions: 'dataset:nope' names no shipped dataset "
                                          r"set \(no datasets/nope/manifest.json\); known: "
                                          r"dataset:all, dataset:memory$"):
        load_experiment_sessions(_spec(tmp_path, sessions=["dataset:nope"]))


def test_a_replay_table_takes_policy_thresholds_rounds_per_turn_and_detectors(
        tmp_path: Path) -> None:
    exp = _spec(tmp_path, replay={"thresholds": ["policy", 0.6], "rounds_per_turn": 3,
                                  "detectors": True})
    assert exp.replay is not None and exp.replay.thresholds == ["policy", 0.6]
    again = Experiment.from_dict({**exp.to_dict(), "base_dir": str(tmp_path)})
    assert again.replay == exp.replay
    with pytest.raises(ConfigError, match=r"replay.rounds_per_turn: Input should be less than "
                                          r"or equal to 10"):
        _spec(tmp_path, replay={"rounds_per_turn": 11})
    with pytest.raises(ConfigError, match=r"replay.thresholds.0"):
        _spec(tmp_path, replay={"thresholds": ["own"]})


def test_policy_replays_store_no_threshold_and_provider_side_ones_store_na(
        tmp_path: Path) -> None:
    exp = _spec(tmp_path, sessions=[str(ROOT / "datasets" / "memory" / "mem-024k-s49.json")],
                strategies=["none"],
                replay={"strategies": ["codex", "openai-responses-compact"], "windows": ["8k"],
                        "thresholds": ["policy"]})
    results = run_experiment(exp, tmp_path / "run", progress=False)
    rows = results.replays.set_index("strategy")
    assert rows.loc["codex", "status"] == "ok"
    assert pd.isna(rows.loc["codex", "threshold"])  # NULL: each at its own trigger
    assert rows.loc["openai-responses-compact", "status"] == "n/a"
    assert rows.loc["openai-responses-compact", "error_message"].startswith(
        "OpenAI's Responses compaction runs on openai's servers: it needs a live openai model")
    [codex] = results.replay_results()
    assert codex.threshold is None and codex.trigger_tokens == int(0.9 * 8192)
    assert list(results.replay_table()["strategy"]) == ["codex"]
    detectors = results.replay_detectors()
    assert list(detectors.columns[:4]) == ["strategy", "window", "threshold", "sessions"]
    assert detectors.loc[0, "trigger_tokens"] == int(0.9 * 8192)
    survival = results.replay_survival()
    assert list(survival["round"]) == list(range(1, len(survival) + 1))
    db = sqlite3.connect(tmp_path / "run" / "results.sqlite")
    stored = db.execute("SELECT status, threshold FROM replays ORDER BY strategy").fetchall()
    db.close()
    assert stored == [("ok", None), ("n/a", None)]


def test_agents_toml_runs_offline_and_prints_every_policy_with_its_detectors(
        tmp_path: Path) -> None:
    from workbench.cli import cli

    result = CliRunner().invoke(cli, ["run", str(AGENTS), "--out", str(tmp_path / "agents"),
                                       "--no-progress", "--verbose"])  # the replay's detail
    assert result.exit_code == 0, result.output
    out = result.output
    detectors = out[out.index("failure detectors per strategy"):out.index("survival:")]
    survival = out[out.index("survival:"):out.index("not run (n/a):")]
    na = out[out.index("not run (n/a):"):out.index("Verdict:")]
    offline = [p for p in POLICIES if p not in ("anthropic-server-compaction",
                                                "openai-responses-compact")]
    for part in (detectors, survival):
        named = [line.split()[0] for line in part.splitlines() if line.strip()]
        assert all(name in named for name in offline), part
    assert "retrig fill fill max growth loops req kept redone stale    cliff" in detectors
    assert all(line.rstrip().endswith(("none",)) or "round " in line
               for line in survival.splitlines()[2:] if line.strip())
    for name in ("anthropic-server-compaction", "openai-responses-compact"):
        assert f"  {name}: n/a (6 replays): " in na
