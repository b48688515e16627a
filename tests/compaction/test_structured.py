"""structured.rs behaviour: candidate extraction, lenient reading, normalizing, rendering."""

from __future__ import annotations

import random

import pytest

from workbench.compaction import (
    FileActivity,
    StructuredSummary,
    json_candidates,
    leading_object,
    safely_parse_json,
    stringify,
)
from workbench.compaction._candidates import naive_json_candidates

FULL_RESPONSE = """<analysis>
The user asked to fix a bug in parser.rs. I traced it to an off-by-one
in {brace handling} and patched it.
</analysis>

```json
{
  "user_intent": ["Fix the parser bug", "Add a regression test"],
  "technical_concepts": ["off-by-one", "tokenizer"],
  "files": [
    {"path": "src/parser.rs", "summary": "Fixed off-by-one in scan loop", "key_code": "fn scan(&mut self) { .. }"}
  ],
  "errors_and_fixes": ["Panic on empty input, fixed with early return"],
  "problem_solving": ["Root-caused via failing unit test"],
  "user_messages": ["fix the parser bug", "add a test"],
  "pending_tasks": ["Add a regression test"],
  "current_work": "Writing the regression test in tests/parser.rs",
  "next_step": "Finish the regression test"
}
```"""


def test_parses_fenced_json_after_analysis() -> None:
    summary = StructuredSummary.parse(FULL_RESPONSE)
    assert summary is not None
    assert summary.user_intent == ["Fix the parser bug", "Add a regression test"]
    assert len(summary.files) == 1
    assert summary.files[0].path == "src/parser.rs"
    assert summary.current_work == "Writing the regression test in tests/parser.rs"


UNUSABLE = [
    "Here is a summary of the conversation. The user asked about compaction.",
    "{}",
    '{"notes": "unknown fields alone are not a summary"}',
    '{"current_work": ""}',
    '{"files": [{}], "user_intent": [" "]}',
    '```json\n{"user_intent": ["Fix the bug"], "pending_tasks": ["Write tests", "Update docs',
    'The session focused on the parser migration. The tracker entry {"current_work": "migrate'
    ' parser"} is unchanged, and tests still need porting.',
    '<analysis>reviewing</analysis>\nA prose recap: the config was set to {"user_intent": '
    '["quoted example"]} per the docs, then the run passed.',
    '<analysis>\nThe target shape is:\n```json\n{"user_intent": ["example only"]}\n```\nNow let me'
    " review the conversation.\n</analysis>\nSorry, I ran out of room and could not produce the"
    " summary document.",
    '<analysis>\nThe prompt ends with </analysis> and shows the shape:\n```json\n{"user_intent":'
    ' ["example only"]}\n```\nNow let me review the conversation.\n</analysis>\nSorry, I ran out'
    " of room and could not produce the summary document.",
]


@pytest.mark.parametrize("text", UNUSABLE)
def test_unusable_responses_fall_back_to_raw_text(text: str) -> None:
    assert StructuredSummary.parse(text) is None, text


def test_embedded_fences_in_string_values_do_not_break_extraction() -> None:
    text = (
        '```json\n{"user_intent": ["Document the build"], "files": [{"path": "README.md", '
        '"summary": "Added build docs", "key_code": "```bash\\ncargo build\\n```"}], '
        '"pending_tasks": ["Publish the docs"]}\n```'
    )
    summary = StructuredSummary.parse(text)
    assert summary is not None
    assert summary.files[0].key_code == "```bash\ncargo build\n```"
    assert summary.pending_tasks == ["Publish the docs"]

    quoted_json_fence = (
        '```json\n{"user_intent": ["Document the config"], "files": [{"path": "docs/config.md", '
        '"summary": "Added config examples", "key_code": "```json\\n{\\"retries\\": 3}\\n```"}]}\n```'
    )
    summary = StructuredSummary.parse(quoted_json_fence)
    assert summary is not None
    assert summary.files[0].key_code == '```json\n{"retries": 3}\n```'


def test_quoted_terminator_inside_summary_json_does_not_hide_it() -> None:
    text = (
        "<analysis>\nThe session edited the compaction prompt itself.\n</analysis>\n```json\n"
        '{"user_intent": ["Rework the scratchpad prompt"], "files": [{"path": "prompts/compact.md",'
        ' "summary": "Tightened the <analysis>...</analysis> instructions"}]}\n```'
    )
    summary = StructuredSummary.parse(text)
    assert summary is not None
    assert summary.user_intent == ["Rework the scratchpad prompt"]
    assert summary.files[0].summary == "Tightened the <analysis>...</analysis> instructions"


def test_retries_next_candidate_when_fenced_extraction_fails() -> None:
    text = (
        "<analysis>the model was told to emit ```json with {braces</analysis>\n"
        '{"user_intent": ["Real goal"]}'
    )
    summary = StructuredSummary.parse(text)
    assert summary is not None
    assert summary.user_intent == ["Real goal"]


def test_lenient_shapes_are_stringified_not_rejected() -> None:
    text = """{
        "user_intent": "fix the flaky test",
        "errors_and_fixes": [
            {"error": "cursor drifted after replay batch 34", "fix": "bounded mpsc channel"},
            "plain string entry",
            null
        ],
        "pending_tasks": [42],
        "current_work": {"task": "regression test", "status": "in progress"}
    }"""
    summary = StructuredSummary.parse(text)
    assert summary is not None
    assert summary.user_intent == ["fix the flaky test"]
    assert summary.errors_and_fixes == [
        "error: cursor drifted after replay batch 34; fix: bounded mpsc channel",
        "plain string entry",
    ]
    assert summary.pending_tasks == ["42"]
    assert summary.current_work == "task: regression test; status: in progress"


def test_file_entries_parse_leniently() -> None:
    text = """{"files": [
        "src/parser.rs",
        {"path": "tests/parser.rs", "summary": "Added regression test"},
        {"path": "src/scan.rs", "summary": 42, "key_code": ["fn a() {}", "fn b() {}"]},
        ""
    ]}"""
    summary = StructuredSummary.parse(text)
    assert summary is not None
    assert summary.files == [
        FileActivity("src/parser.rs", "", None),
        FileActivity("tests/parser.rs", "Added regression test", None),
        FileActivity("src/scan.rs", "42", "fn a() {}; fn b() {}"),
    ]


def test_drops_blank_entries_but_keeps_content() -> None:
    text = (
        '{"user_intent": ["", "Fix the bug"], "files": [{"path": "a.rs", "summary": "Patched",'
        ' "key_code": "  "}], "next_step": " "}'
    )
    summary = StructuredSummary.parse(text)
    assert summary is not None
    assert summary.user_intent == ["Fix the bug"]
    assert summary.files[0].key_code is None
    assert summary.next_step is None


def test_renders_markdown_sections() -> None:
    summary = StructuredSummary.parse(FULL_RESPONSE)
    assert summary is not None
    rendered = summary.render()
    for expected in (
        "## User Intent",
        "- Fix the parser bug",
        "### src/parser.rs",
        "fn scan(&mut self) { .. }",
        "## Next Step",
    ):
        assert expected in rendered


def test_render_fences_exceed_backtick_runs_in_key_code() -> None:
    summary = StructuredSummary(
        files=[
            FileActivity(
                "docs/build.md",
                "Documented the build",
                "```bash\ncargo build\n```\n````\nnested fence docs\n````",
            )
        ],
        errors_and_fixes=["None"],
    )
    rendered = summary.render()
    assert rendered.count("\n`````\n") == 2
    assert rendered.index("## Errors + Fixes") > rendered.rindex("\n`````\n")


def test_full_render_is_exactly_the_expected_markdown() -> None:
    summary = StructuredSummary.parse(FULL_RESPONSE)
    assert summary is not None
    assert summary.render() == (
        "# Conversation Summary\n\n"
        "## User Intent\n- Fix the parser bug\n- Add a regression test\n\n"
        "## Technical Concepts\n- off-by-one\n- tokenizer\n\n"
        "## Files + Code\n### src/parser.rs\nFixed off-by-one in scan loop\n"
        "```\nfn scan(&mut self) { .. }\n```\n\n"
        "## Errors + Fixes\n- Panic on empty input, fixed with early return\n\n"
        "## Problem Solving\n- Root-caused via failing unit test\n\n"
        "## User Messages\n- fix the parser bug\n- add a test\n\n"
        "## Pending Tasks\n- Add a regression test\n\n"
        "## Current Work\nWriting the regression test in tests/parser.rs\n\n"
        "## Next Step\nFinish the regression test"
    )


def test_stringify_writes_numbers_and_booleans_as_serde_json_text() -> None:
    cases = {
        "42": 42, "true": True, "false": False, "": None, "1.0": 1.0, "0.1": 0.1,
        "1e20": 1e20, "1.5e-7": 1.5e-7, "1234.5": 1234.5, "0.001234": 0.001234,
        "1e16": 1e16, "1000000000000000.0": 1e15, "-0.0": -0.0, "a: 1; b: x; c: ": {"a": 1, "b": ["x"], "c": None},
    }
    for expected, value in cases.items():
        assert stringify(value) == expected, value


def test_json_numbers_follow_serde_json_parsing() -> None:
    assert StructuredSummary.parse('{"pending_tasks": [-0, 1.50, 18446744073709551616]}').pending_tasks == [
        "-0.0", "1.5", "1.8446744073709552e19"
    ]
    assert StructuredSummary.parse('{"pending_tasks": [NaN]}') is None
    assert StructuredSummary.parse('{"pending_tasks": [1e400]}') is None


def test_documents_nested_past_serde_json_recursion_limit_are_rejected() -> None:
    def nested(levels: int) -> str:
        return '{"user_intent": ["x"], "n": ' + "[" * (levels - 1) + "]" * (levels - 1) + "}"

    assert StructuredSummary.parse(nested(127)) is not None
    assert StructuredSummary.parse(nested(128)) is None


def test_lone_surrogate_escape_is_rejected_like_serde_json() -> None:
    assert StructuredSummary.parse('{"user_intent": ["\\ud800 x"]}') is None
    assert StructuredSummary.parse('{"user_intent": ["\\ud83d\\ude00"]}').user_intent == ["\U0001f600"]


def test_unknown_fields_are_kept_in_extra_and_flattened_into_the_context() -> None:
    summary = StructuredSummary.parse('{"next_step": "go", "risk": {"level": 2}, "extra": 1}')
    assert summary is not None
    assert summary.extra == {"risk": {"level": 2}, "extra": 1}
    context = summary.to_context()
    assert list(context) == [
        "user_intent", "technical_concepts", "files", "errors_and_fixes", "problem_solving",
        "user_messages", "pending_tasks", "current_work", "next_step", "risk", "extra",
    ]
    assert context["current_work"] is None and context["risk"] == {"level": 2}


def test_is_empty_ignores_extra() -> None:
    assert StructuredSummary(extra={"notes": "x"}).is_empty()
    assert not StructuredSummary(next_step="").is_empty()  # only normalize turns "" into None


def test_raw_control_characters_are_escaped_but_only_single_line_json_is_rescued() -> None:
    one_line = '{"user_intent": ["line one\nline two"]}'
    assert StructuredSummary.parse(one_line).user_intent == ["line one\nline two"]
    # Goose escapes every raw control character, structural newlines too, so a pretty-printed
    # document with a raw newline inside a string stays unparsable.
    pretty = '{\n  "user_intent": ["line one\nline two"]\n}'
    assert StructuredSummary.parse_detailed(pretty).reason == "invalid_json"


def test_parse_detailed_reports_why_parsing_fell_back() -> None:
    cases = {
        "plain prose": "no_candidate",
        "```json\n{\"user_intent\": [\"cut off": "no_candidate",
        '{"user_intent": [1,]}': "invalid_json",
        "```json\n[1, 2]\n```": "no_candidate",
        '{"a": [1, 2}': "invalid_json",
        "{}": "empty",
        '{"files": [{}], "user_intent": [" "]}': "empty",
    }
    for text, reason in cases.items():
        outcome = StructuredSummary.parse_detailed(text)
        assert (outcome.summary, outcome.reason) == (None, reason), text
    outcome = StructuredSummary.parse_detailed(FULL_RESPONSE)
    assert outcome.reason == "ok" and outcome.summary is not None and outcome.candidates == 1


def test_json_candidates_sit_at_markers_and_are_deduplicated() -> None:
    text = '{"a": 1}'
    assert json_candidates(text) == ['{"a": 1}']  # the cut-0 object and the leading object
    text = '<analysis>x</analysis>```json {"a": "}"} ```json {"b": 2}'
    assert json_candidates(text) == ['{"b": 2}', '{"a": "}"}']


def test_leading_object_skips_rust_whitespace_only() -> None:
    assert leading_object('\u00a0\u2003 {"a": {"b": "}"}} tail') == '{"a": {"b": "}"}}'
    assert leading_object('\x1c{"a": 1}') is None  # Python isspace() would skip \x1c; Rust does not
    assert leading_object('{"a": [}') == '{"a": [}'  # square brackets are not tracked
    assert leading_object('{"a": "\\"}') is None  # unterminated


def test_safely_parse_json_repairs_truncated_documents_and_control_characters() -> None:
    assert safely_parse_json('{"a": [1, "b') == {"a": [1, "b"]}
    assert safely_parse_json('{"a": "x\\') == {"a": "x\\"}
    assert safely_parse_json('{"a": "x\ny"}') == {"a": "x\ny"}
    assert safely_parse_json('{"a": "x\ny') == {"a": "x\ny"}
    with pytest.raises(ValueError):
        safely_parse_json("not json")


def test_fast_candidate_extraction_matches_the_direct_algorithm() -> None:
    pieces = ["{", "}", '"', "\\", "</analysis>", "```json", " ", "\n", "a", ":", "[", '{"a":1}']
    rng = random.Random(7)
    for _ in range(1500):
        text = "".join(rng.choice(pieces) for _ in range(rng.randint(0, 24)))
        assert json_candidates(text) == naive_json_candidates(text), repr(text)


def test_hostile_responses_parse_quickly() -> None:
    import time

    texts = [
        "```json\n{" * 5_000,
        "</analysis>" * 5_000 + '{"user_intent": ["x"]}',
        '"' + "```json {" * 5_000,
        "<analysis></analysis>" + "```json\n{" * 5_000 + "}" * 5_000,
    ]
    started = time.perf_counter()
    for text in texts:
        StructuredSummary.parse(text)
    assert time.perf_counter() - started < 5


def test_windowed_decoding_agrees_with_parsing_each_candidate_whole(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import json

    from workbench.compaction import _candidates, _json_decode

    monkeypatch.setattr(_json_decode, "_FIRST_WINDOW", 4)
    rng = random.Random(11)
    values = [1, -0.5, 'a"b', "x\\y", "a long string value " * 3, None, True, [1, {"z": []}]]
    for _ in range(400):
        doc = {rng.choice("abc"): rng.choice(values) for _ in range(rng.randint(1, 4))}
        text = json.dumps(doc, indent=rng.choice([None, 1]))
        cut = rng.randrange(len(text))
        text = text[:cut] + rng.choice(["\n", "", "x", '"']) + text[cut:]
        decoder = _candidates.CandidateDecoder(text)
        for start, end in _candidates.candidate_spans(text):
            try:
                got: object = decoder.decode(start, end)
            except ValueError:
                got = "<fails>"
            try:
                want: object = safely_parse_json(text[start:end])
            except ValueError:
                want = "<fails>"
            assert got == want, repr(text)
