"""One render process (`workbench.compaction._sandbox` lends them out): a plain ``python``
child running `workbench.compaction._sandbox_env.serve`, its two pipes, and how it is started
without the workbench's credentials (from the thread it dies with: `_lifeline`) and stopped."""

from __future__ import annotations

import os
import subprocess
import sys
from multiprocessing.connection import Connection
from pathlib import Path

from workbench.compaction._lifeline import spawn
from workbench.compaction._limits import render_memory_limit

__all__ = ["Worker"]

SERVE = ("import sys; sys.path.insert(0, {root!r}); "
         "from workbench.compaction._sandbox_env import serve; "
         "serve({fd_in}, {fd_out}, {memory}, {parent})")
"""The render process's program (``python -c``)."""

PRIVATE_WORDS = ("KEY", "TOKEN", "SECRET", "PASSWORD", "CREDENTIAL")
"""Environment variables whose names hold these are kept from the render process."""


def _private(name: str) -> bool:
    """An environment variable the render process must not see: a credential, or a Ray
    cluster's setting (the render process belongs to no cluster)."""
    upper = name.upper()
    return upper.startswith("RAY_") or any(w in upper for w in PRIVATE_WORDS)


class Worker:
    """One render process and its two pipes."""

    def __init__(self) -> None:
        req_read, req_write = os.pipe()
        resp_read, resp_write = os.pipe()
        env = {k: v for k, v in os.environ.items() if not _private(k)}
        root = str(Path(__file__).resolve().parents[2])  # this workbench, wherever it is
        program = SERVE.format(fd_in=req_read, fd_out=resp_write, memory=render_memory_limit(),
                               parent=os.getpid(), root=root)

        def start() -> subprocess.Popen[bytes]:
            try:
                return subprocess.Popen(
                    [sys.executable, "-c", program], pass_fds=(req_read, resp_write), env=env,
                    stdin=subprocess.DEVNULL, close_fds=True)
            finally:
                os.close(req_read)
                os.close(resp_write)

        self.process = spawn(start)  # from the thread it dies with (`_lifeline`)
        self.requests = Connection(req_write, readable=False)
        self.replies = Connection(resp_read, writable=False)
        try:
            reply = self.replies.recv()  # ("ready",) once it has imported the sandbox
        except EOFError:
            self.kill()
            raise RuntimeError(f"the render process did not start (exit code "
                               f"{self.process.returncode}; its error is above)") from None
        if reply != ("ready",):  # pragma: no cover - the program above sends nothing else
            raise RuntimeError(f"render process said {reply!r}")

    def kill(self) -> None:
        """Stop it now (a render past its deadline, Ctrl-C) and reap it."""
        if self.process.poll() is None:
            self.process.kill()
        for end in (self.requests, self.replies):
            end.close()
        self.process.wait()
