"""Headless Chromium checks of a rendered page, with no dependency beyond the standard library.

Chromium is driven through its DevTools protocol over a pipe (``--remote-debugging-pipe``:
JSON messages separated by NUL bytes on file descriptors 3 and 4), so no websocket
client, no Playwright and no browser download are needed; only a Chromium binary
(Debian package ``chromium``, ``/usr/bin/chromium``; ``KERNELLAB_CHROMIUM`` overrides).

- ``check_page(html, width)``: load the file and report console errors, uncaught exceptions,
  failed or external requests, images that did not decode (naturalWidth 0) and the
  document's width (wider than the window: it scrolls sideways).
- ``screenshot(html, png, width=1280)``: a full-page PNG at that CSS width.

Chromium runs headless with a fresh profile, no sandbox (containers), no GPU, no
background networking, and every host name resolving to nothing, so a page cannot
reach the network even if it tried.
"""

from __future__ import annotations

import base64
import fcntl
import json
import os
import select
import shutil
import signal
import subprocess
import tempfile
import time
from pathlib import Path

DEFAULT_TIMEOUT = 60.0
FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-default-browser-check",
    "--disable-extensions",
    "--disable-default-apps",
    "--mute-audio",
    "--hide-scrollbars",
    "--disable-dev-shm-usage",
    "--host-resolver-rules=MAP * ~NOTFOUND , EXCLUDE localhost",
    "--remote-debugging-pipe",
]
# naturalWidth of every <img> once it has decoded (or failed to)
_IMAGES_JS = """
(async () => {
  const imgs = Array.from(document.images);
  await Promise.all(imgs.map(i => i.decode().catch(() => null)));
  return {count: imgs.length,
          broken: imgs.filter(i => !(i.complete && i.naturalWidth > 0))
                      .map(i => (i.alt || '') + ' [' + (i.currentSrc || i.src || '').slice(0, 60) + ']')};
})()
"""


class BrowserError(RuntimeError):
    pass


def find_chromium() -> str | None:
    env = os.environ.get("KERNELLAB_CHROMIUM")
    if env:
        return env if Path(env).is_file() else shutil.which(env)
    for name in (
        "/usr/bin/chromium",
        "chromium",
        "chromium-browser",
        "google-chrome",
        "google-chrome-stable",
    ):
        path = name if Path(name).is_file() else shutil.which(name)
        if path:
            return path
    return None


class _Chromium:
    """One headless Chromium and one page, spoken to over the DevTools pipe."""

    def __init__(self, exe: str | None = None, timeout: float = DEFAULT_TIMEOUT):
        exe = exe or find_chromium()
        if not exe:
            raise BrowserError("no Chromium found (install the Debian package 'chromium')")
        self.timeout = timeout
        self._profile = tempfile.TemporaryDirectory(prefix="kernellab-chromium-")
        to_child_r, to_child_w = os.pipe()
        from_child_r, from_child_w = os.pipe()
        # move the child's ends above 10 so that dup2 onto 3 and 4 cannot clobber them
        hi_r = fcntl.fcntl(to_child_r, fcntl.F_DUPFD_CLOEXEC, 10)
        hi_w = fcntl.fcntl(from_child_w, fcntl.F_DUPFD_CLOEXEC, 10)
        os.close(to_child_r)
        os.close(from_child_w)

        def child_fds():
            os.dup2(hi_r, 3)
            os.dup2(hi_w, 4)

        self._stderr = tempfile.TemporaryFile()
        try:
            # close_fds=False: it would close 3 and 4 after child_fds ran. Python's own
            # descriptors are close-on-exec (PEP 446), so the child gets only 0-4.
            self.proc = subprocess.Popen(
                [exe, *FLAGS, f"--user-data-dir={self._profile.name}", "about:blank"],
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=self._stderr,
                preexec_fn=child_fds,
                close_fds=False,
                start_new_session=True,  # its own process group: close() can end all of it
            )
        except BaseException:
            for fd in (to_child_w, from_child_r):
                os.close(fd)
            self._stderr.close()
            self._profile.cleanup()
            raise
        finally:
            os.close(hi_r)
            os.close(hi_w)
        self._w = to_child_w
        self._r = from_child_r
        self._buf = b""
        self._id = 0
        self.events: list[dict] = []
        self.session = ""

    # -------------------------------------------------------------- protocol
    def _send(self, method: str, params: dict | None = None, session: bool = True) -> int:
        self._id += 1
        msg = {"id": self._id, "method": method, "params": params or {}}
        if session and self.session:
            msg["sessionId"] = self.session
        data = json.dumps(msg).encode("utf-8") + b"\0"
        while data:
            n = os.write(self._w, data)
            data = data[n:]
        return self._id

    def _read_message(self, deadline: float) -> dict:
        while b"\0" not in self._buf:
            left = deadline - time.monotonic()
            if left <= 0:
                raise BrowserError(f"Chromium did not answer within {self.timeout:.0f} s")
            ready, _, _ = select.select([self._r], [], [], min(left, 1.0))
            if not ready:
                if self.proc.poll() is not None:
                    raise BrowserError(f"Chromium exited ({self.proc.returncode}): {self.stderr_tail()}")
                continue
            chunk = os.read(self._r, 1 << 20)
            if not chunk:
                raise BrowserError(f"Chromium closed the pipe: {self.stderr_tail()}")
            self._buf += chunk
        raw, self._buf = self._buf.split(b"\0", 1)
        return json.loads(raw.decode("utf-8"))

    def call(self, method: str, params: dict | None = None, session: bool = True) -> dict:
        mid = self._send(method, params, session)
        deadline = time.monotonic() + self.timeout
        while True:
            msg = self._read_message(deadline)
            if msg.get("id") == mid:
                if "error" in msg:
                    raise BrowserError(f"{method}: {msg['error']}")
                return msg.get("result", {})
            if "method" in msg:
                self.events.append(msg)

    def wait_event(self, method: str) -> dict:
        for i, ev in enumerate(self.events):
            if ev.get("method") == method:
                return self.events.pop(i)
        deadline = time.monotonic() + self.timeout
        while True:
            msg = self._read_message(deadline)
            if msg.get("method") == method:
                return msg
            if "method" in msg:
                self.events.append(msg)

    def stderr_tail(self) -> str:
        try:
            self._stderr.seek(0)
            return self._stderr.read().decode("utf-8", errors="replace")[-2000:]
        except (OSError, ValueError):
            return ""

    # -------------------------------------------------------------- page
    def open(self, html: Path, width: int, height: int = 900) -> None:
        target = self.call("Target.createTarget", {"url": "about:blank"}, session=False)["targetId"]
        self.session = self.call(
            "Target.attachToTarget", {"targetId": target, "flatten": True}, session=False
        )["sessionId"]
        for domain in ("Page", "Runtime", "Log", "Network"):
            self.call(f"{domain}.enable")
        self.call(
            "Emulation.setDeviceMetricsOverride",
            {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": False},
        )
        self.events.clear()
        self.call("Page.navigate", {"url": Path(html).resolve().as_uri()})
        self.wait_event("Page.loadEventFired")

    def evaluate(self, expression: str):
        res = self.call(
            "Runtime.evaluate", {"expression": expression, "awaitPromise": True, "returnByValue": True}
        )
        if "exceptionDetails" in res:
            raise BrowserError(f"evaluation failed: {res['exceptionDetails'].get('text')}")
        return res.get("result", {}).get("value")

    def close(self) -> None:
        try:
            if self.proc.poll() is None:
                try:
                    self.session = ""
                    self._send("Browser.close", session=False)
                    self.proc.wait(timeout=10)
                except (OSError, subprocess.TimeoutExpired):
                    try:
                        os.killpg(self.proc.pid, signal.SIGKILL)
                    except OSError:
                        self.proc.kill()
                    self.proc.wait(timeout=10)
        finally:
            for fd in (self._w, self._r):
                try:
                    os.close(fd)
                except OSError:
                    pass
            self._stderr.close()
            self._profile.cleanup()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def _problems(events: list[dict]) -> tuple[list[str], list[str]]:
    """(console errors, external or failed requests) from the page's events."""
    errors, requests = [], []
    for ev in events:
        m, p = ev.get("method"), ev.get("params", {})
        if m == "Runtime.consoleAPICalled" and p.get("type") in ("error", "assert"):
            args = " ".join(str(a.get("value", a.get("description", ""))) for a in p.get("args", []))
            errors.append(f"console.{p.get('type')}: {args}")
        elif m == "Runtime.exceptionThrown":
            d = p.get("exceptionDetails", {})
            errors.append(f"exception: {d.get('exception', {}).get('description') or d.get('text')}")
        elif m == "Log.entryAdded" and p.get("entry", {}).get("level") == "error":
            e = p["entry"]
            errors.append(f"{e.get('source', 'log')}: {e.get('text')} {e.get('url', '')}".strip())
        elif m == "Network.requestWillBeSent":
            url = p.get("request", {}).get("url", "")
            if not url.startswith(("file:", "data:", "about:")):
                requests.append(url)
        elif m == "Network.loadingFailed":
            errors.append(f"request failed: {p.get('errorText')} ({p.get('type', '')})")
    return errors, requests


def check_page(html: Path, width: int = 1280, timeout: float = DEFAULT_TIMEOUT) -> dict:
    """Load ``html`` in headless Chromium.

    Returns ``console_errors`` (console.error, uncaught exceptions, error log entries,
    failed loads), ``broken_images`` (an <img> with naturalWidth 0 after decoding),
    ``external_requests`` (anything not file:, data: or about:), ``images`` (count) and
    ``scroll_width`` (the document's width in CSS pixels: above ``width``, the page
    scrolls sideways at that width).
    """
    with _Chromium(timeout=timeout) as b:
        b.open(Path(html), width)
        info = b.evaluate(_IMAGES_JS) or {}
        scroll_width = int(b.evaluate("document.documentElement.scrollWidth") or 0)
        b.call("Runtime.evaluate", {"expression": "0"})  # let queued events arrive
        errors, requests = _problems(b.events)
    return {
        "console_errors": errors,
        "broken_images": list(info.get("broken", [])),
        "external_requests": requests,
        "images": int(info.get("count", 0)),
        "scroll_width": scroll_width,
    }


def screenshot(
    html: Path,
    png: Path,
    width: int = 1280,
    full_page: bool = True,
    max_height: int = 20000,
    timeout: float = DEFAULT_TIMEOUT,
) -> Path:
    """Write a PNG of ``html`` rendered ``width`` CSS pixels wide (the whole page, up to
    ``max_height`` pixels, when ``full_page``)."""
    with _Chromium(timeout=timeout) as b:
        b.open(Path(html), width)
        b.evaluate(_IMAGES_JS)
        height = 900
        if full_page:
            metrics = b.call("Page.getLayoutMetrics")
            size = metrics.get("cssContentSize") or metrics.get("contentSize") or {}
            height = max(1, min(int(size.get("height", 900)), max_height))
            b.call(
                "Emulation.setDeviceMetricsOverride",
                {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": False},
            )
        data = b.call(
            "Page.captureScreenshot",
            {
                "format": "png",
                "captureBeyondViewport": False,
                "clip": {"x": 0, "y": 0, "width": width, "height": height, "scale": 1},
            },
        )["data"]
    png = Path(png)
    png.parent.mkdir(parents=True, exist_ok=True)
    png.write_bytes(base64.b64decode(data))
    return png
