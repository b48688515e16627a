"""`workbench run` exit codes: 0 when every cell produced an outcome, 3 on infrastructure errors."""

from __future__ import annotations

import re
from pathlib import Path

from click.testing import CliRunner

from workbench.cli import cli
from workbench.cli._run import EXIT_INFRASTRUCTURE
from workbench.messages import Message
from workbench.sessions import Session


def write_session(folder: Path, sid: str) -> None:
    messages = [Message.user(f"fix the crash in app.py ({sid})")]
    for i in range(3):
        messages.append(Message.assistant("checking").with_tool_request(
            f"t{i}", "shell", {"command": "python app.py"}))
        messages.append(Message.user().with_tool_response(
            f"t{i}", "Traceback (most recent call last):\nValueError: bad input " + "x " * 200))
    messages.append(Message.assistant("fixed"))
    path = folder / f"{sid}.json"
    Session(sid, "goose-json", str(path), messages).write_goose_json(path)


def run(tmp_path: Path, body: str) -> tuple[int, str]:
    write_session(tmp_path, "s1")
    write_session(tmp_path, "s2")
    spec = tmp_path / "exp.toml"
    spec.write_text('name = "exit"\nsessions = ["s*.json"]\ntemplates = ["default", '
                    '"lean-facts"]\n' + body)
    result = CliRunner().invoke(cli, ["run", str(spec), "--out", str(tmp_path / "run"),
                                      "--no-progress"])
    return result.exit_code, result.output


def test_a_clean_run_exits_zero_with_table_verdict_and_error_summary(tmp_path: Path) -> None:
    code, out = run(tmp_path, 'models = ["extractive"]\n')
    assert code == 0, out
    assert "over the n sessions every template completed" in out  # 2 rows: the table shows
    assert "\nRecommendation: " in out and "Verdict: which template wins" not in out
    assert "\n  extractive @ none: " in out  # one line per model x window
    assert "Errors and failures: none (every cell produced a summary)" in out
    assert "(4 cells, 0 failed, 0 errors, status finished)" in out


def test_a_replay_cache_miss_is_an_infrastructure_error_and_exits_non_zero(
        tmp_path: Path) -> None:
    code, out = run(tmp_path, 'models = ["replay:extractive"]\n'
                              '[cache]\npath = "empty-recording.db"\n')
    assert code == EXIT_INFRASTRUCTURE == 3, out
    assert "4 x cache miss (error): replay-only cache has no recording" in out
    # Each miss names its cell and the request the recording lacks (its prompt hash).
    assert re.search(r"^    cell \(session s1, model extractive, template default, window "
                     r"none\): no recording of request sha256:[0-9a-f]{12} to model "
                     r"extractive$", out, re.M), out
    assert out.count(": no recording of request sha256:") == 4
    assert "(4 cells, 0 failed, 4 errors, status finished)" in out
    assert "4 cell(s) hit infrastructure errors" in out


def test_a_run_whose_only_failures_are_context_exhaustion_exits_zero(tmp_path: Path) -> None:
    code, out = run(tmp_path, 'models = ["extractive"]\nwindows = [60]\n')
    assert code == 0, out
    assert "\n  4 x context exhausted (failed)\n" in out  # an outcome: counted, one line
    assert "(4 cells, 4 failed, 0 errors, status finished)" in out
    assert "extractive @ 60: none (no template produced a summary in extractive @ 60)" in out
