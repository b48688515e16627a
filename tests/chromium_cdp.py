"""Drive headless Chromium over the DevTools protocol on a pipe, with the standard library only.

``chromium --remote-debugging-pipe`` reads protocol commands from file descriptor 3 and writes
replies and events to descriptor 4, each message a JSON object ended by a NUL byte. `Browser`
opens one page, collects console errors and uncaught exceptions, evaluates script (awaiting
promises), and takes screenshots.
"""

from __future__ import annotations

import base64
import fcntl
import json
import os
import select
import shutil
import subprocess
import time
from pathlib import Path
from typing import Any

CANDIDATES = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")


def find_chromium() -> str | None:
    """The first Chromium binary on PATH, or None."""
    for name in CANDIDATES:
        path = shutil.which(name)
        if path:
            return path
    return None


class BrowserError(RuntimeError):
    """The browser answered a command with an error, or did not answer in time."""


class Browser:
    """One headless Chromium with one page, sized `width` x `height` CSS pixels.

    Args:
        binary: The Chromium executable.
        profile: An empty folder for the browser profile.
        width: Viewport width.
        height: Viewport height.
    """

    def __init__(self, binary: str, profile: Path, width: int = 1400, height: int = 900) -> None:
        to_browser_r, self._to_browser = os.pipe()
        self._from_browser, from_browser_w = os.pipe()

        def wire_fds() -> None:  # runs in the child between fork and exec
            r = fcntl.fcntl(to_browser_r, fcntl.F_DUPFD_CLOEXEC, 10)
            w = fcntl.fcntl(from_browser_w, fcntl.F_DUPFD_CLOEXEC, 10)
            os.dup2(r, 3)
            os.dup2(w, 4)

        self.proc = subprocess.Popen(
            [binary, "--headless", "--no-sandbox", "--disable-gpu", "--remote-debugging-pipe",
             "--no-first-run", "--no-default-browser-check", "--disable-extensions",
             "--disable-background-networking", "--disable-dev-shm-usage",
             f"--user-data-dir={profile}",
             f"--window-size={width},{height}", "about:blank"],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            close_fds=False, preexec_fn=wire_fds)
        os.close(to_browser_r)
        os.close(from_browser_w)
        self._buffer = b""
        self._next_id = 0
        self.events: list[dict[str, Any]] = []
        target = self.send("Target.createTarget", url="about:blank")["targetId"]
        self.session = self.send("Target.attachToTarget", targetId=target,
                                 flatten=True)["sessionId"]
        for method in ("Runtime.enable", "Log.enable", "Page.enable"):
            self.send(method, session=True)
        self.send("Emulation.setDeviceMetricsOverride", session=True, width=width,
                  height=height, deviceScaleFactor=1, mobile=False)

    # ---- protocol ------------------------------------------------------------------------------

    def _read_message(self, deadline: float) -> dict[str, Any]:
        while b"\0" not in self._buffer:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([self._from_browser], [], [], left)[0]:
                raise BrowserError("no message from the browser in time")
            data = os.read(self._from_browser, 1 << 20)
            if not data:
                raise BrowserError("the browser closed its pipe")
            self._buffer += data
        raw, self._buffer = self._buffer.split(b"\0", 1)
        return json.loads(raw)

    def send(self, method: str, *, session: bool = False, timeout: float = 30.0,
             **params: Any) -> dict[str, Any]:
        """Send one command and wait for its result (events met meanwhile are kept)."""
        self._next_id += 1
        message: dict[str, Any] = {"id": self._next_id, "method": method, "params": params}
        if session:
            message["sessionId"] = self.session
        os.write(self._to_browser, json.dumps(message).encode() + b"\0")
        deadline = time.monotonic() + timeout
        while True:
            got = self._read_message(deadline)
            if got.get("id") == self._next_id:
                if "error" in got:
                    raise BrowserError(f"{method}: {got['error']}")
                return got.get("result", {})
            if "method" in got:
                self.events.append(got)

    def wait_event(self, method: str, timeout: float = 30.0) -> dict[str, Any]:
        """Wait for the next event named `method` (one already received counts)."""
        for i, event in enumerate(self.events):
            if event["method"] == method:
                return self.events.pop(i)
        deadline = time.monotonic() + timeout
        while True:
            got = self._read_message(deadline)
            if got.get("method") == method:
                return got
            if "method" in got:
                self.events.append(got)

    # ---- page ----------------------------------------------------------------------------------

    def open(self, path: Path) -> None:
        """Load a local file and wait for its load event."""
        self.events = []  # console errors are counted per page load
        self.send("Page.navigate", session=True, url=path.resolve().as_uri())
        self.wait_event("Page.loadEventFired")

    def eval(self, expression: str, timeout: float = 30.0) -> Any:
        """Evaluate `expression` in the page (promises awaited) and return its JSON value."""
        got = self.send("Runtime.evaluate", session=True, timeout=timeout, expression=expression,
                        awaitPromise=True, returnByValue=True)
        if "exceptionDetails" in got:
            raise BrowserError(f"script failed: {got['exceptionDetails']}")
        return got["result"].get("value")

    def screenshot(self, path: Path, full_page: bool = False) -> Path:
        """Save a PNG of the viewport (or of the whole page)."""
        shot = self.send("Page.captureScreenshot", session=True, format="png",
                         captureBeyondViewport=full_page)
        path.write_bytes(base64.b64decode(shot["data"]))
        return path

    def console_errors(self) -> list[str]:
        """Console errors, uncaught exceptions and error log entries seen so far."""
        out = []
        for event in self.events:
            method, params = event["method"], event.get("params", {})
            if method == "Runtime.consoleAPICalled" and params.get("type") in ("error", "assert"):
                out.append(" ".join(str(a.get("value", a.get("description")))
                                    for a in params.get("args", [])))
            elif method == "Runtime.exceptionThrown":
                details = params.get("exceptionDetails", {})
                out.append(str(details.get("exception", {}).get("description")
                               or details.get("text")))
            elif method == "Log.entryAdded" and params.get("entry", {}).get("level") == "error":
                out.append(str(params["entry"].get("text")))
        return out

    def close(self) -> None:
        """Ask the browser to quit, then make sure it has."""
        try:
            self.send("Browser.close", timeout=5)
        except (BrowserError, OSError):
            pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        for fd in (self._to_browser, self._from_browser):
            try:
                os.close(fd)
            except OSError:
                pass
