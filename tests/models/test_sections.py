"""The extractive baseline's answers to prompts that ask for sections: each policy prompt's
shape is read, the answer has exactly that shape, and two policies' summaries of the same
conversation differ where their sections differ."""

from __future__ import annotations

import pytest

from workbench.compaction import Templates
from workbench.messages import Message
from workbench.models import ExtractiveModel
from workbench.models._sections import requested_sections
from workbench.strategies._policy import Calls, load_prompt, strip_thinking

POLICY_PROMPTS = {
    "claude-code": ["Primary request and intent", "Key technical concepts",
                    "Files and code sections", "Errors and fixes", "Problem solving",
                    "All user messages", "Pending tasks", "Current work", "Optional next step"],
    "codex": ["Goal", "Progress and decisions", "Constraints and preferences", "Next steps",
              "Key data and references"],
    "gemini-cli": ["overall_goal", "key_knowledge", "file_system_state", "recent_actions",
                   "current_plan"],
    "opencode": ["What we did", "What we are doing now", "Files involved", "What comes next"],
    "aider": ["What I asked for", "What you changed", "Names and values to remember",
              "What is still open"],
    "langchain": ["Context", "Key facts", "Actions taken", "Open questions"],
    "sliding-window": ["Summary so far", "People, files and values", "Still to do"],
}


@pytest.mark.parametrize("name", sorted(POLICY_PROMPTS))
def test_each_policy_prompt_shows_the_sections_it_asks_for(name: str) -> None:
    shape = requested_sections(load_prompt(name))
    assert shape is not None
    assert [s.title for s in shape if s.kind in ("md", "tag")] == POLICY_PROMPTS[name]


def test_goose_prompts_keep_their_json_answers() -> None:
    assert requested_sections(Templates.default().compaction) is None


def _conversation() -> list[Message]:
    first = Message.user("Fix the double count in `reconcile_batch` (src/app.py).\n"
                         "- never touch migrations/0001_init.sql: it already ran")
    call = Message.assistant("Reading it.").with_tool_request("c1", "read_file",
                                                              {"path": "src/app.py"})
    output = Message(role="user").with_tool_response("c1", "def reconcile_batch(): ...")
    return [first, call, output, Message.assistant("Fixed: keys are counted once."),
            Message.user("Later we still need to add retries to the export job.")]


async def _summary(name: str) -> str:
    calls = Calls(ExtractiveModel())
    return strip_thinking(await calls.ask(load_prompt(name), _conversation(), "Go."))


def _section(text: str, heading: str) -> list[str]:
    lines = text.splitlines()
    start = lines.index(heading) + 1
    end = next((i for i in range(start, len(lines)) if lines[i].startswith("## ")), len(lines))
    return [line for line in lines[start:end] if line.startswith("- ")]


async def test_two_policies_summaries_differ_where_their_sections_differ() -> None:
    claude, codex = await _summary("claude-code"), await _summary("codex")
    # the same rule where the sections mean the same thing: the requests
    assert _section(claude, "## Primary request and intent") == _section(codex, "## Goal")
    # claude-code's own sections
    assert _section(claude, "## All user messages") == [
        "- Fix the double count in `reconcile_batch` (src/app.py).",
        "- never touch migrations/0001_init.sql: it already ran",
        "- Later we still need to add retries to the export job."]
    assert _section(claude, "## Files and code sections") == ["- src/app.py: read"]
    # codex's own: the user's rules and the names to keep
    assert _section(codex, "## Constraints and preferences") == [
        "- never touch migrations/0001_init.sql: it already ran", "- `reconcile_batch`",
        "- src/app.py"]
    assert _section(codex, "## Next steps") == [
        "- Later we still need to add retries to the export job."]
    assert "## All user messages" not in codex and "## Constraints" not in claude
    assert claude != codex


async def test_an_xml_snapshot_is_answered_inside_its_wrapper() -> None:
    text = await _summary("gemini-cli")
    assert text.startswith("<state_snapshot>\n<overall_goal>\n- Fix the double count")
    assert text.endswith("</current_plan>\n</state_snapshot>")
    assert "<scratchpad>" not in text
