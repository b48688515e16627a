"""The extractive baseline, a simulated summarizer, follows the schema the prompt asks for."""

from __future__ import annotations

import asyncio
import json
import re

from workbench.compaction import Templates, render
from workbench.compaction._format import format_transcript
from workbench.harness.experiment._variants import load_variant
from workbench.messages import Message
from workbench.models import ExtractiveModel
from workbench.models._extractive import (
    SCHEMA_FIELDS,
    extract_summary,
    parse_transcript,
    requested_schema,
)

CONVERSATION = [
    Message.user("Fix the failing test in src/app.py"),
    Message.assistant("Looking.").with_tool_request(
        "t1", "developer__shell", {"command": "pytest tests/test_app.py -q"}),
    Message.user().with_tool_response("t1", "FAILED tests/test_app.py::test_add\nError: boom"),
    Message.user("Also keep negative numbers working"),
    Message.user("And add a docstring"),
    Message.assistant("Done."),
]


def answer(template: str) -> dict:
    prompt = render(template, {"messages": format_transcript(CONVERSATION)})
    reply, _ = asyncio.run(ExtractiveModel().complete(prompt, [Message.user("summarize")]))
    body = re.search(r"```json\n(.*)\n```", reply.concat_text(), re.DOTALL).group(1)
    return json.loads(body)


def test_the_built_in_prompt_gets_every_field_in_full_as_before() -> None:
    prompt = Templates.default().compaction
    full = extract_summary(parse_transcript(render(prompt, {"messages": format_transcript(
        CONVERSATION)})))

    schema = requested_schema(prompt)

    assert (schema.fields, schema.list_cap, schema.field_caps) == (SCHEMA_FIELDS, None, {})
    assert answer(prompt) == full
    assert len(full["user_intent"]) == 3


def test_a_reduced_schema_with_a_list_cap_is_followed() -> None:
    variant = load_variant("lean-facts{list_cap=3,drop_fields=[technical_concepts,user_messages]}")

    got = answer(variant.templates.baked().compaction)

    assert list(got) == ["user_intent", "files", "errors_and_fixes", "problem_solving",
                         "pending_tasks", "current_work", "next_step"]
    assert got["user_intent"] == ["Fix the failing test in src/app.py", "Also keep negative numbers working", "And add a docstring"]
    assert len(got["pending_tasks"]) == 1 and len(got["errors_and_fixes"]) <= 3
    assert got["current_work"] == "Done."


def test_a_cap_on_one_named_field_caps_only_that_field() -> None:
    prompt = Templates.default().compaction.replace(
        "## Rules\n", "## Rules\n\n- `user_intent`: at most 2 entries.\n")

    got = answer(prompt)

    assert requested_schema(prompt).field_caps == {"user_intent": 2}
    assert len(got["user_intent"]) == 2 and len(got["user_messages"]) == 3


def test_a_cap_on_every_list_shortens_each_list_and_leaves_strings_alone() -> None:
    prompt = Templates.default().compaction.replace(
        "## Rules\n", "## Rules\n\n- Keep at most 1 entries in each list.\n")

    got = answer(prompt)

    assert requested_schema(prompt).list_cap == 1
    assert {k: len(v) for k, v in got.items() if isinstance(v, list)} == {
        "user_intent": 1, "technical_concepts": 1, "files": 1, "errors_and_fixes": 1,
        "problem_solving": 0, "user_messages": 1, "pending_tasks": 1}
    assert got["current_work"] == "Done."
