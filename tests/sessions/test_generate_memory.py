"""The memory set (generator version 4): the files are what the generator writes today, each
session updates the port three times and the batch limit twice, marks when each task was done,
and asks about names no message contains."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import ROOT
from workbench.sessions import Session, load_session
from workbench.sessions._generate import MEMORY, generate_dataset, message_text

MEMORY_DIR = ROOT / "datasets" / "memory"


@pytest.fixture(scope="module")
def sessions() -> list[Session]:
    return [load_session(MEMORY_DIR / f"mem-{round(s.target_tokens / 1000):03d}k-s{s.seed}.json")
            for s in MEMORY]


def test_the_memory_files_are_what_the_generator_writes_today(tmp_path: Path) -> None:
    generate_dataset(tmp_path, MEMORY)
    for path in sorted(MEMORY_DIR.glob("*.json")):
        assert (tmp_path / path.name).read_bytes() == path.read_bytes(), path.name


def test_one_session_per_shape_of_24k_to_41k_tokens() -> None:
    manifest = json.loads((MEMORY_DIR / "manifest.json").read_text(encoding="utf-8"))
    shapes = sorted(e["shape"] for e in manifest["sessions"])
    assert shapes == ["debugging", "discussion", "feature", "refactor", "review", "tool-loop"]
    assert all(20_000 <= e["tokens"] <= 41_000 and e["version"] == 4
               for e in manifest["sessions"])


def test_the_port_changes_three_times_and_the_limit_twice(sessions: list[Session]) -> None:
    for s in sessions:
        facts = {f["id"]: f for f in s.meta["planted_facts"]}
        for prefix, changes in (("port ", 3), ("batch limit ", 2)):
            chain = [f for f in facts.values() if f["text"].startswith(prefix)]
            assert len(chain) == changes + 1, s.id
            assert [f["stale"] for f in chain] == [True] * changes + [False], s.id
            assert all(facts[f["superseded_by"]]["message_index"] > f["message_index"]
                       for f in chain[:-1]), s.id


def test_each_finished_task_says_done_after_it_was_asked(sessions: list[Session]) -> None:
    for s in sessions:
        done = [t for t in s.meta["tasks"] if t["done_at"] is not None]
        pending = [t for t in s.meta["tasks"] if t["done_at"] is None]
        assert len(done) >= 2 and pending, s.id
        for t in done:
            assert t["asked_at"] < t["done_at"], s.id
            assert s.messages[t["done_at"]].concat_text() == f"Done: {t['text']}.", s.id
        assert {t["text"] for t in pending} == {p["text"] for p in s.meta["pending_tasks"]}


def test_no_message_holds_what_an_abstention_question_asks_about(sessions: list[Session]) -> None:
    for s in sessions:
        corpus = "\n".join(message_text(m) for m in s.messages)
        assert len(s.meta["abstentions"]) == 3, s.id
        assert not any(a["subject"] in corpus for a in s.meta["abstentions"]), s.id


def test_the_cli_regenerates_the_memory_set_and_takes_no_seeds_with_it(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from workbench.cli._sessions_generate import command

    result = CliRunner().invoke(command, ["--memory", "--out", str(tmp_path)])
    assert result.exit_code == 0, result.output
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        p.name for p in MEMORY_DIR.glob("*.json"))
    assert result.output.splitlines()[0].startswith(f"{tmp_path / 'mem-024k-s49.json'}: debugging")
    bad = CliRunner().invoke(command, ["--memory", "--seed", "3", "--tokens", "5k"])
    assert bad.exit_code == 2 and "give it no --seed or --tokens" in bad.output
