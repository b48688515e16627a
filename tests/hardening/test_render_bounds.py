"""Every render bounded in time and memory, whatever it calls (issue 34, item 2).

A render that runs inside one call (a Jinja global such as ``lipsum``) or in C (comparing,
printing, joining, serialising or hashing lists that hold themselves twice over, 2**64 items
when walked) used to ignore the render time limit and hang the whole run. Each is a real
``workbench run`` subprocess here: the variant becomes its own error rows naming the limit, the
good variant's cells are ``ok``, and Ctrl-C stops a run stuck in such a render at once.
"""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

from tests.conftest import ROOT
from tests.hardening._sessions import write_session
from tests.hardening._variants import DOUBLED, MEMORY_BOMB, write_variant_spec

TIME_LIMIT = 2
WALKS = {
    "compared": DOUBLED + "{{ messages }}{{ n.a == n.b }}",
    "stringified": DOUBLED + "{{ messages }}{{ n.a|string|length }}",
    "joined": DOUBLED + "{{ messages }}{{ n.a|join(',')|length }}",
    "serialised": DOUBLED + "{{ messages }}{{ n.a|tojson|length }}",
    "hashed": DOUBLED.replace("[n.a, n.a]", "(n.a, n.a)").replace("a=[1]", "a=(1,)")
    + "{{ messages }}{{ [n.a]|unique|list|length }}",
    "global": "{{ messages }}{{ lipsum(n=1000000)|length }}",
}
def _setup(folder: Path, variants: dict[str, str]) -> Path:
    write_session(folder, "s1")
    return write_variant_spec(folder, "bounds", ["s1.json"], variants)


def _env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(ROOT), "WORKBENCH_RENDER_TIME_LIMIT": str(TIME_LIMIT)}


def test_renders_that_walk_self_referencing_lists_or_call_a_global_stop_at_the_time_limit(
        tmp_path: Path) -> None:
    spec, out = _setup(tmp_path, WALKS), tmp_path / "run"
    done = subprocess.run([sys.executable, "-m", "workbench", "run", str(spec), "--out",
                           str(out), "--no-progress"], cwd=ROOT, env=_env(),
                          capture_output=True, timeout=600)
    assert done.returncode == 3, done.stderr.decode()[-3000:]
    assert b"Traceback" not in done.stderr
    db = sqlite3.connect(out / "results.sqlite")
    rows = dict((t, (s, k, m)) for t, s, k, m in db.execute(
        "SELECT template, status, error_type, error_message FROM cells"))
    db.close()
    assert rows["default"][:2] == ("ok", None)
    for name in WALKS:
        status, kind, message = rows[name]
        assert (status, kind) == ("error", "TemplateError"), (name, message)
        assert message.startswith(f"template '{name}/compaction.md': stopped: "), message
        assert (f"render time limit of {TIME_LIMIT} s exceeded" in message
                or "ran out of memory" in message
                or "items when walked (a list that holds its own parts many times over); the "
                   "limit is 1,000,000 items" in message), (name, message)
    # Walks that run in C are refused before they start, not left to the time limit.
    for name in ("stringified", "joined", "serialised", "hashed"):
        assert "holds more than 1,000,000 items when walked" in rows[name][2], rows[name]


def test_a_render_that_allocates_without_bound_stops_at_the_memory_cap_and_the_run_goes_on(
        tmp_path: Path) -> None:
    spec, out = _setup(tmp_path, {"memory": MEMORY_BOMB}), tmp_path / "run"
    env = {**_env(), "WORKBENCH_RENDER_TIME_LIMIT": "60", "WORKBENCH_RENDER_MEMORY_LIMIT": "512m"}
    done = subprocess.run([sys.executable, "-m", "workbench", "run", str(spec), "--out",
                           str(out), "--no-progress"], cwd=ROOT, env=env,
                          capture_output=True, timeout=600)
    assert done.returncode == 3, done.stderr.decode()[-3000:]
    db = sqlite3.connect(out / "results.sqlite")
    rows = dict((t, (s, m)) for t, s, m in db.execute(
        "SELECT template, status, error_message FROM cells"))
    db.close()
    assert rows["default"][0] == "ok"
    assert rows["memory"] == ("error", (
        "template 'memory/compaction.md': ran out of memory: the render process may use 512 MiB "
        "(set WORKBENCH_RENDER_MEMORY_LIMIT to change it); simplify the template"))


def test_ctrl_c_stops_a_run_stuck_in_a_render_at_once(tmp_path: Path) -> None:
    spec, out = _setup(tmp_path, {"compared": WALKS["compared"]}), tmp_path / "run"
    env = {**_env(), "WORKBENCH_RENDER_TIME_LIMIT": "600"}
    child = subprocess.Popen([sys.executable, "-m", "workbench", "run", str(spec), "--out",
                              str(out), "--no-progress"], cwd=ROOT, env=env,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and not _rendering(child.pid):
            time.sleep(0.1)
        assert _rendering(child.pid), "the render never started"
        child.send_signal(signal.SIGINT)
        stopped = time.monotonic()
        child.communicate(timeout=30)
        waited = time.monotonic() - stopped
    finally:
        if child.poll() is None:
            child.kill()
            child.communicate()
    assert child.returncode != 0
    assert waited < 10, f"Ctrl-C took {waited:.1f} s"
    assert not _rendering(child.pid)


def _rendering(pid: int) -> bool:
    """True while a process started by `pid` (the render process) is busy on a CPU."""
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            fields = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid and fields[0] == "R":
            return True
    return False
