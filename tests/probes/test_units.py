"""`read_units`: one summary read the same way from markdown, JSON, key/value lines, a table,
tags and prose."""

from __future__ import annotations

import json

from workbench.probes._units import bare_text, label_words, read_units, stem

FIELDS = {"pending_tasks": ["benchmark `bench_4440`", "tag release v0.8"],
          "files": [{"path": "src/app/lease.py", "summary": "created"}]}

LAYOUTS = {
    "markdown": "# Summary\n\n## Pending Tasks\n- benchmark `bench_4440`\n- tag release v0.8\n\n"
                "## Files\n### src/app/lease.py\ncreated\n",
    "json": json.dumps(FIELDS, indent=2),
    "fenced": "<analysis>x</analysis>\n```json\n" + json.dumps(FIELDS) + "\n```",
    "key-value": "pending_tasks.1: benchmark `bench_4440`\npending_tasks.2: tag release v0.8\n"
                 "files.1.path: src/app/lease.py\nfiles.1.summary: created\n",
    "table": "| field | value |\n|---|---|\n| pending tasks | benchmark `bench_4440` |\n"
             "| pending tasks | tag release v0.8 |\n\n| file | what |\n|---|---|\n"
             "| src/app/lease.py | created |\n",
    "tags": "<pending_task>benchmark `bench_4440`</pending_task>\n"
            "<pending_task>tag release v0.8</pending_task>\n"
            "<file path=\"src/app/lease.py\">created</file>\n",
    "prose": "Still pending are these tasks: benchmark `bench_4440`; and tag release v0.8.\n\n"
             "File src/app/lease.py: created.",
}


def _pending(text: str) -> list[str]:
    return [u.text.rstrip(".") for u in read_units(text) if "pending" in u.label]


def test_every_layout_gives_the_same_pending_items_in_their_order() -> None:
    for name, text in LAYOUTS.items():
        items = [bare_text(t) for t in _pending(text)]
        assert items == ["benchmark `bench_4440`", "tag release v0.8"], name


def test_a_files_record_gives_its_units_the_files_path() -> None:
    for name, text in LAYOUTS.items():
        said = {u.text.rstrip(".").rsplit(": ", 1)[-1] for u in read_units(text)
                if u.subject == "src/app/lease.py" or "src/app/lease.py" in u.text}
        assert "created" in said, name


def test_items_of_one_field_share_a_group_and_keep_their_order() -> None:
    units = [u for u in read_units(LAYOUTS["markdown"]) if "pending" in u.label]
    assert {u.group for u in units} == {"pending task"}
    assert [u.order for u in units] == [0, 1]


def test_label_words_are_stems_without_generic_words() -> None:
    assert label_words("Pending Tasks") == label_words("pending_task") == {"pending", "task"}
    assert label_words("Errors + Fixes") == label_words("errors_and_fixes") == {"error", "fix"}
    assert label_words("| field | value |") == frozenset()
    assert stem("entries") == "entry" and stem("process") == "process"


def test_a_lead_in_labels_the_clauses_of_its_sentence_and_is_not_an_error() -> None:
    (unit,) = read_units("Error or fix: tests/t.py::test_a FAILED [ 50%]")
    assert unit.label == {"error", "fix"} and unit.text[unit.body:].startswith("tests/")
    first, second = read_units("Still pending: a dashboard; and the runbook")
    assert first.label == second.label == {"pending"}
    assert second.text == "the runbook"


def test_code_in_angle_brackets_is_not_a_tag() -> None:
    units = read_units("Use List<int> here.\nThen call f().")
    assert [u.text for u in units] == ["Use List<int> here.", "Then call f()."]
