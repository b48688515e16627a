"""Question sets from a manifest, from a transcript, and as reviewable JSON files."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from tests.probes._sessions import ERROR, LAST_REQUEST, PENDING, manifest_session
from workbench.errors import ConfigError
from workbench.probes import (
    KINDS,
    QuestionSet,
    build_questions,
    question_set_key,
    read_question_set,
    write_question_set,
)
from workbench.probes._build import spread


def by_id(session: object, **kw: object) -> dict[str, object]:
    return {q.id: q for q in build_questions(session, per_session=None, **kw).questions}  # type: ignore[arg-type]


def test_a_manifest_gives_every_kind_with_its_exact_ground_truth() -> None:
    qs = by_id(manifest_session())
    assert list(qs) == [
        "recall-fact-f03", "recall-error-last", "recall-fact-f02", "artifact-files",
        "artifact-change-1", "artifact-how-1", "artifact-change-2", "artifact-how-2",
        "artifact-change-3", "artifact-how-3", "continuation-pending",
        "continuation-last-request", "continuation-last-tool", "decision-d1"]
    fact = qs["recall-fact-f03"]
    assert fact.expected == "50354" and fact.stale == ["59767"] and fact.answer_type == "number"
    assert '"Change of plan: the dev server must now use port ____ instead of 59767."' in fact.text
    assert qs["recall-fact-f02"].text.endswith('"Fix the double count in `____` in '
                                               'src/shop/totals.py."')
    assert qs["recall-error-last"].expected == ERROR
    assert qs["artifact-files"].expected == ["src/shop/totals.py", "config/dev.toml",
                                             "tests/fixtures/old.json"]
    changes = {qs[f"artifact-change-{n}"].text.split("`")[1]: qs[f"artifact-change-{n}"].expected
               for n in (1, 2, 3)}
    assert changes == {"src/shop/totals.py": "edited", "config/dev.toml": "created",
                       "tests/fixtures/old.json": "deleted"}
    assert qs["continuation-pending"].expected == PENDING
    decision = qs["decision-d1"]
    assert decision.text == "What did we decide about how to stop double counting, and why?"
    assert decision.expected == "track keys in a seen_keys set"
    assert decision.reference == "track keys in a seen_keys set, because batches overlap"
    assert {q.id for q in qs.values() if q.judged} == {
        "artifact-how-1", "artifact-how-2", "artifact-how-3", "continuation-pending",
        "continuation-last-request", "decision-d1"}


def test_without_manifest_keys_the_transcript_stands_in() -> None:
    qs = by_id(manifest_session(errors=None, files_changed=None, pending_tasks=None,
                                decisions=None))
    assert qs["recall-error-last"].expected == ERROR
    assert qs["recall-error-last"].source == "errors"
    assert qs["artifact-files"].expected == ["src/shop/totals.py", "config/dev.toml",
                                             "tests/fixtures/old.json"]
    assert qs["artifact-files"].source == "transcript:tool_calls"
    assert qs["continuation-last-request"].expected == LAST_REQUEST
    assert qs["continuation-last-tool"].expected == "tests/fixtures/old.json"
    assert not any(q.kind == "decision" for q in qs.values())


def test_a_recorded_prefix_is_asked_only_about_what_it_covers() -> None:
    qs = by_id(manifest_session(), boundary=7)
    fact = qs["recall-fact-f01"]  # port 50354 replaced 59767 only after the boundary
    assert fact.expected == "59767" and fact.stale == []
    assert "recall-fact-f03" not in qs and "continuation-pending" not in qs
    assert qs["artifact-files"].expected == ["src/shop/totals.py"]
    assert qs["continuation-last-request"].expected.startswith("Fix the double count")


def test_per_session_takes_the_kinds_in_turn_and_kinds_filters_them() -> None:
    session = manifest_session()
    five = build_questions(session, per_session=5).questions
    assert [q.kind for q in five] == ["recall", "recall", "artifact", "continuation",
                                      "decision"]
    only = build_questions(session, kinds=["continuation"], per_session=2).questions
    assert [q.id for q in only] == ["continuation-pending", "continuation-last-request"]


def test_the_same_session_always_gets_the_same_questions() -> None:
    a = build_questions(manifest_session()).to_json()
    assert a == build_questions(manifest_session()).to_json()


def _repeated(first: str, second: str) -> dict[str, object]:
    session = manifest_session()
    session.messages[3].content[0].text = first  # type: ignore[union-attr]
    session.messages[10].content[0].text = second  # type: ignore[union-attr]
    facts = [{"id": "fa", "kind": "identifier", "text": "seen_a_1", "message_index": 3},
             {"id": "fb", "kind": "identifier", "text": "seen_b_2", "message_index": 10}]
    return by_id(replace(session, meta={**session.meta, "planted_facts": facts}))


def test_a_sentence_repeated_with_other_values_is_asked_with_the_sentence_before_it() -> None:
    qs = _repeated("Totals first. I'll keep them in a `seen_a_1` set.",
                   "Now the refunds. I'll keep them in a `seen_b_2` set.")
    assert qs["recall-fact-fa"].text.endswith('"Totals first. I\'ll keep them in a `____` set."')
    assert qs["recall-fact-fb"].text.endswith(
        '"Now the refunds. I\'ll keep them in a `____` set."')


def test_a_blank_that_stays_ambiguous_is_not_asked() -> None:
    qs = _repeated("I'll keep them in a `seen_a_1` set.", "I'll keep them in a `seen_b_2` set.")
    assert "recall-fact-fa" not in qs and "recall-fact-fb" not in qs


@pytest.mark.parametrize(("n", "order"), [
    (1, [0]), (2, [0, 1]), (5, [0, 4, 2, 1, 3]), (9, [0, 8, 4, 2, 6, 1, 3, 5, 7])])
def test_spread_puts_the_ends_and_middles_first(n: int, order: list[int]) -> None:
    assert spread(list(range(n))) == order


def test_a_question_set_survives_its_file_unchanged(tmp_path: Path) -> None:
    original = build_questions(manifest_session(), per_session=None)
    path = write_question_set(original, tmp_path)
    assert path.name == "shop-1.json"
    back = read_question_set(path)
    assert back.to_dict() == original.to_dict()
    assert json.loads(path.read_text())["questions"][0]["id"] == "recall-fact-f03"


def test_a_bad_question_file_is_an_error_naming_it(tmp_path: Path) -> None:
    bad = tmp_path / "x.json"
    bad.write_text('{"questions": [{"id": "q1", "kind": "recall", "text": "?"}]}')
    with pytest.raises(ConfigError, match=r"x\.json: questions\[0\]: missing field\(s\) expected"):
        read_question_set(bad)
    bad.write_text('{"questions": [{"id": "q1", "kind": "recall", "text": "?", '
                   '"expected": "a", "colour": "red"}]}')
    with pytest.raises(ConfigError, match=r"unknown field\(s\) colour"):
        read_question_set(bad)
    bad.write_text("not json")
    with pytest.raises(ConfigError, match="x.json: not a JSON question set"):
        read_question_set(bad)
    dupes = QuestionSet("k", "s", None, build_questions(manifest_session()).questions[:1] * 2)
    bad.write_text(dupes.to_json())
    with pytest.raises(ConfigError, match="duplicate question id"):
        read_question_set(bad)


@pytest.mark.parametrize(("session_id", "boundary", "key"), [
    ("gen-012k-s2", None, "gen-012k-s2"),
    ("4d5611e5-241a", 132, "4d5611e5-241a@132"),
    ("chat-history.md#12", None, "chat-history.md_12-"),
])
def test_question_set_keys_are_file_safe_and_distinct(session_id: str, boundary: int | None,
                                                      key: str) -> None:
    assert question_set_key(session_id, boundary).startswith(key)
    assert question_set_key("a/b") != question_set_key("a_b")


def test_every_kind_is_a_known_kind() -> None:
    assert KINDS == ("recall", "artifact", "continuation", "decision")


def test_a_session_without_manifest_keys_is_asked_its_transcripts_questions() -> None:
    session = manifest_session(planted_facts=None, errors=None, files_changed=None,
                               pending_tasks=None, decisions=None)
    questions = build_questions(session).questions
    assert questions and all(q.source.startswith("transcript:") and q.evidence
                             for q in questions)
    # the manifest path's per_session cap does not apply: a recording has its own counts
    assert len(build_questions(session, per_session=1).questions) == len(questions)
    three = build_questions(session, max_questions=3).questions
    assert [q.source for q in three].count("transcript:requests") >= 2  # always asked
    assert len(three) == 3
