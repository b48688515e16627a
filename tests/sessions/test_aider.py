"""aider chat history import: session splitting, input/output/reply blocks, edits, selection."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from workbench.errors import ConfigError, SessionFormatError
from workbench.sessions import detect_format, load_session, load_sessions

HEADER = re.compile(r"^# aider chat started at (\S+ \S+)$", re.M)

SAMPLE = """\
> leftover output of an earlier session~~

# aider chat started at 2024-08-05 19:33:32

> aider aider/utils.py~~
> Main model: claude-3-5-sonnet-20240620 with diff edit format~~

#### Use the Spinner~~
#### in run_install~~

Certainly! Here's the change:

aider/utils.py
```python
<<<<<<< SEARCH
def run_install(cmd):
    print()
=======
def run_install(cmd):
    spinner = Spinner("Installing...")
>>>>>>> REPLACE
```

#### Usage notes
This heading is markdown from the reply, not input.

> Tokens: 5,244 sent, 604 received. Cost: $0.02 request, $0.02 session.~~
> Applied edit to aider/utils.py~~
> Commit fd43cd4 feat: Use the Spinner~~

#### /run pytest -q~~
> ============ test session starts ============
collected 2 items

FAILED tests/test_utils.py::test_install~~
> Add the output to the chat? n~~

# aider chat started at 2024-08-06 10:00:00

#### fix it~~

aider/io.py
```
<<<<<<< SEARCH
x = 1
=======
x = 2
>>>>>>> REPLACE
```

> Tokens: 1.2k sent, 80 received. Cost: $0.0031 message, $0.05 session.~~
> The LLM did not conform to the edit format.~~
> ## SearchReplaceNoExactMatch: This SEARCH block failed to exactly match lines in aider/io.py~~
""".replace("~~\n", "  \n")


def _sample(tmp_path: Path) -> Path:
    path = tmp_path / ".aider.chat.history.md"
    path.write_text(SAMPLE)
    return path


def test_the_real_history_splits_into_one_session_per_header_plus_the_partial_start(
        shared_sessions: Path) -> None:
    path = shared_sessions / "aider/tests/fixtures/chat-history.md"
    text = path.read_text()
    starts = HEADER.findall(text)
    begins_mid_session = not text.startswith("# aider chat started at")
    sessions = load_sessions(path)
    assert detect_format(path) == "aider"
    assert len(sessions) == len(starts) + int(begins_mid_session) == 1134
    assert sessions[0].meta["partial"] is True and sessions[0].meta["started"] is None
    assert [s.meta["started"] for s in sessions[1:]] == starts
    requests = [r for s in sessions for m in s.messages for r in m.tool_requests()]
    responses = [r for s in sessions for m in s.messages for r in m.tool_responses()]
    assert len(requests) == len(responses)
    per_session = [[r.id for m in s.messages for r in m.tool_requests()] for s in sessions]
    for s, ids in zip(sessions, per_session, strict=True):
        got = {r.id for m in s.messages for r in m.tool_responses()}
        assert set(ids) == got, s.id
    one = load_session(path, started="2024-08-05 19:33:32")
    assert one.meta["index"] == 2
    assert one.messages[1].concat_text() == \
        "Use the Spinner instead of the inlined custom spinner"
    assert one.meta["usage"]["input_tokens"] == 5244
    assert one.meta["usage"]["output_tokens"] == 604
    [edit] = [r for m in one.messages for r in m.tool_requests()]
    assert edit.name == "edit" and edit.arguments["path"] == "aider/utils.py"
    assert sessions[2].messages[1].concat_text() == one.messages[1].concat_text()


def test_inputs_replies_edits_and_outputs_become_goose_messages(tmp_path: Path) -> None:
    sessions = load_sessions(_sample(tmp_path))
    assert [s.meta["started"] for s in sessions] == [
        None, "2024-08-05 19:33:32", "2024-08-06 10:00:00"]
    s = sessions[1]
    kinds = [(m.role, m.is_agent_visible, [c.type for c in m.content]) for m in s.messages]
    assert kinds == [
        ("user", False, ["text"]),                       # aider banner: the model never saw it
        ("user", True, ["text"]),                        # merged #### input
        ("assistant", True, ["text", "toolRequest"]),    # reply prose + its edit
        ("user", True, ["toolResponse"]),                # aider's answer to the edit
        ("user", True, ["text"]),                        # /run input
        ("assistant", True, ["toolRequest"]),            # the command aider ran
        ("user", True, ["toolResponse"]),                # its output (multi-line block)
    ]
    assert s.messages[1].concat_text() == "Use the Spinner\nin run_install"
    reply = s.messages[2]
    assert reply.concat_text() == ("Certainly! Here's the change:\n\n#### Usage notes\n"
                                   "This heading is markdown from the reply, not input.")
    [edit] = reply.tool_requests()
    assert (edit.id, edit.name) == ("edit_1", "edit")
    assert edit.arguments == {"path": "aider/utils.py",
                              "search": "def run_install(cmd):\n    print()",
                              "replace": 'def run_install(cmd):\n    spinner = Spinner("Installing...")'}
    [result] = s.messages[3].tool_responses()
    assert result.text() == ("Applied edit to aider/utils.py\n"
                             "Commit fd43cd4 feat: Use the Spinner")
    assert not result.tool_result.is_error
    [run] = s.messages[5].tool_requests()
    assert (run.id, run.name, run.arguments) == ("cmd_1", "run", {"command": "/run pytest -q"})
    [output] = s.messages[6].tool_responses()
    assert output.text() == ("============ test session starts ============\ncollected 2 items"
                             "\n\nFAILED tests/test_utils.py::test_install\n"
                             "Add the output to the chat? n")
    assert output.tool_result.is_error
    assert s.messages[6].metadata.model_extra == {"aiderCommand": True}
    assert s.meta["models"] == ["claude-3-5-sonnet-20240620"]
    assert s.meta["usage"]["cost"] == 0.02


def test_a_failed_search_block_is_an_error_result(tmp_path: Path) -> None:
    s = load_session(_sample(tmp_path), index=2)
    [result] = [r for m in s.messages for r in m.tool_responses()]
    assert result.tool_result.is_error
    assert result.text().endswith("failed to exactly match lines in aider/io.py")
    assert s.meta["usage"]["input_tokens"] == 1200
    assert s.meta["usage"]["cost"] == 0.0031


def test_selection_and_bad_input_have_clear_errors(tmp_path: Path) -> None:
    path = _sample(tmp_path)
    with pytest.raises(ConfigError) as out_of_range:  # issue 9: no longer an empty list
        load_sessions(path, index=7)
    assert str(out_of_range.value) == (f"{path}: session index 7 is out of range: the file "
                                       "holds 3 session(s) (index 0..2)")
    with pytest.raises(SessionFormatError) as info:
        load_session(path, started="1999-01-01 00:00:00")
    assert str(info.value) == (f"{path}: no session matched the selection "
                               "{'started': '1999-01-01 00:00:00'}")
    with pytest.raises(ConfigError) as cfg:
        load_sessions(path, session_id="x")
    assert str(cfg.value) == "aider sessions are selected by index= or started=, not session_id"
    plain = tmp_path / "notes.md"
    plain.write_text("just some notes\n")
    with pytest.raises(SessionFormatError) as info:
        load_sessions(plain, format="aider")
    assert str(info.value) == (f'{plain}: no aider session found (expected an aider chat '
                               'history: "# aider chat started at ..." headers and "#### " '
                               "input lines)")
