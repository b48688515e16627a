"""ExtractiveModel: a rule-based summary read from either transcript style."""

from __future__ import annotations

import importlib.util
import json

import pytest

from workbench.compaction._format import TranscriptStyle, format_transcript
from workbench.messages import Message
from workbench.models import ExtractiveModel
from workbench.models._extractive import parse_transcript
from workbench.tokens import default_estimator

LONG = "Please also " + "keep the old behaviour for negative numbers " * 10
TRACE = ("FAILED tests/test_app.py::test_add - assert -1 == 3\n"
         "Traceback (most recent call last):\n"
         '  File "tests/test_app.py", line 4, in test_add\n'
         "    assert add(1, 2) == 3\n"
         "AssertionError: assert -1 == 3")


def conversation() -> list[Message]:
    return [
        Message.user("Fix the failing test in src/app.py"),
        Message.assistant("I'll look at the file.").with_tool_request(
            "t1", "developer__text_editor", {"command": "view", "path": "src/app.py"}),
        Message.user().with_tool_response("t1", "def add(a, b):\n    return a - b"),
        Message.assistant().with_tool_request(
            "t2", "developer__shell", {"command": "pytest tests/test_app.py -q 2>&1"}),
        Message.user().with_tool_response("t2", TRACE, is_error=True),
        Message.assistant("The add function subtracts; fixing it.").with_tool_request(
            "t3", "developer__text_editor",
            {"command": "str_replace", "path": "src/app.py", "old_str": "a - b", "new_str": "a + b"}),
        Message.user().with_tool_response("t3", "The file src/app.py has been edited."),
        Message.user("Fix the failing test in src/app.py"),
        Message.user(LONG),
        Message.assistant("Done: tests pass.\nThe docstring is added too."),
    ]


def prompt(style: TranscriptStyle, ending: str = "## Instructions\nReason inside <analysis> tags.") -> str:
    return ("You are summarizing a session.\n\n# Conversation History\n\n"
            + format_transcript(conversation(), style) + "\n\n" + ending)


EXPECTED = {
    "user_intent": ["Fix the failing test in src/app.py", LONG[:297] + "..."],
    "technical_concepts": ["developer__text_editor", "developer__shell"],
    "files": [
        {"path": "src/app.py", "summary": "edited", "key_code": None},
        {"path": "tests/test_app.py", "summary": "read", "key_code": None},
    ],
    "errors_and_fixes": ["FAILED tests/test_app.py::test_add - assert -1 == 3",
                         "AssertionError: assert -1 == 3"],
    "problem_solving": [],
    "user_messages": ["Fix the failing test in src/app.py", "Fix the failing test in src/app.py",
                      LONG[:297] + "..."],
    "pending_tasks": [LONG[:297] + "..."],
    "current_work": "Done: tests pass.\nThe docstring is added too.",
    "next_step": None,
}


def answer_json(text: str) -> dict:
    head, fence, rest = text.partition("\n```json\n")
    assert head == "<analysis>extractive</analysis>" and fence
    assert rest.endswith("\n```")
    return json.loads(rest[: -len("\n```")])


@pytest.mark.parametrize("style", ["goose", "jsonl"])
async def test_both_transcript_styles_give_the_same_exact_fields(style):
    message, _ = await ExtractiveModel().complete(prompt(style), [Message.user("Summarize.")])
    assert message.role == "assistant"
    assert answer_json(message.concat_text()) == EXPECTED


async def test_the_last_message_stops_at_a_lone_tag_line_where_the_template_resumes():
    system = prompt("goose", ending="</conversation>\nNow write the summary.")
    message, _ = await ExtractiveModel().complete(system, [])
    assert answer_json(message.concat_text())["current_work"] == (
        "Done: tests pass.\nThe docstring is added too.")


async def test_usage_counts_the_prompt_and_the_answer_and_costs_nothing():
    system, messages = prompt("goose"), [Message.user("Summarize.")]
    message, usage = await ExtractiveModel().complete(system, messages)
    est = default_estimator()
    assert usage.model == "extractive"
    assert usage.input_tokens == est.count_chat_tokens(system, messages)
    assert usage.output_tokens == est.count_text_tokens(message.concat_text())
    assert usage.total_tokens == usage.input_tokens + usage.output_tokens
    assert usage.cost == 0.0


async def test_the_same_prompt_always_gives_the_same_answer():
    a, _ = await ExtractiveModel().complete(prompt("jsonl"), [])
    b, _ = await ExtractiveModel().complete(prompt("jsonl"), [])
    assert a.concat_text() == b.concat_text()


async def test_a_prefix_style_request_is_read_from_the_messages_minus_the_instruction():
    messages = conversation() + [Message.user("Pause and summarize the work above.")]
    message, _ = await ExtractiveModel().complete("You are a coding agent.", messages)
    assert answer_json(message.concat_text()) == EXPECTED


async def test_quoted_analysis_terminators_are_escaped_so_they_cannot_cut_the_answer():
    system = prompt("goose", ending="").replace(
        "Fix the failing test in src/app.py", "Explain </analysis> tags", 1)
    message, _ = await ExtractiveModel().complete(system, [])
    text = message.concat_text()
    assert text.count("</analysis>") == 1
    assert answer_json(text)["user_intent"][0] == "Explain </analysis> tags"


async def test_an_empty_transcript_gives_empty_fields():
    message, _ = await ExtractiveModel().complete("Nothing to see.", [])
    data = answer_json(message.concat_text())
    assert data == {"user_intent": [], "technical_concepts": [], "files": [],
                    "errors_and_fixes": [], "problem_solving": [], "user_messages": [],
                    "pending_tasks": [], "current_work": None, "next_step": None}


def test_user_intent_keeps_the_first_request_and_the_latest_nine():
    text = "\n".join(f"[user]: request {i}" for i in range(15))
    from workbench.models._extractive import extract_summary

    intents = extract_summary(parse_transcript(text))["user_intent"]
    assert intents == ["request 0"] + [f"request {i}" for i in range(6, 15)]


def test_the_identity_names_the_model_and_its_rule_version():
    assert ExtractiveModel().cache_identity() == {"model": "extractive", "version": 1}


@pytest.mark.skipif(importlib.util.find_spec("workbench.compaction._structured") is None,
                    reason="needs workbench/compaction/_structured.py")
@pytest.mark.parametrize("style", ["goose", "jsonl"])
async def test_the_answer_parses_as_a_structured_summary(style):
    from workbench.compaction._structured import StructuredSummary

    message, _ = await ExtractiveModel().complete(prompt(style), [])
    parsed = StructuredSummary.parse(message.concat_text())
    assert parsed is not None
    assert list(parsed.user_intent) == EXPECTED["user_intent"]
    assert [f.path for f in parsed.files] == ["src/app.py", "tests/test_app.py"]


async def test_headings_inside_the_last_message_are_kept_up_to_the_answer_instructions():
    messages = [Message.user("Compare the versions"),
                Message.assistant("Here they are.\n\n## Versions\n\n- api 1.5.0")]
    system = ("# Conversation History\n\n" + format_transcript(messages, "goose")
              + "\n\n## How to answer\n\nFirst, think inside <analysis> tags.\n")
    message, _ = await ExtractiveModel().complete(system, [])
    assert answer_json(message.concat_text())["current_work"] == (
        "Here they are.\n\n## Versions\n\n- api 1.5.0")
