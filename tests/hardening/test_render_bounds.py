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
from workbench.cli._exit_codes import EXIT_INTERRUPTED

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
    child, render = _stuck_in_a_render(tmp_path)
    try:
        child.send_signal(signal.SIGINT)
        # The render alone would walk 2**64 items under a 600 s limit: only the Ctrl-C can end
        # the run before this wait gives up (the bound is for a loaded machine).
        _, err = child.communicate(timeout=60)
    finally:
        _kill(child)
    assert child.returncode == EXIT_INTERRUPTED, err.decode()[-2000:]
    assert _state(render) is None  # killed and reaped by the run on its way out


def test_a_run_killed_outright_in_a_render_takes_its_render_process_along(
        tmp_path: Path) -> None:
    child, render = _stuck_in_a_render(tmp_path)
    try:
        child.send_signal(signal.SIGKILL)  # no handler runs: only the kernel can stop the render
    finally:
        _kill(child)  # the render process held the run's output pipes: this returns once it died
    deadline = time.monotonic() + 30  # a kernel's SIGKILL ends it at once; the bound is for load
    while _state(render) not in (None, "Z") and time.monotonic() < deadline:
        time.sleep(0.05)
    assert _state(render) in (None, "Z"), f"the render process {render} runs on, orphaned"


def _stuck_in_a_render(folder: Path) -> tuple[subprocess.Popen[bytes], int]:
    """A ``workbench run`` and its render process, busy in a walk of 2**64 items: past its
    compile (a second of CPU time; compiling takes milliseconds), inside one C call."""
    spec, out = _setup(folder, {"compared": WALKS["compared"]}), folder / "run"
    env = {**_env(), "WORKBENCH_RENDER_TIME_LIMIT": "600"}
    # SIGINT as a terminal gives it: a background job may have inherited it ignored
    child = subprocess.Popen([sys.executable, "-m", "workbench", "run", str(spec), "--out",
                              str(out), "--no-progress"], cwd=ROOT, env=env,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            busy = [p for p in _children(child.pid) if _cpu_seconds(p) >= 1.0]
            if busy:
                return child, busy[0]
            time.sleep(0.1)
        raise AssertionError("the render never started")
    except BaseException:
        _kill(child)
        raise


def _kill(child: subprocess.Popen[bytes]) -> None:
    """Kill `child` if it still runs and collect its output, waiting a bounded time: a process
    it left behind holding its pipes fails the test, never hangs it."""
    if child.poll() is None:
        child.kill()
    try:
        child.communicate(timeout=30)
    except subprocess.TimeoutExpired:
        raise AssertionError(
            f"the killed run {child.pid} left a process holding its output pipes (an orphaned "
            "render process?); it is still running") from None


def _children(pid: int) -> list[int]:
    """The processes `pid` started."""
    return [int(e) for e in os.listdir("/proc") if e.isdigit() and _parent(int(e)) == pid]


def _parent(pid: int) -> int | None:
    fields = _stat(pid)
    return int(fields[1]) if fields else None


def _state(pid: int) -> str | None:
    fields = _stat(pid)
    return fields[0] if fields else None


def _cpu_seconds(pid: int) -> float:
    fields = _stat(pid)
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK") if fields else 0.0


def _stat(pid: int) -> list[str]:
    """The fields of ``/proc/PID/stat`` after the name (state first), or [] when it is gone."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return []
