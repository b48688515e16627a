"""Retention probes and `compute_metrics` on hand-made sessions, with exact values."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from workbench._memo import run_memo
from workbench.messages import Message, MessageMetadata
from workbench.metrics import (
    METRICS,
    compute_forgotten,
    compute_metrics,
    error_line,
    errors_probe,
    facts_probe,
    files_probe,
    metric,
    requests_probe,
    session_errors,
    shared_probes,
    touched_files,
    unregister_metric,
    user_requests,
)
from workbench.sessions import Session

TRACEBACK = """Traceback (most recent call last):
  File "src/app.py", line 3, in <module>
    int("x")
ValueError: invalid literal for int() with base 10: 'x'
"""


def make_session(meta: dict | None = None) -> Session:
    msgs = [
        Message.user("Please fix the parser crash in src/app.py and add tests for it"),
        Message.assistant("Looking.").with_tool_request("t1", "developer__text_editor",
                                                        {"command": "view", "path": "./src/app.py"}),
        Message.user().with_tool_response("t1", "def main(): ..."),
        Message.assistant().with_tool_request("t2", "developer__shell",
                                              {"command": "python src/app.py 2>&1 | tee /dev/null"}),
        Message.user().with_tool_response("t2", TRACEBACK),
        Message.assistant().with_tool_request("t3", "developer__shell",
                                              {"command": "pytest tests/test_app.py::test_parse -q"}),
        Message.user().with_tool_response("t3", "E  assert 1 == 2\nFAILED tests/test_app.py::test_parse",
                                          is_error=True),
        Message.assistant().with_tool_request("t4", "editor", {"paths": ["docs/notes.md", "setup.cfg"]}),
        Message.user().with_tool_response("t4", error="permission denied: docs/notes.md"),
        Message.user("ok thanks"),
        Message.user("Also update the changelog with the release date please"),
        Message.user("Summary of earlier work in this session",
                     metadata=MessageMetadata.agent_only()),
    ]
    return Session(id="s1", format="test", path="s1.json", messages=msgs, meta=meta or {})


SUMMARY = (
    "The user wants the parser crash fixed. Edited `src/app.py`; running it raised\n"
    "ValueError:   invalid literal for int() with base 10: 'x'\n"
    "The test in test_app.py fails. Permission problems on docs/notes.md."
)


def test_touched_files_come_from_path_arguments_and_shell_tokens_normalised() -> None:
    assert touched_files(make_session().messages) == [
        "src/app.py", "tests/test_app.py", "docs/notes.md", "setup.cfg"]


def test_files_probe_counts_full_paths_and_basenames_separately() -> None:
    r = files_probe(make_session().messages, SUMMARY)
    assert (r.total, r.recalled, r.recall) == (4, 2, 0.5)
    assert r.missing == ["tests/test_app.py", "setup.cfg"]
    assert r.extra == {"files_basename_recalled": 1}


def test_files_probe_accepts_a_trailing_subpath_but_not_part_of_a_longer_name() -> None:
    msgs = [Message.assistant().with_tool_request("a", "shell", {"command": "cat /repo/src/app.py"})]
    assert files_probe(msgs, "see src/app.py").recalled == 1
    assert files_probe(msgs, "see mysrc/app.py and app.pyc").recalled == 0


def test_shell_tokens_without_a_slash_or_extension_are_not_paths() -> None:
    msgs = [Message.assistant().with_tool_request(
        "a", "shell", {"command": "git log -n 3 --format=%H && echo done > out.txt; ls *.py; grep ds.Rows pydicom.dataset"})]
    assert touched_files(msgs) == ["out.txt"]


def test_error_line_takes_the_exception_line_of_a_traceback() -> None:
    assert error_line(TRACEBACK) == "ValueError: invalid literal for int() with base 10: 'x'"
    assert error_line("collected 2 items\nFAILED t.py::a - x") == "FAILED t.py::a - x"
    assert error_line("all fine") is None
    assert error_line("first\nsecond", flagged=True) == "first"


def test_errors_probe_needs_a_verbatim_quote_after_whitespace_normalising() -> None:
    r = errors_probe(make_session().messages, SUMMARY)
    assert r.total == 3
    assert r.recalled == 1
    assert r.missing == ["assert 1 == 2",  # pytest's E line, not the bare FAILED line
                         "permission denied: docs/notes.md"]
    # word overlap: traceback 1.0; "assert" (the only word of 3+ characters) 0;
    # "permission denied docs notes.md" 3/4
    assert r.extra["errors_token_overlap"] == pytest.approx((1.0 + 0 + 3 / 4) / 3)


def test_user_requests_skip_acknowledgements_tool_results_and_agent_only_messages() -> None:
    assert user_requests(make_session().messages) == [
        "Please fix the parser crash in src/app.py and add tests for it",
        "Also update the changelog with the release date please",
    ]


def test_a_request_is_covered_when_half_its_content_words_appear() -> None:
    # request 1 content words: fix, parser, crash, src/app.py, tests -> 4 of 5 in the summary
    # request 2: update, changelog, release, date -> none
    r = requests_probe(make_session().messages, SUMMARY)
    assert (r.total, r.recalled) == (2, 1)
    assert r.missing == ["Also update the changelog with the release date please"]
    half = requests_probe(make_session().messages, SUMMARY + " changelog release")
    assert half.recalled == 2


FACTS = [
    {"id": "f1", "kind": "config", "text": "The database port is 5433.", "message_index": 1,
     "stale": False, "superseded_by": None},
    {"id": "f0", "kind": "config", "text": "The database port is 5432.", "message_index": 0,
     "stale": True, "superseded_by": "f1"},
    {"id": "f2", "kind": "name", "text": "The feature flag is `fast_path`.", "value": "fast_path",
     "message_index": 2, "stale": False, "superseded_by": None},
    {"id": "f3", "kind": "owner", "text": "Alice owns the deploy", "message_index": 3,
     "stale": True, "superseded_by": None},
]


def test_facts_are_recalled_by_value_and_stale_values_fail_only_without_their_replacement() -> None:
    session = make_session({"planted_facts": FACTS})
    cur, old = facts_probe(session, "Port 5433 (was 5432). Alice owns the deploy.")
    assert (cur.total, cur.recalled, cur.missing) == (2, 1, ["The feature flag is `fast_path`."])
    assert (old.total, old.recalled) == (2, 1)
    assert old.extra == {"stale_mentioned": 2, "stale_failures": 1}
    assert old.missing == ["Alice owns the deploy"]
    _, only_old = facts_probe(session, "the port is 5432")
    assert only_old.extra == {"stale_mentioned": 1, "stale_failures": 1}


def test_fact_metrics_are_none_without_planted_facts() -> None:
    m = compute_metrics(make_session(), SUMMARY, None, original_tokens=100, summary_tokens=10)
    assert m["facts_total"] is None and m["facts_recall"] is None and m["stale_avoided"] is None


def test_compute_metrics_gives_the_contract_keys_with_exact_values() -> None:
    structured = SimpleNamespace(user_intent="fix the crash", technical_concepts=[], files=[
        SimpleNamespace(path="src/app.py", summary="x", key_code="")], errors_and_fixes=["e"],
        problem_solving="  ", user_messages=["a"], pending_tasks=[], current_work="w",
        next_step="")
    session = make_session({"planted_facts": FACTS})
    m = compute_metrics(session, SUMMARY + " 5433", structured, original_tokens=1000,
                        summary_tokens=50)
    assert m["compression_ratio"] == 0.05
    assert (m["files_total"], m["files_recalled"], m["files_recall"]) == (4, 2, 0.5)
    assert (m["errors_total"], m["errors_recalled"]) == (3, 1)
    assert (m["requests_total"], m["requests_recalled"], m["requests_recall"]) == (2, 1, 0.5)
    assert (m["facts_total"], m["facts_recalled"], m["facts_recall"]) == (2, 1, 0.5)
    assert (m["stale_total"], m["stale_mentioned"], m["stale_avoided"]) == (2, 0, 1.0)
    assert m["fill_rate"] == pytest.approx(5 / 9)
    assert [m[f"fill_{f}"] for f in ("user_intent", "technical_concepts", "files",
                                     "problem_solving", "next_step")] == [1, 0, 1, 0, 0]
    assert m["probe_recall"] == pytest.approx((0.5 + 1 / 3 + 0.5 + 0.5) / 4)


def test_fill_metrics_are_none_when_the_summary_did_not_parse() -> None:
    m = compute_metrics(make_session(), "", None, original_tokens=0, summary_tokens=0)
    assert m["fill_rate"] is None and m["fill_next_step"] is None
    assert m["compression_ratio"] is None
    assert m["files_recall"] == 0.0 and m["probe_recall"] == 0.0


def test_a_user_metric_registered_by_decorator_joins_the_output_and_probe_recall() -> None:
    @metric("always_half")
    def always_half(inp):
        """Test metric."""
        return {"custom_recall": 0.5, "summary_chars": len(inp.summary_text)}

    try:
        empty = Session(id="e", format="t", path="e", messages=[])
        m = compute_metrics(empty, "abc", None, original_tokens=1, summary_tokens=1)
        assert m["summary_chars"] == 3 and m["probe_recall"] == 0.5
    finally:
        unregister_metric("always_half")
    assert "always_half" not in METRICS


def test_compute_forgotten_lists_the_missing_items_per_probe() -> None:
    got = compute_forgotten(make_session({"planted_facts": FACTS}), SUMMARY)
    assert got == {
        "files": ["tests/test_app.py", "setup.cfg"],
        "errors": ["assert 1 == 2", "permission denied: docs/notes.md"],
        "requests": ["Also update the changelog with the release date please"],
        "facts": ["The database port is 5433.", "The feature flag is `fast_path`."],
        "stale": [],
    }


def test_fill_rate_reads_the_real_structured_summary() -> None:
    compaction = pytest.importorskip("workbench.compaction")
    s = compaction.StructuredSummary(user_intent=["fix"], files=[compaction.FileActivity(path="a.py")],
                                     pending_tasks=[" "], current_work="  ", next_step="go")
    empty = Session(id="e", format="t", path="e", messages=[])
    m = compute_metrics(empty, "", s, original_tokens=10, summary_tokens=2)
    assert m["fill_rate"] == pytest.approx(3 / 9)
    assert (m["fill_files"], m["fill_pending_tasks"], m["fill_current_work"]) == (1, 0, 0)


# ---- template echo ----------------------------------------------------------------------------


def test_a_summary_that_copies_the_schema_example_has_full_template_echo() -> None:
    from workbench.compaction import StructuredSummary
    from workbench.metrics import template_echo

    template = 'Schema: {"user_intent": ["each goal or request the user stated"]}'
    parroted = StructuredSummary.parse('{"user_intent": ["each goal or request the user stated"],'
                                       ' "current_work": "fixing src/parser.py token errors"}')
    assert template_echo(parroted, template) == 0.5
    assert template_echo(None, template) is None
    short = StructuredSummary.parse('{"user_intent": ["fix it"]}')
    assert template_echo(short, template) is None


def test_facts_the_files_and_errors_probes_count_are_not_counted_again_and_kinds_weigh_alike(
        ) -> None:
    def fact(fid: str, kind: str, text: str) -> dict:
        return {"id": fid, "kind": kind, "text": text, "message_index": 0, "stale": False,
                "superseded_by": None}

    facts = [fact("f1", "identifier", "merge_audit_80ba"), fact("f2", "identifier", "seen_x_1"),
             fact("f3", "identifier", "seen_y_2"),
             fact("f4", "constraint", "never touch migrations/0047_backfill.sql"),
             fact("f5", "path", "src/app.py"),  # a touched file: the files probe's item
             fact("f6", "error", "ValueError: invalid literal for int() with base 10: 'x'")]
    session = make_session({"planted_facts": facts})
    summary = ("merge_audit_80ba seen_x_1 seen_y_2 in src/app.py raised ValueError: invalid "
               "literal for int() with base 10: 'x'")
    cur, _ = facts_probe(session, summary)
    # Four facts left to this probe: three identifiers kept, the one constraint dropped.
    assert (cur.total, cur.recalled) == (4, 3)
    assert cur.kinds == {"identifier": (3, 3), "constraint": (0, 1)}
    assert cur.missing == ["never touch migrations/0047_backfill.sql"]
    # Each kind weighs alike: losing the field that held the constraint costs half, not 1/4.
    assert cur.recall == 0.5
    m = compute_metrics(session, summary, None, original_tokens=100, summary_tokens=10)
    assert (m["facts_total"], m["facts_recalled"], m["facts_recall"]) == (4, 3, 0.5)
    assert compute_forgotten(session, summary)["facts"] == [
        "never touch migrations/0047_backfill.sql"]


def test_inside_shared_probes_the_metrics_and_forgotten_items_run_each_probe_once() -> None:
    session = make_session({"planted_facts": FACTS})
    alone = (compute_metrics(session, SUMMARY, None, original_tokens=100, summary_tokens=10), compute_forgotten(session, SUMMARY))
    with shared_probes():
        first = files_probe(session.messages, SUMMARY)
        assert files_probe(session.messages, SUMMARY) is first
        assert files_probe(list(session.messages), SUMMARY) is not first  # another subject
        assert files_probe(session.messages, SUMMARY + " setup.cfg") is not first
        shared = (compute_metrics(session, SUMMARY, None, original_tokens=100, summary_tokens=10), compute_forgotten(session, SUMMARY))
        forgotten = shared[1]
        forgotten["files"].append("changed by the caller")
        assert first.missing == ["tests/test_app.py", "setup.cfg"]  # the result is not aliased
    assert shared[0] == alone[0]
    assert {**forgotten, "files": forgotten["files"][:-1]} == alone[1]
    assert files_probe(session.messages, SUMMARY) is not first  # nothing kept after the block
    with shared_probes():
        assert files_probe(session.messages, SUMMARY).missing == first.missing
    session.messages.append(Message.assistant().with_tool_request(
        "t9", "developer__text_editor", {"command": "view", "path": "lib/new.py"}))
    with shared_probes():  # a new block sees the changed session
        assert files_probe(session.messages, SUMMARY).missing == [*first.missing, "lib/new.py"]


def test_a_sessions_errors_files_and_requests_follow_an_edited_message_list() -> None:
    with run_memo():
        session = make_session()
        errors = session_errors(session.messages)
        files = touched_files(session.messages)
        errors.append("changed by the caller")  # a fresh list each time: nothing aliased
        files.clear()
        assert session_errors(session.messages) == errors[:-1]
        assert touched_files(session.messages) == [
            "src/app.py", "tests/test_app.py", "docs/notes.md", "setup.cfg"]
        # an item replaced in place, a message replaced, a message added: each is seen
        session.messages[4].content[0] = session.messages[2].content[0]
        assert session_errors(session.messages) == ["assert 1 == 2",
                                                    "permission denied: docs/notes.md"]
        session.messages[0] = Message.user("Rename the module to parser_v2 and its imports")
        assert user_requests(session.messages) == [
            "Rename the module to parser_v2 and its imports",
            "Also update the changelog with the release date please"]
        assert requests_probe(session.messages, "parser_v2 module imports").recalled == 1
        session.messages.append(Message.assistant().with_tool_request(
            "t9", "shell", {"command": "cat lib/new.py"}))
        assert files_probe(session.messages, "lib/new.py and app.py").missing == [
            "src/app.py", "tests/test_app.py", "docs/notes.md", "setup.cfg"]
        assert files_probe(session.messages, "lib/new.py and app.py").extra == {
            "files_basename_recalled": 1}


def test_a_path_is_named_only_as_a_whole_name() -> None:
    msgs = [Message.assistant().with_tool_request("a", "shell", {"command": "cat src/app.py"})]
    named = {text: files_probe(msgs, text).recalled for text in (
        "src/app.py", "(src/app.py)", "src/app.py.", "src/app.py:3", "é src/app.py",
        "xsrc/app.py", ".src/app.py", "-src/app.py", "src/app.pyc", "src/app.py-old",
        "src/app.py_2", "src/app.pyé", "src/app.py٣", "mysrc/app.py src/app.py")}
    assert named == {
        "src/app.py": 1, "(src/app.py)": 1, "src/app.py.": 1, "src/app.py:3": 1,
        "é src/app.py": 1, "xsrc/app.py": 0, ".src/app.py": 0, "-src/app.py": 0,
        "src/app.pyc": 0, "src/app.py-old": 0, "src/app.py_2": 0, "src/app.pyé": 0,
        "src/app.py٣": 0, "mysrc/app.py src/app.py": 1}


@pytest.mark.parametrize(("text", "flagged", "line"), [
    ("collected 3 items\n3 passed in 0.1s", False, None),  # no rule can choose a line
    ("collected 3 items\n3 passed in 0.1s", True, "collected 3 items"),
    ("ok\rValueError: after a carriage return", False, "ValueError: after a carriage return"),
    ("ok\x0bos.OSError: after a vertical tab", False, "os.OSError: after a vertical tab"),
    ("E\t\tassert 1 == 2\nnothing else", False, "assert 1 == 2"),
    ("12: raise ValueError: quoted code\nall good", False, None),  # a listing, not an error
    ("src/a.c:3:5: error: expected ';'", False, "src/a.c:3:5: error: expected ';'"),
    ("x.py::t FAILED [ 50%]\nFAILED x.py::t - KeyError: 'k'", False, "KeyError: 'k'"),
])
def test_error_line_chooses_the_same_line_whatever_the_line_breaks(
        text: str, flagged: bool, line: str | None) -> None:
    assert error_line(text, flagged=flagged) == line
