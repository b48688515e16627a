"""The render process: every template runs there, so the workbench can stop it whatever it does.

A render past its time limit is stopped (tests/hardening/test_bounded_render.py says how it
reads); these say what becomes of the process itself: one that died while idle is replaced,
one stopped mid-render is never handed out again, and a render waited for on a loop thread
while the loop's own render holds the process does not wait for it.
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import threading

import pytest

from workbench.compaction import RenderLimits, _sandbox, render
from workbench.compaction._templates import render_async
from workbench.errors import TemplateError

SLOW = "{% for a in range(9999) %}{% for b in range(9999) %}{% endfor %}{% endfor %}done"


def _idle_pids() -> list[int]:
    return [w.process.pid for w in _sandbox._POOL.idle]


def test_a_render_process_that_died_while_idle_is_replaced() -> None:
    assert render("{{ x }}", {"x": "before"}) == "before"
    (pid,) = _idle_pids()
    os.kill(pid, signal.SIGKILL)  # gone while idle: found out when next asked, and replaced
    assert render("{{ x }}", {"x": "after"}) == "after"
    assert _idle_pids() != [pid]


def test_a_render_stopped_at_its_time_limit_leaves_a_fresh_process() -> None:
    render("{{ 1 }}", {})
    (before,) = _idle_pids()
    with pytest.raises(TemplateError, match="render time limit of 0.3 s exceeded"):
        render(SLOW, {}, "slow.md", RenderLimits(time_limit=0.3))
    assert before not in _idle_pids()  # killed, not handed out again
    assert render("{{ 2 }}", {}) == "2"


def test_a_cancelled_render_kills_its_process_at_once() -> None:
    async def main() -> None:
        task = asyncio.create_task(render_async(SLOW, {}, "slow.md", RenderLimits(time_limit=60)))
        await asyncio.sleep(0.3)  # the render is under way
        task.cancel()  # what Ctrl-C does to a run
        with pytest.raises(asyncio.CancelledError):
            await task
        assert await render_async("{{ 3 }}", {}) == "3"

    render("{{ 0 }}", {})
    (before,) = _idle_pids()
    asyncio.run(main())
    assert before not in _idle_pids()


def test_a_synchronous_render_on_the_loop_never_waits_for_the_loops_own_render() -> None:
    async def main() -> str:
        held = asyncio.create_task(render_async(SLOW, {}, "slow.md", RenderLimits(time_limit=2)))
        await asyncio.sleep(0.2)  # the loop's render holds the pool's process
        text = render("{{ 4 }}", {})  # blocks the loop: it must not wait for that render
        with pytest.raises(TemplateError):
            await held
        return text

    assert asyncio.run(main()) == "4"


def test_the_render_process_sees_no_credentials_in_its_environment(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-should-not-reach-templates")
    monkeypatch.setenv("RAY_ADDRESS", "127.0.0.1:1")
    _sandbox.shutdown()  # the next render starts a process with this environment
    assert render("{{ 5 }}", {}) == "5"
    (pid,) = _idle_pids()
    environ = open(f"/proc/{pid}/environ", "rb").read().split(b"\0") \
        if os.path.exists(f"/proc/{pid}/environ") else pytest.skip("reads /proc (Linux)")
    names = {entry.split(b"=", 1)[0] for entry in environ if entry}
    assert b"PATH" in names
    assert b"OPENAI_API_KEY" not in names and b"RAY_ADDRESS" not in names


def test_the_render_process_is_stopped_when_the_interpreter_exits() -> None:
    """A process that rendered exits without leaving its render process running (which the
    interpreter would report as a ResourceWarning at the end of every session)."""
    program = ("from workbench.compaction import _sandbox\n"
               "from workbench.compaction._limits import RenderLimits\n"
               "print(_sandbox.call('render', 'hi {{ x }}', {'x': 1}, 't.md', RenderLimits()))\n")
    done = subprocess.run([sys.executable, "-X", "dev", "-c", program], capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout == "hi 1\n"
    assert "ResourceWarning" not in done.stderr, done.stderr


def test_a_render_process_started_from_a_passing_thread_outlives_the_thread() -> None:
    """It dies with the workbench (a parent-death signal), and that signal follows the thread
    that started it: a notebook's run thread ending must not take it along."""
    _sandbox.shutdown()
    thread = threading.Thread(target=render, args=("{{ x }}", {"x": "in a thread"}))
    thread.start()
    thread.join()
    (pid,) = _idle_pids()
    assert render("{{ x }}", {"x": "after it ended"}) == "after it ended"
    assert _idle_pids() == [pid]  # the same process answered: not killed, not replaced
