"""The probes separate templates: on generated sessions, a terse template that drops fields
loses probe recall by a clear, significant margin, while the default template and an identical
copy of it tie exactly."""

from __future__ import annotations

from typing import Any

import pytest

from workbench.compaction import Templates
from workbench.harness import Experiment, run_experiment
from workbench.sessions import generate_session

TERSE = """# Summary
{% for item in user_intent or [] %}- {{ item }}
{% endfor %}
{% for f in files or [] %}- {{ f.path }}
{% endfor %}
{% for e in errors_and_fixes or [] %}- {{ e }}
{% endfor %}
{{ next_step or "" }}
"""
"""A new user's nine-line summary template: intents, file paths and errors; it drops the user
messages, the pending tasks, the current work, the concepts and every file's summary."""
SESSIONS = [(seed, tokens) for seed, tokens in zip(range(301, 313),
                                                  [4000, 6000, 8000, 10000] * 3, strict=True)]
VERSION = 2
"""The generator version these sessions come from (the debugging shape of version 2, whose
facts sit where the terse template's dropped fields carry them)."""
MARGIN = 0.05
"""The least recall a summary that drops fields must lose (5 points)."""


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Any:
    root = tmp_path_factory.mktemp("separation")
    for seed, tokens in SESSIONS:
        session, _ = generate_session(seed, tokens, version=VERSION)
        session.write_goose_json(root / f"{session.id}.json")
    builtin = Templates.default()
    for name, summary in (("copy", builtin.summary), ("terse", TERSE)):
        folder = root / name
        folder.mkdir()
        (folder / "compaction.md").write_text(builtin.compaction, encoding="utf-8")
        (folder / "compaction_summary.md").write_text(summary, encoding="utf-8")
    exp = Experiment.from_dict({"name": "separation", "sessions": ["*.json"],
                                "templates": ["default", "copy", "terse"],
                                "models": ["extractive"], "base_dir": str(root)})
    return run_experiment(exp, root / "run", progress=False)


def test_a_terse_template_dropping_fields_loses_recall_by_a_clear_significant_margin(
        run: Any) -> None:
    assert set(run.cells["status"]) == {"ok"} and len(run.cells) == 3 * len(SESSIONS)
    terse = run.compare("default", "terse", metric="probe_recall")
    assert terse.n_clusters == len(SESSIONS)
    assert terse.mean_diff <= -MARGIN and terse.ci_high < 0, terse
    assert terse.winner == "default"
    # It keeps fewer tokens: the trade a user must see priced in recall.
    assert run.compare("default", "terse", metric="retained_tokens").ci_high < 0


def test_the_default_template_and_an_identical_copy_tie_exactly(run: Any) -> None:
    copy = run.compare("default", "copy", metric="probe_recall")
    assert (copy.mean_diff, copy.ci_low, copy.ci_high, copy.winner) == (0.0, 0.0, 0.0, None)
    assert copy.n_clusters == len(SESSIONS)


def test_the_facts_the_other_probes_count_are_not_counted_again() -> None:
    from workbench.metrics import files_probe, session_errors, touched_files
    from workbench.metrics._facts import probed_facts

    session, facts = generate_session(*SESSIONS[0], version=VERSION)
    planted = [f.to_dict() for f in facts if not f.stale]
    probed = probed_facts(session)
    files, errors = set(touched_files(session.messages)), set(session_errors(session.messages))
    left_out = [f for f in planted if f not in probed]
    assert left_out and all(f["text"] in files | errors for f in left_out)
    assert not any(f["text"] in files | errors for f in probed)
    assert files_probe(session.messages, "").total == len(files)
