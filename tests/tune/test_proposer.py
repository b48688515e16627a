"""The optional proposer, scripted: its prompts join the search with their provenance saved."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

from workbench.compaction import Templates
from workbench.harness import Experiment, Results, run_experiment
from workbench.models import ExtractiveModel
from workbench.testing import ScriptedModel
from workbench.tune import PROPOSER_SYSTEM, tune
from workbench.tune._proposer import failure_analysis

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


def test_the_failure_analysis_reads_what_the_run_kept_of_each_summary_s_forgotten_items(
        tmp_path: Path) -> None:
    """The proposer is told what the summaries forgot: the texts the run kept in its store
    (there is no ``summaries/<cell_id>.forgotten.json`` file), most frequent first."""
    experiment = Experiment.from_dict({"name": "f", "sessions": ["gen-005k-s1", "gen-012k-s2"],
                                       "models": ["extractive"], "repeats": 2})
    results = run_experiment(experiment, tmp_path / "run", progress=False)
    cells = results.cells
    expected: Counter[str] = Counter()
    for cell_id in cells["cell_id"]:
        text = results.cell_text(str(cell_id), "forgotten.json")
        assert text is not None
        for kind, items in json.loads(text).items():
            expected.update(f"{kind}: {i if isinstance(i, str) else json.dumps(i)}"
                            for i in items)
    assert expected, "the extractive summaries of these sessions forget something"
    found = failure_analysis(results, "default", limit=1000)
    assert found == [f"{item} (missed {n}x)" for item, n in expected.most_common()]
    assert all(n % 2 == 0 for n in expected.values())  # each repeat forgot alike
    assert failure_analysis(results, "no-such-template") == []
