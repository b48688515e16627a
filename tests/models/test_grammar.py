"""The JSON schema a local model decodes under, built from the compaction prompt (no llama.cpp)."""

from __future__ import annotations

import json

import pytest

from workbench.compaction import render
from workbench.compaction._format import format_transcript
from workbench.errors import ConfigError
from workbench.harness.experiment._variants import load_variant
from workbench.messages import Message
from workbench.models._extractive import SCHEMA_FIELDS
from workbench.models._grammar import (
    DEFAULT_MAX_CHARS,
    DEFAULT_MAX_ITEMS,
    GrammarBounds,
    check_grammar_mode,
    close_truncated_json,
    summary_schema,
)

CONVERSATION = [Message.user("Fix the failing test in src/app.py"), Message.assistant("Done.")]
SHIPPED = ("default", "top3-intent", "jsonl-transcript", "lean-facts")


def prompt_of(variant: str) -> str:
    """The compaction prompt a variant sends for `CONVERSATION`."""
    found = load_variant(variant)
    style = found.options.get("transcript_style", "goose")
    return render(found.templates.baked().compaction,
                  {"messages": format_transcript(CONVERSATION, style=style)})


def caps(schema: dict) -> dict[str, tuple]:
    """Per field: its type, maxItems, and the maxLength of its strings."""
    out = {}
    for name, shape in schema["properties"].items():
        if shape.get("type") == "array":
            item = shape["items"]
            length = (item.get("maxLength") if item.get("type") == "string"
                      else {k: _length(v) for k, v in item["properties"].items()})
            out[name] = ("array", shape["maxItems"], length)
        else:
            out[name] = ("string", None, _length(shape))
    return out


def _length(shape: dict) -> int:
    return shape["maxLength"] if "maxLength" in shape else shape["anyOf"][0]["maxLength"]


@pytest.mark.parametrize("variant", SHIPPED)
def test_each_shipped_template_asks_for_all_nine_fields_bounded_by_the_defaults(variant):
    schema = summary_schema(prompt_of(variant))

    assert schema["type"] == "object"
    assert list(schema["properties"]) == list(SCHEMA_FIELDS), variant
    assert schema["required"] == list(SCHEMA_FIELDS), variant
    n, c = DEFAULT_MAX_ITEMS, DEFAULT_MAX_CHARS
    files = {"path": c, "summary": c, "key_code": c}
    assert caps(schema) == {
        "user_intent": ("array", n, c), "technical_concepts": ("array", n, c),
        "files": ("array", n, files), "errors_and_fixes": ("array", n, c),
        "problem_solving": ("array", n, c), "user_messages": ("array", n, c),
        "pending_tasks": ("array", n, c), "current_work": ("string", None, c),
        "next_step": ("string", None, c)}, variant


def test_a_reduced_lean_facts_schema_and_its_stated_list_cap_are_followed():
    prompt = prompt_of("lean-facts{list_cap=3,drop_fields=[technical_concepts,user_messages]}")

    schema = summary_schema(prompt, GrammarBounds(max_items=9, max_chars=50))

    assert list(schema["properties"]) == ["user_intent", "files", "errors_and_fixes",
                                          "problem_solving", "pending_tasks", "current_work",
                                          "next_step"]
    assert {name: shape.get("maxItems") for name, shape in schema["properties"].items()} == {
        "user_intent": 3, "files": 3, "errors_and_fixes": 3, "problem_solving": 3,
        "pending_tasks": 3, "current_work": None, "next_step": None}


def test_stated_character_caps_become_max_length_per_field_and_for_every_string():
    prompt = ("```json\n{\"user_intent\": [\"x\"], \"current_work\": \"y\", \"next_step\": \"z\"}\n"
              "```\n- Keep each entry to at most 80 characters.\n"
              "- `current_work`: at most 300 characters.\n"
              "- `user_intent`: at most 2 entries.\n")

    schema = summary_schema(prompt)

    assert caps(schema) == {"user_intent": ("array", 2, 80), "current_work": ("string", None, 300),
                            "next_step": ("string", None, 80)}


def test_the_nullable_fields_keep_their_length_cap_through_any_of():
    # llama.cpp's schema converter drops maxLength from a "type": [..., "null"] list.
    schema = summary_schema("no example here", GrammarBounds(max_items=2, max_chars=30))

    assert schema["properties"]["next_step"] == {
        "anyOf": [{"type": "string", "maxLength": 30}, {"type": "null"}]}
    assert schema["properties"]["files"]["items"]["properties"]["key_code"] == {
        "anyOf": [{"type": "string", "maxLength": 30}, {"type": "null"}]}
    assert schema["properties"]["files"]["items"]["required"] == ["path", "summary", "key_code"]


def test_bounds_and_modes_are_checked_with_the_setting_named():
    with pytest.raises(ConfigError, match=r"^grammar_max_items must be a positive integer, got 0$"):
        GrammarBounds(max_items=0)
    with pytest.raises(ConfigError, match=r"^grammar_max_chars must be a positive integer, got 'x'$"):
        GrammarBounds(max_chars="x")  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match=r"^grammar must be one of 'schema', 'off', got 'json'$"):
        check_grammar_mode("json")
    assert check_grammar_mode("off") == "off"


@pytest.mark.parametrize(("cut", "closed"), [
    ('{"a": ["x", "y', {"a": ["x", "y"]}),
    ('{"a": ["x"], "b', {"a": ["x"], "b": None}),
    ('{"a": ["x"], "b":', {"a": ["x"], "b": None}),
    ('{"a": ["x",', {"a": ["x"]}),
    ('{"a": "x\\u12', {"a": "x"}),
    ('{"a": "tab\\', {"a": "tab"}),
    ('{"f": [{"p": "q", ', {"f": [{"p": "q"}]}),
    ('  {"a": "brace } and [ in a string', {"a": "brace } and [ in a string"}),
])
def test_a_reply_cut_by_the_token_limit_is_closed_keeping_what_was_written(cut, closed):
    text = close_truncated_json(cut)

    assert text is not None and json.loads(text) == closed, cut


@pytest.mark.parametrize("text", ['{"a": 1}', "not json", '{"a": 1}}', ""])
def test_a_whole_document_or_a_non_object_is_not_closed(text):
    assert close_truncated_json(text) is None
