"""Headless Chromium for the report tests: a ``Browser`` driven over the DevTools protocol, and where to find one."""

from __future__ import annotations

import base64
import contextlib
import fcntl
import json
import os
import select
import shutil
import subprocess
import time
from pathlib import Path
from typing import Any


def chromium() -> str | None:
    for name in (os.environ.get("VISION_EVAL_CHROMIUM"), "chromium", "chromium-browser", "google-chrome", "chrome"):
        if name and shutil.which(name):
            return shutil.which(name)
    return None


class Browser:
    """Headless Chromium driven over the DevTools protocol on a pipe (fd 3 in, fd 4 out): no extra package."""

    def __init__(self, binary: str, profile: Path) -> None:
        to_chrome_r, self._to_chrome = os.pipe()
        self._from_chrome, from_chrome_w = os.pipe()
        # High copies, so that placing them on fds 3 and 4 in the child cannot clobber one another.
        child_r, child_w = fcntl.fcntl(to_chrome_r, fcntl.F_DUPFD, 20), fcntl.fcntl(from_chrome_w, fcntl.F_DUPFD, 20)

        def place_fds() -> None:
            os.dup2(child_r, 3)
            os.dup2(child_w, 4)

        flags = [
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--disable-extensions",
            "--remote-debugging-pipe",
            f"--user-data-dir={profile}",
            "about:blank",
        ]
        self.proc = subprocess.Popen(
            [binary, *flags],
            pass_fds=(3, 4),
            preexec_fn=place_fds,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        for fd in (to_chrome_r, from_chrome_w, child_r, child_w):
            os.close(fd)
        self._buffer = b""
        self._next = 0
        self.events: list[dict[str, Any]] = []
        pages = [t for t in self.send("Target.getTargets")["targetInfos"] if t["type"] == "page"]
        target = pages[0]["targetId"] if pages else self.send("Target.createTarget", {"url": "about:blank"})["targetId"]
        self.session = self.send("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
        self.send(
            "Emulation.setDeviceMetricsOverride",
            {"width": 1280, "height": 1600, "deviceScaleFactor": 1, "mobile": False},
            session=True,
        )

    def _message(self, deadline: float) -> dict[str, Any]:
        while b"\0" not in self._buffer:
            ready, _, _ = select.select([self._from_chrome], [], [], max(0.0, deadline - time.monotonic()))
            chunk = os.read(self._from_chrome, 1 << 20) if ready else b""
            if not chunk:
                raise TimeoutError("no answer from chromium")
            self._buffer += chunk
        raw, self._buffer = self._buffer.split(b"\0", 1)
        return json.loads(raw)

    def send(self, method: str, params: dict[str, Any] | None = None, session: bool = False) -> dict[str, Any]:
        self._next += 1
        message: dict[str, Any] = {"id": self._next, "method": method, "params": params or {}}
        if session:
            message["sessionId"] = self.session
        os.write(self._to_chrome, json.dumps(message).encode() + b"\0")
        deadline = time.monotonic() + 30
        while True:
            reply = self._message(deadline)
            if reply.get("id") == self._next:
                if "error" in reply:
                    raise RuntimeError(f"{method}: {reply['error']}")
                return reply["result"]
            self.events.append(reply)

    def open(self, url: str) -> None:
        """Load ``url`` afresh (a hash-only change would otherwise be a same-document navigation)."""
        self.send("Page.navigate", {"url": "about:blank"}, session=True)
        self.send("Page.navigate", {"url": url}, session=True)
        base = url.split("#", 1)[0]  # the page may rewrite its hash (it keeps the filters there)
        check = f"location.href.split('#')[0] === {json.dumps(base)} && document.readyState === 'complete'"
        deadline = time.monotonic() + 30
        while not self.js(check):
            if time.monotonic() > deadline:
                raise TimeoutError(f"{url} did not load")
            time.sleep(0.02)

    def js(self, expression: str) -> Any:
        reply = self.send("Runtime.evaluate", {"expression": expression, "returnByValue": True}, session=True)
        if "exceptionDetails" in reply:
            raise RuntimeError(f"{expression}: {reply['exceptionDetails']}")
        return reply["result"].get("value")

    def screenshot(self, path: Path) -> Path:
        data = self.send("Page.captureScreenshot", {"format": "png"}, session=True)["data"]
        path.write_bytes(base64.b64decode(data))
        return path

    def close(self) -> None:
        with contextlib.suppress(OSError, RuntimeError, TimeoutError):
            self.send("Browser.close")
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
        os.close(self._to_chrome)
        os.close(self._from_chrome)
