"""`inspect_session` and the ``workbench sessions inspect`` command."""

from __future__ import annotations

import json

from click.testing import CliRunner

from workbench.cli import cli
from workbench.messages import Message, MessageMetadata, UnknownContent
from workbench.sessions import Session
from workbench.sessions._inspect import inspect_session


class CharEstimator:
    """One token per character of text, plus Goose's 4 per message and 3 for the reply."""

    def count_text_tokens(self, text: str) -> int:
        return len(text)

    def count_chat_tokens(self, system, messages, tools=None) -> int:
        return sum(4 + len(m.concat_text()) + sum(len(r.text()) for r in m.tool_responses())
                   for m in messages) + 3


def _session() -> Session:
    hidden = Message.user("old request").copy_with(
        metadata=MessageMetadata(user_visible=True, agent_visible=False))
    msgs = [
        hidden,
        Message.user("fix it"),
        Message.assistant("ok").with_tool_request("c1", "shell", {"cmd": "ls"})
        .with_tool_request("c2", "shell", {"cmd": "x"}),
        Message.user().with_tool_response("c1", "a" * 50).with_tool_response("c2", "no",
                                                                             is_error=True),
        Message.assistant("done", ).model_copy(
            update={"content": [UnknownContent(raw={"type": "future"})]}),
    ]
    return Session(id="s1", format="test", path="/x.json", messages=msgs, meta={
        "compactions": [{"index": 1, "trigger": "auto", "pre_tokens": 900}],
        "reference_summaries": [{"index": 1, "text": "s"}], "models": ["m"],
        "warnings": ["/x.json:3: bad"]})


def test_inspect_counts_roles_tools_tokens_and_recorded_facts():
    info = inspect_session(_session(), estimator=CharEstimator())
    assert info == {
        "format": "test", "id": "s1", "path": "/x.json", "messages": 5,
        "by_role": {"user": 3, "assistant": 2}, "agent_invisible": 1,
        "tool_calls": 2, "tool_errors": 1, "unanswered_tool_calls": 0,
        "tokens": (4 + 6 + 3) + (4 + 2 + 3) + (4 + 52 + 3) + (4 + 0 + 3),
        "tokens_all_messages": (4 + 11 + 3) + 13 + 9 + 59 + 7,
        "largest_message": {"index": 3, "role": "user", "tokens": 59},
        "compactions": [{"index": 1, "trigger": "auto", "pre_tokens": 900}],
        "reference_summaries": 1, "unknown_items": 1, "models": ["m"], "usage": None,
        "warnings": ["/x.json:3: bad"],
    }


def test_inspect_uses_goose_o200k_context_count_by_default():
    from workbench.tokens import default_estimator

    s = _session()
    info = inspect_session(s)
    assert info["tokens"] == default_estimator().count_context_tokens(s.messages)
    assert info["tokens"] < info["tokens_all_messages"]


def test_cli_inspect_prints_a_block_per_session_or_json(tmp_path):
    path = _session().write_goose_json(tmp_path / "s.json")
    runner = CliRunner()
    result = runner.invoke(cli, ["sessions", "inspect", str(path)])
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert lines[0] == "session          s1  (goose-json)"
    assert "compactions      1: at #1 auto (900 tokens before)" in lines
    assert "tool calls       2  (1 errors, 0 unanswered)" in lines
    result = runner.invoke(cli, ["sessions", "inspect", "--json", "--format", "goose-json",
                                 str(path), str(path)])
    assert result.exit_code == 0, result.output
    infos = json.loads(result.output)
    assert [i["id"] for i in infos] == ["s1", "s1"] and infos[0]["tool_errors"] == 1


def test_cli_inspect_turns_a_format_error_into_a_clean_message(tmp_path):
    path = tmp_path / "empty.jsonl"
    path.write_text("", encoding="utf-8")
    result = CliRunner().invoke(cli, ["sessions", "inspect", str(path)])
    assert result.exit_code == 1
    assert result.output == f"Error: {path}: the file is empty\n"


def test_cli_inspect_questions_prints_each_with_its_answer_and_evidence(shared_sessions):
    path = (shared_sessions / "mini-swe-agent" / "swebench_results"
            / "20251118_gemini-3-pro-74pct" / "trajs" / "sympy__sympy-19637"
            / "sympy__sympy-19637.traj.json")
    runner = CliRunner()
    result = runner.invoke(cli, ["sessions", "inspect", "--questions", str(path)])
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert "questions  15" in lines
    at = lines.index("  4. recall · failures · exact/error  [recall-failures-1]")
    assert lines[at + 1:at + 4] == [
        "     Q  What error did the command `python reproduce_issue.py` fail with the first "
        "time? Quote the error message exactly.",
        "     A  UnboundLocalError: local variable 'kern' referenced before assignment",
        "     evidence  message #8: \"UnboundLocalError: local variable 'kern' referenced "
        "before assignment\""]
    result = runner.invoke(cli, ["sessions", "inspect", "--questions", "--json", str(path)])
    (info,) = json.loads(result.output)
    assert len(info["questions"]["questions"]) == 15
    assert info["questions"]["questions"][3]["evidence"] == [
        {"message": 8, "quote": "UnboundLocalError: local variable 'kern' referenced before "
                                "assignment"}]
    plain = runner.invoke(cli, ["sessions", "inspect", "--json", str(path)])
    assert "questions" not in json.loads(plain.output)[0]
