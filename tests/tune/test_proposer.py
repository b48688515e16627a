"""The optional proposer, scripted: its prompts join the search with their provenance saved."""

from __future__ import annotations

import json
from pathlib import Path

from workbench.compaction import Templates
from workbench.harness import Experiment, Results
from workbench.models import ExtractiveModel
from workbench.testing import ScriptedModel
from workbench.tune import PROPOSER_SYSTEM, tune

EXTRA_RULE = "- Name every file path you saw, even if it was only read."


def test_scripted_proposals_join_the_search_and_a_broken_one_is_kept_as_rejected(
        tmp_path: Path) -> None:
    better = Templates.default().compaction.replace("## Rules\n", f"## Rules\n\n{EXTRA_RULE}\n")
    proposer = ScriptedModel([f"Here it is:\n```markdown\n{better}\n```",
                              "```markdown\nSummarize the chat.\n```"], name="scripted-proposer")
    experiment = Experiment.from_dict({
        "name": "p", "sessions": ["gen-005k-s1", "gen-012k-s2"], "models": ["extractive"],
        "tune": {"variant": "top3-intent", "params": {"intent_limit": [1, 3]},
                 "proposer": "scripted", "proposals": 2}})
    extractive = ExtractiveModel()

    result = tune(experiment, tmp_path / "run", model_factory=lambda cell: extractive,
                  proposer=proposer)

    assert proposer.call_count == 2
    system, messages = proposer.calls[0]
    assert system == PROPOSER_SYSTEM
    assert "What the summaries forgot, most frequent first:" in messages[0].concat_text()
    folder = tmp_path / "run" / "tune" / "proposals"
    assert (folder / "proposal-1" / "compaction.md").read_text() == better.strip() + "\n"
    first = json.loads((folder / "proposal-1" / "provenance.json").read_text())
    second = json.loads((folder / "proposal-2" / "provenance.json").read_text())
    assert (first["accepted"], first["base"], first["proposer"]) == (True, "top3-intent",
                                                                     "scripted")
    assert len(first["input_sha256"]) == 64
    assert (second["accepted"], second["reason"]) == (
        False, "the prompt must show the conversation exactly once ({{ messages }})")
    assert result.rungs[0]["groups"] == 2  # the variant's one prompt and the accepted proposal
    assert [p["name"] for p in result.proposals] == ["proposal-1", "proposal-2"]
    cells = Results.load(tmp_path / "run").cells
    assert set(cells["template"]) >= {"top3-intent", "top3-intent{intent_limit=1}", "proposal-1"}
    assert "proposal-2" not in set(cells["template"])
