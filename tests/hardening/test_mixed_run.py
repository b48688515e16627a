"""A run mixing a good variant, hostile variants and an unreadable session finishes in bounded
time and memory: the good cells are ``ok``, the others error rows naming their cause.

The run is a real ``workbench run`` subprocess started by a small wrapper that reports the
child's peak resident memory (``ru_maxrss`` of its only child), so the figure is the run's own.
"""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

from tests.conftest import ROOT
from workbench.messages import Message
from workbench.sessions import Session

MAX_RESIDENT_KB = 1536 * 1024
"""1.5 GB: the ceiling the run's peak resident memory must stay under."""
MAX_SECONDS = 240
"""Generous for a loaded 2-core machine; unbounded templates took minutes or never ended."""
TIME_LIMIT = 3  # WORKBENCH_RENDER_TIME_LIMIT for the run: compiles and renders stop here

# variant folder -> (compaction.md, what its error rows say)
HOSTILE: dict[str, tuple[str, str]] = {
    # Constant folding would build 1 GB at load in a plain Jinja environment.
    "bomb-center": ("{{ 'x'|center(10**9) }}{{ messages }}",
                    "stopped: a filter width or count of 1,000,000,000 characters exceeds the "
                    "render output limit"),
    "bomb-literal": ("{{ 'x'|center(1000000000) }}", "a filter width or count of 1,000,000,000"),
    "bomb-power": ("{{ 9 ** (9 ** 9) }}", "'**' would build an integer of about"),
    "bomb-method": ("{{ 'x'.ljust(2000000000) }}", "a width or count passed to ljust of 2,000,000,000"),
    "bomb-replace": ("{% set s = 'ab' * 3000 %}{{ s|replace('', s) }}",
                     "the result of the replace filter of 36,012,000 characters"),
    "bomb-format": ("{{ '{:>900000000}'.format(1) }}", "the result of .format() of 900,000,0"),
    "nested-ifs": ("{% if messages %}" * 3000 + "x" + "{% endif %}" * 3000,
                   "stopped: nested 33 levels deep at line 1; the limit is 32 levels"),
    "slow-compile": ("{{ messages }} {% if x %}y{% endif %}\n" * 25_000,
                     f"stopped: render time limit of {TIME_LIMIT} s exceeded while compiling"),
}
WRAPPER = """
import resource, subprocess, sys
code = subprocess.run(sys.argv[1:]).returncode
print("MAXRSS_KB", resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, file=sys.stderr)
sys.exit(code)
"""


def _setup(folder: Path) -> Path:
    for sid in ("good1", "good2"):
        messages = [Message.user(f"fix the bug in app.py ({sid})"),
                    Message.assistant("looking").with_tool_request(
                        "t0", "shell", {"command": "cat app.py"}),
                    Message.user().with_tool_response("t0", "print(1)"),
                    Message.assistant("fixed it")]
        Session(sid, "goose-json", str(folder / f"{sid}.json"), messages).write_goose_json(
            folder / f"{sid}.json")
    first = {"type": "user", "sessionId": "s", "uuid": "u1", "parentUuid": None,
             "timestamp": "2025-01-01T00:00:00Z", "message": {"role": "user", "content": "hi"}}
    (folder / "broken.jsonl").write_text(
        json.dumps(first) + '\n{"type": "user", "n": ' + "9" * 5000 + "}\n", encoding="utf-8")
    for name, (source, _) in HOSTILE.items():
        (folder / name).mkdir()
        (folder / name / "compaction.md").write_text(source, encoding="utf-8")
    spec = folder / "spec.toml"
    templates = ["default", *HOSTILE]
    spec.write_text("\n".join([
        'name = "mixed"', 'sessions = ["good*.json", "broken.jsonl"]', 'models = ["extractive"]',
        "templates = " + json.dumps(templates)]), encoding="utf-8")
    return spec


def _run(spec: Path, out: Path, *extra: str) -> tuple[subprocess.CompletedProcess[bytes], int,
                                                      float]:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "WORKBENCH_RENDER_TIME_LIMIT": str(TIME_LIMIT)}
    started = time.monotonic()
    done = subprocess.run([sys.executable, "-c", WRAPPER, sys.executable, "-m", "workbench",
                           "run", str(spec), "--out", str(out), "--no-progress", *extra],
                          cwd=ROOT, env=env, capture_output=True, timeout=MAX_SECONDS * 2)
    elapsed = time.monotonic() - started
    peak = int(done.stderr.decode().rsplit("MAXRSS_KB", 1)[1].split()[0])
    return done, peak, elapsed


def test_good_cells_run_and_hostile_variants_and_an_unreadable_session_are_error_rows(
        tmp_path: Path) -> None:
    spec = _setup(tmp_path)
    out = tmp_path / "run"

    dry, dry_peak, _ = _run(spec, out, "--dry-run")
    assert dry.returncode == 0, dry.stderr.decode()[-3000:]
    printed = dry.stdout.decode()
    assert f"dry run: {3 * (1 + len(HOSTILE))} cells" in printed
    assert ("session file unreadable (9 cells will be error rows): "
            f"{tmp_path / 'broken.jsonl'}:2: invalid JSON: a number of 5,000 digits") in printed
    assert "variant does not compile (2 cells will be error rows): template " \
           "'nested-ifs/compaction.md': stopped: nested 33 levels deep" in printed
    assert dry_peak < MAX_RESIDENT_KB
    assert not out.exists()

    run, peak, elapsed = _run(spec, out)
    assert run.returncode == 3, run.stderr.decode()[-3000:]
    assert peak < MAX_RESIDENT_KB, f"peak resident memory {peak / 1024:.0f} MB"
    assert elapsed < MAX_SECONDS, f"{elapsed:.0f} s"

    db = sqlite3.connect(out / "results.sqlite")
    rows = db.execute("SELECT session_id, template, status, error_type, error_message "
                      "FROM cells").fetchall()
    assert len(rows) == 3 * (1 + len(HOSTILE))
    by = {(s, t): (st, et, msg) for s, t, st, et, msg in rows}
    for sid in ("good1", "good2"):
        assert by[(sid, "default")][:2] == ("ok", None)
        for name, (_, says) in HOSTILE.items():
            status, error_type, message = by[(sid, name)]
            assert (status, error_type) == ("error", "TemplateError"), (name, message)
            assert message.startswith(f"template '{name}/compaction.md': ") or \
                message.startswith("template 'compaction.md'"), message
            assert says in message, (name, message)
    unreadable = [r for r in rows if r[0] == "unreadable:broken.jsonl"]
    assert len(unreadable) == 1 + len(HOSTILE)
    assert {(r[2], r[3]) for r in unreadable} == {("error", "SessionFormatError")}
    assert all(r[4].startswith(f"{tmp_path / 'broken.jsonl'}:2: invalid JSON: a number of "
                               "5,000 digits") for r in unreadable)

    printed = run.stdout.decode()
    assert f"{1 + len(HOSTILE)} x unreadable session (error): a session file could not be " \
           "read: fix or remove the file" in printed
    assert f"    {tmp_path / 'broken.jsonl'}:2: invalid JSON: a number of 5,000 digits" in printed
    assert f"{2 * len(HOSTILE)} x template error (error): a template failed to compile or " \
           "render" in printed
    assert "Traceback" not in run.stderr.decode()

    # Resuming changes nothing; once the file is fixed its placeholder rows give way.
    (tmp_path / "broken.jsonl").write_text(json.dumps(
        {"type": "user", "sessionId": "fixed", "uuid": "u1", "parentUuid": None,
         "timestamp": "2025-01-01T00:00:00Z", "message": {"role": "user", "content": "hi"}}) +
        "\n", encoding="utf-8")
    again, _, _ = _run(spec, out)
    assert again.returncode == 3  # the hostile variants still fail
    sessions = {r[0] for r in db.execute("SELECT session_id FROM cells")}
    assert sessions == {"good1", "good2", "fixed"}
