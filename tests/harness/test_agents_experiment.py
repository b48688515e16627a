"""The agents experiment: the memory set selected as ``dataset:memory`` and kept out of
``dataset:all``, a ``[replay]`` at each policy's own trigger with loops allowed, the provider-side
policies stored ``n/a`` with their reason, and ``experiments/agents.toml`` run offline, printing
every policy with its detectors, survival curve and cliff, and ending with the policy verdict."""

from __future__ import annotations

import re
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
    # Without `detectors = true` the run and its report stay as they were: no policy verdict.
    from workbench.harness import write_report

    page = write_report(results)["html"].read_text(encoding="utf-8")
    assert '<section id="replay">' in page and 'id="policies"' not in page


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
    # The run ends with the policy verdict: codex keeps the most facts; sliding-window is not
    # significantly worse but bills more; the cheaper four lose too many facts; every
    # infeasible policy is unranked with its reason.
    policy = out[out.index("Policy verdict:"):out.index("run folder:")]
    table = policy[policy.index("  policy recall"):policy.index("anthropic-clear-tool-uses:")]
    rows = [line.split() for line in table.splitlines()[1:] if line.strip()]
    assert [(r[0], r[1], " ".join(r[-2:])) for r in rows] == [
        ("codex", "72.8%", "1. pick"), ("sliding-window", "50.1%", "2. eligible"),
        ("aider", "20.1%", "on recall"), ("opencode", "25.1%", "on recall"),
        ("goose", "25.5%", "on recall"), ("claude-code", "27.9%", "on recall")]
    assert "    anthropic-clear-tool-uses: unranked, prompts over the window in 5 of 6 sessions " \
           "(23.5 overflow turns per session)" in policy
    assert "    gemini-cli: unranked, prompts over the window in 2 of 6 sessions" in policy
    assert "    langchain: unranked, prompts over the window in 2 of 6 sessions" in policy
    for name in ("anthropic-server-compaction", "openai-responses-compact"):
        assert f"    {name}: unranked, n/a in 6 of 6 sessions: " in policy
    assert "    Recommendation: codex — the best recall after the last compaction (72.8%), not " \
           "significantly ahead of sliding-window;" in policy
    assert policy.rstrip().endswith("cheaper but significantly worse on recall: aider, "
                                    "opencode, goose, claude-code")
    # docs/strategies.md shows the tables and the verdict exactly as the command prints them.
    docs = (ROOT / "docs" / "strategies.md").read_text(encoding="utf-8")
    shown = [line for block in re.findall(r"```text\n(.*?)```", docs, re.S)
             for line in block.splitlines() if line.strip()]
    assert "Policy verdict: which compaction policy to run, per window x threshold of the " \
           "replays (every feasible policy against the" in shown
    assert [line for line in shown if line not in out.splitlines()] == []
    # The report shows the same: the detectors, the survival curve (table and plot) and the
    # policy verdict, rendered from the same objects.
    from workbench.harness import write_report

    paths = write_report(tmp_path / "agents")
    md = paths["markdown"].read_text(encoding="utf-8")
    page = paths["html"].read_text(encoding="utf-8")
    assert paths["plot_survival"].read_bytes().startswith(b"\x89PNG")
    for heading in ("### Failure detectors", "### Survival"):
        assert heading in md
    assert "| codex | 8k | policy | 6 | 0% | 18% | 23% | 0.0 | 0.0 | 100% | 0.8 | 2.5 | none |" in md
    # the policy verdict is the run's Verdict's: its Markdown block ends with it, as printed
    block = md[md.index("## Verdict"):]
    block = block[:block.index("```\n", block.index("```text") + 7)]
    assert block.rstrip().endswith(policy.rstrip())
    policies = page[page.index('<div id="policies">'):]
    assert "<h3>Failure detectors</h3>" in policies and 'alt="survival"' in policies
    assert "<h4>8k, each policy at its own trigger (6 sessions)</h4>" in policies
    assert "<li>openai-responses-compact: unranked, n/a in 6 of 6 sessions: " in policies
