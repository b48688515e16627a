"""A provider answerer and judge through the litellm gateway, against the local
OpenAI-compatible stub on 127.0.0.1: the questions and answers are saved under qa/, the calls
are recorded, billed and cached like summary calls, and no key is written anywhere."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.hardening._provider_server import ProviderServer
from tests.probes._sessions import manifest_session
from workbench.harness import Experiment, Results, run_experiment
from workbench.probes import DIMENSIONS, JUDGE_SYSTEM, build_questions

pytestmark = pytest.mark.filterwarnings("ignore:Item.*ReadOnly:UserWarning")

KEY = "sk-test-qa-0123456789abcdef"
RUBRIC = json.dumps({d: {"score": 4, "reason": "close to the reference"} for d in DIMENSIONS})


@pytest.fixture
def server() -> Iterator[ProviderServer]:
    srv = ProviderServer().start()
    yield srv
    srv.stop()


def answers_like_the_manifest(body: dict[str, Any]) -> str:
    messages = body["messages"]
    if messages[0]["role"] == "system" and messages[0]["content"] == JUDGE_SYSTEM:
        return RUBRIC
    expected = {q.text: q.expected for q in build_questions(manifest_session()).questions}
    asked = str(messages[-1]["content"]).split("\n", 1)[0]
    value = expected.get(asked, "unknown")
    return "\n".join(value) if isinstance(value, list) else value


def spec(tmp_path: Path, server: ProviderServer, cache: str = "rw") -> Experiment:
    model = {"model": "openai/gpt-4o-mini", "params": {"api_base": server.base(),
                                                        "api_key": KEY}}
    return Experiment.from_dict({
        "name": "qa-provider", "sessions": ["shop-1.json"], "models": ["extractive"],
        "base_dir": str(tmp_path), "cache": {"mode": cache, "path": "cache.db"},
        "qa": {"answerer": model, "judge": model}})


def test_a_provider_answerer_saves_its_questions_and_answers_under_qa(
        tmp_path: Path, server: ProviderServer) -> None:
    manifest_session().write_goose_json(tmp_path / "shop-1.json")
    server.responder = answers_like_the_manifest
    server.prompt_tokens, server.output_tokens = 120, 8
    results = run_experiment(spec(tmp_path, server), tmp_path / "run", progress=False)
    (row,) = results.cells.to_dict("records")
    assert row["status"] == "ok", row["error_message"]
    assert row["qa_accuracy"] == 1.0 and row["judge_score"] == 4.0
    questions = json.loads((tmp_path / "run" / "qa" / "questions" / "shop-1.json").read_text())
    saved = json.loads(results.cell_text(row["cell_id"], "qa.json") or "null")
    assert [q["id"] for q in saved["questions"]] == [q["id"] for q in questions["questions"]]
    first = saved["questions"][0]
    assert (first["kind"], first["expected"], first["answer"], first["grade"]) == (
        "recall", "50354", "50354", 1.0)
    judged = [q for q in saved["questions"] if "judge" in q]
    assert judged and judged[0]["judge"]["reasons"]["accuracy"] == "close to the reference"
    calls = len(server.requests)
    assert calls == row["qa_calls"] == 10 + 10 + len(judged)
    assert row["qa_input_tokens"] == 120 * calls and row["qa_output_tokens"] == 8 * calls
    assert row["reported_tokens"] >= 128 * calls  # the provider reported them
    assert all(r["model"] == "gpt-4o-mini" for r in server.requests)
    for path in (tmp_path / "run").rglob("*"):
        if path.is_file() and path.suffix in (".json", ".toml", ".md", ".txt"):
            assert KEY not in path.read_text(encoding="utf-8"), path


def test_a_second_run_replays_the_recorded_answers_without_a_call(
        tmp_path: Path, server: ProviderServer) -> None:
    manifest_session().write_goose_json(tmp_path / "shop-1.json")
    server.responder = answers_like_the_manifest
    run_experiment(spec(tmp_path, server), tmp_path / "first", progress=False)
    sent = len(server.requests)
    again = run_experiment(spec(tmp_path, server, cache="replay"), tmp_path / "second",
                           progress=False)
    assert len(server.requests) == sent  # every answer came from the recording
    first = Results.load(tmp_path / "first").cells
    assert again.cells["qa_accuracy"].tolist() == first["qa_accuracy"].tolist() == [1.0]
    hits = again.attempts[again.attempts["purpose"].notna()]["cache_hit"]
    assert set(hits) == {1}
