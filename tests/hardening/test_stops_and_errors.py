"""How a run stops and how its errors read: Ctrl-C, the budget, a finished run resumed, a
provider that fails, and the exit codes `workbench --help` lists.

Ctrl-C and the budget stop run `workbench` in a real subprocess (a real SIGINT; the budget's
one message goes through logging to stderr), against the local provider stand-in.
"""

from __future__ import annotations

import os
import re
import shlex
import signal
import socket
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

from click.testing import CliRunner

from tests.conftest import ROOT
from tests.hardening._provider_server import ProviderServer
from workbench.cli import cli
from workbench.cli._exit_codes import EXIT_CODES, EXIT_INTERRUPTED
from workbench.messages import Message
from workbench.sessions import Session

KEY = "sk-stops-" + "k" * 24
SESSIONS = 6


def write_sessions(folder: Path, count: int = SESSIONS) -> None:
    for i in range(count):
        path = folder / f"s{i}.json"
        messages = [Message.user(f"fix the crash in app{i}.py"), Message.assistant("done")]
        Session(f"s{i}", "goose-json", str(path), messages).write_goose_json(path)


def write_spec(folder: Path, api_base: str, model: str = "openai/served",
               extra: str = "") -> Path:
    write_sessions(folder)
    spec = folder / "exp.toml"
    spec.write_text(
        'name = "stops"\nsessions = ["s*.json"]\ntemplates = ["default"]\nconcurrency = 1\n'
        f'[[models]]\nmodel = "{model}"\nparams = {{ api_base = "{api_base}", '
        f'api_key = "{KEY}", num_retries = 0 }}\n' + extra, encoding="utf-8")
    return spec


def workbench(args: list[str], cwd: Path) -> subprocess.Popen[str]:
    """`workbench ARGS` in a subprocess that takes SIGINT as a terminal would (a background
    job may have inherited it ignored)."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.Popen([sys.executable, "-m", "workbench", *args], cwd=cwd, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))


def stored_cells(db: Path) -> int:
    try:
        with sqlite3.connect(f"{db.resolve().as_uri()}?mode=ro", uri=True) as conn:
            return int(conn.execute("SELECT count(*) FROM cells").fetchone()[0])
    except sqlite3.Error:
        return 0


def test_ctrl_c_exits_130_saying_what_was_saved_what_remains_and_the_command_that_resumes(
        tmp_path: Path, server: ProviderServer) -> None:
    server.delay = 0.4  # each cell waits on its call: the run is still going when it is stopped
    spec = write_spec(tmp_path, server.base())
    folder = tmp_path / "runs" / "stopped"
    proc = workbench(["run", str(spec), "--out", str(folder), "--no-progress"], tmp_path)
    deadline = time.monotonic() + 120
    while stored_cells(folder / "results.sqlite") < 1 and time.monotonic() < deadline:
        assert proc.poll() is None, proc.communicate()
        time.sleep(0.1)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=120)

    assert proc.returncode == EXIT_INTERRUPTED == 130, (out, err)
    assert "Aborted!" not in err and "Traceback" not in err, err
    found = re.fullmatch(r"interrupted: (\d+) cell\(s\) saved in (\S+), (\d+) of 6 remain; "
                         r"resume with: (.+)", err.strip().splitlines()[-1])
    assert found is not None, err
    saved, left = int(found.group(1)), int(found.group(3))
    assert (found.group(2), saved + left) == (str(folder), SESSIONS)
    assert saved == stored_cells(folder / "results.sqlite") >= 1 and left >= 1
    command = shlex.split(found.group(4))
    assert command == ["workbench", "run", str(spec), "--out", str(folder), "--no-progress"]

    # The printed command resumes: only the cells that remained are sent.
    server.delay = 0.0
    server.requests.clear()
    resumed = workbench(command[1:], tmp_path)
    out, err = resumed.communicate(timeout=300)
    assert resumed.returncode == 0, (out, err)
    assert len(server.requests) == left
    assert f"run folder: {folder} (6 cells, 0 failed, 0 errors, status finished)" in out


def test_a_budget_stop_exits_4_and_says_why_once(tmp_path: Path, server: ProviderServer) -> None:
    # Each call bills 150 tokens (100 in, 50 out): the budget stops the run after the first.
    spec = write_spec(tmp_path, server.base(), extra="[budget]\nmax_tokens = 150\n")
    proc = workbench(["run", str(spec), "--out", str(tmp_path / "run"), "--no-progress"],
                     tmp_path)
    out, err = proc.communicate(timeout=300)

    assert proc.returncode == 4, (out, err)
    said = (out + err).count("budget reached")
    assert said == 1, (out, err)
    assert ("budget reached (150 billed tokens >= max_tokens 150); 5 cell(s) not run. Raise "
            "[budget] in the spec and run again to continue.") in err
    assert "status budget_reached)" in out


def test_resuming_a_finished_run_says_so_and_prints_its_summary_once(tmp_path: Path) -> None:
    write_sessions(tmp_path, 2)
    spec = tmp_path / "exp.toml"
    spec.write_text('name = "done"\nsessions = ["s*.json"]\nmodels = ["extractive"]\n'
                    'templates = ["default", "lean-facts"]\n', encoding="utf-8")
    args = ["run", str(spec), "--out", str(tmp_path / "run"), "--no-progress"]
    first = CliRunner().invoke(cli, args)
    again = CliRunner().invoke(cli, args)

    assert (first.exit_code, again.exit_code) == (0, 0), again.output
    head, rest = again.output.split("\n", 1)
    assert re.fullmatch(rf"nothing to run: {re.escape(str(tmp_path / 'run'))} already holds all "
                        r"4 cells \(finished \d{4}-\d\d-\d\d \d\d:\d\d UTC\)",
                        head), head
    assert rest == first.output
    assert rest.count("Errors and failures") == 1 and rest.count("Recommendation: ") == 1


def test_a_provider_that_answers_503_is_named_by_host_and_status(
        tmp_path: Path, server: ProviderServer) -> None:
    server.status_for = {"busy": 503}
    spec = write_spec(tmp_path, server.base(), model="openai/busy")
    result = CliRunner().invoke(cli, ["run", str(spec), "--out", str(tmp_path / "run"),
                                      "--no-progress"])
    assert result.exit_code == 3, result.output
    assert ("6 x network / server error (error): network or 5xx errors from the provider "
            "outlasted the retries\n    openai/busy: server or connection error (host "
            f"127.0.0.1:{server.port}, HTTP 503)\n") in result.output
    assert KEY not in result.output


def test_a_server_that_is_not_there_is_named_by_host_and_why_no_answer_came(
        tmp_path: Path) -> None:
    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    spec = write_spec(tmp_path, f"http://127.0.0.1:{port}/v1")
    result = CliRunner().invoke(cli, ["run", str(spec), "--out", str(tmp_path / "run"),
                                      "--no-progress"])
    assert result.exit_code == 3, result.output
    assert (f"    openai/served: server or connection error (host 127.0.0.1:{port}, no "
            "response: connection refused)\n") in result.output


def test_the_exit_codes_are_listed_in_workbench_help() -> None:
    result = CliRunner().invoke(cli, ["--help"])
    assert result.exit_code == 0
    help_text = result.output
    assert "Exit codes:" in help_text
    for code, text in EXIT_CODES:
        first_words = " ".join(text.split()[:4])
        assert re.search(rf"^ +{code} +{re.escape(first_words)}", help_text, re.M), (code, text)


def test_the_resume_command_drops_new_and_names_the_folder_the_run_went_to() -> None:
    from workbench.cli._stops import resume_command

    runs = Path("runs")
    assert resume_command(["run", "--limit", "3"], runs / "default", runs / "default") == (
        "workbench run --limit 3")
    assert resume_command(["run", "--new", "--set", "concurrency=2"], runs / "default-2",
                          runs / "default") == (
        "workbench run --set concurrency=2 --out runs/default-2")
    assert resume_command(["run", "my exp.toml", "--out=runs/x", "--new", "--wide"],
                          runs / "x-2", runs / "exp") == (
        "workbench run 'my exp.toml' --out runs/x-2 --wide")
