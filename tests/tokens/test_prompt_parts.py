"""A rendered prompt counted from its parts gives the count of its whole text, exactly, for the
encodings said to add up (o200k, cl100k); the others count it whole."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from tests.conftest import ROOT
from workbench._memo import run_memo
from workbench.compaction import Templates
from workbench.compaction._format import transcript_lines
from workbench.compaction._reuse import render_prompt
from workbench.compaction._summarize import filter_tool_responses
from workbench.context_mgmt._compact_messages import summarizer_input
from workbench.harness.experiment._cells import read_manifest
from workbench.messages import Message
from workbench.sessions import load_session
from workbench.tokens import PromptText, estimator_for
from workbench.tokens._prompt import safe_lines

ENCODINGS = ("o200k", "cl100k")
SHIPPED_VARIANTS = sorted(p.name for p in (ROOT / "prompts").iterdir() if p.is_dir())


def _prompt(templates: Templates, messages: list[Message], style: str) -> str:
    lines = transcript_lines(messages, style)  # type: ignore[arg-type]
    return asyncio.run(render_prompt(templates.compaction, dict(templates.params), "t",
                                     messages, lines, style))


def _whole(name: str, text: str) -> int:
    return estimator_for(name).count_exactly(text)


@pytest.mark.parametrize("variant", SHIPPED_VARIANTS)
def test_every_shipped_session_and_template_counts_the_same_from_its_parts(variant: str) -> None:
    folder = ROOT / "prompts" / variant
    templates = Templates.from_dir(folder) if folder.is_dir() else Templates.default()
    sessions = sorted(read_manifest().items())[::6]  # every sixth shipped dataset
    with run_memo():
        for session_id, (path, fmt) in sessions:
            messages = summarizer_input(load_session(path, fmt).messages)
            for pct in (0, 50):
                kept = filter_tool_responses(messages, pct)
                for style in ("goose", "jsonl"):
                    prompt = _prompt(templates, kept, style)
                    assert isinstance(prompt, PromptText), (variant, session_id)
                    for name in ENCODINGS:
                        counter = estimator_for(name)
                        assert counter.count_text_tokens(prompt) == _whole(name, prompt), \
                            (variant, session_id, pct, style, name)


HOSTILE_LINES = [
    "[user]: ends with spaces   ", "[assistant]: ends with a dot.", "[user]: /slash/",
    "[user]: tabs\t\t", "[assistant]: x<|endoftext|>y", "[user]: 12345678901234567890",
    "[user]: unicode ünïcödé ✓ 日本語テキスト", "[assistant]: trailing newline\n",
    "[user]: multi\nline\n  indented\n/leading slash\n\n\nblank lines", "[user]: \r\nwindows",
    "[assistant]: emoji 👍🏽 and combining e\u0301", "[user]: 's 't 're 've", "[user]: ]]]}}}...",
    '{"role":"user","content":["json line"]}', "[user]: ends with a quote'", "[user]: -->",
]


@pytest.mark.parametrize("name", ENCODINGS)
def test_lines_built_to_break_the_sum_still_add_up(name: str) -> None:
    counter = estimator_for(name)
    with run_memo():
        for head in ("", "Summarize:\n", "Summarize:", "a.\n", "x  \n\n", "ends/"):
            for tail in ("", "\n", "\n\nAnswer in JSON.", ".\n/x", "  \n<end>"):
                for shift in range(len(HOSTILE_LINES)):
                    lines = HOSTILE_LINES[shift:] + HOSTILE_LINES[:shift]
                    messages = [Message.user(f"m{i}") for i in range(len(lines))]
                    transcript = "\n".join(lines)
                    prompt = PromptText.around(head + transcript + tail, transcript, messages,
                                               lines, "goose")
                    assert counter.count_text_tokens(prompt) == _whole(name, prompt), \
                        (head, tail, shift)


def test_safe_lines_cut_only_before_a_line_that_starts_with_a_visible_character() -> None:
    text = "a\n[b\n c\n/d\n\ne\n"
    assert safe_lines(text) == ["a\n", "[b\n c\n/d\n\n", "e\n"]
    assert "".join(safe_lines(text)) == text
    assert safe_lines("") == [] and safe_lines("\n\n") == ["\n\n"]


def test_an_encoding_whose_counts_need_not_add_up_counts_the_whole_text() -> None:
    counter = estimator_for("p50k")
    assert not counter.counts_by_line
    lines = ["[user]: one  ", "[assistant]: two"]
    messages = [Message.user("1"), Message.assistant("2")]
    prompt = PromptText.around("h\n" + "\n".join(lines), "\n".join(lines), messages, lines,
                               "goose")
    assert counter.count_text_tokens(prompt) == _whole("p50k", prompt)


def test_a_prompt_pickles_as_plain_text(tmp_path: Path) -> None:
    import pickle

    prompt = PromptText.around("h\n[user]: x", "[user]: x", [Message.user("x")],
                               ["[user]: x"], "goose")
    back = pickle.loads(pickle.dumps(prompt))
    assert back == "h\n[user]: x" and type(back) is str
