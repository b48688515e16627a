"""The [qa] step on the Ray executor: the same questions, answers, grades, files and bills as
on the local executor, the answerer's calls routed (and shared) through the coordinator."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.probes._sessions import manifest_session
from workbench.compaction import Usage
from workbench.harness import Experiment, run_experiment
from workbench.messages import Message
from workbench.probes import build_questions
from workbench.testing import ScriptedModel

ray = pytest.importorskip("ray", reason="needs the ray extra: pip install \"compaction-workbench[ray]\"")

USAGE = Usage(model="scripted", input_tokens=100, output_tokens=10, cost=0.001)


@pytest.fixture(scope="module")
def ray_instance() -> Any:
    """One small local Ray instance for the module: two CPUs, no dashboard."""
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])
    yield ray
    ray.shutdown()


def respond(system: str, messages: list[Message]) -> str:
    sid = "shop-0" if "shop-0" in messages[0].concat_text() else "shop-1"
    expected = {q.text: q.expected for q in build_questions(manifest_session(sid)).questions}
    value = expected.get(messages[-1].concat_text().split("\n", 1)[0], "unknown")
    return "\n".join(value) if isinstance(value, list) else value


def qa_factory(cell: Any, role: str) -> ScriptedModel:
    return ScriptedModel(respond=respond, usage=USAGE)


def test_qa_on_ray_matches_the_local_executor(ray_instance: Any, tmp_path: Path) -> None:
    for sid in ("shop-0", "shop-1"):
        manifest_session(sid).write_goose_json(tmp_path / f"{sid}.json")
    exp = Experiment.from_dict({"name": "qa-ray", "sessions": ["shop-*.json"],
                                "models": ["extractive"], "windows": ["none", "32k"],
                                "base_dir": str(tmp_path),
                                "qa": {"answerer": "openai/gpt-4o-mini"}})
    local = run_experiment(exp, tmp_path / "local", progress=False, qa_model_factory=qa_factory)
    on_ray = run_experiment(exp, tmp_path / "ray", progress=False, executor="ray",
                            qa_model_factory=qa_factory)
    columns = ["cell_id", "qa_accuracy", "qa_loss_exact", "qa_calls", "status"]
    assert (on_ray.cells[columns].sort_values("cell_id").to_dict("records")
            == local.cells[columns].sort_values("cell_id").to_dict("records"))
    assert set(on_ray.cells["qa_accuracy"]) == {1.0}
    for name in ("qa_input_tokens", "calls_shared", "billed_input_tokens"):
        assert on_ray.cells[name].sum() == local.cells[name].sum(), name
    for path in sorted((tmp_path / "local" / "qa").rglob("*.json")):  # the question sets
        twin = tmp_path / "ray" / path.relative_to(tmp_path / "local")
        assert json.loads(twin.read_text()) == json.loads(path.read_text()), path.name
    for cell_id in local.cells["cell_id"]:  # each cell's questions and answers
        assert json.loads(on_ray.cell_text(cell_id, "qa.json") or "null") == \
            json.loads(local.cell_text(cell_id, "qa.json") or "null"), cell_id
    purposes = on_ray.attempts["purpose"].dropna()
    assert set(purposes) == {"answer", "answer_full"} and len(purposes) == 4 * 20
