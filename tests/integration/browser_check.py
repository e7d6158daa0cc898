#!/usr/bin/env python3
"""Opens a report's index.html in headless Chromium, driven over the DevTools protocol on a pipe
(--remote-debugging-pipe: fd 3 in, fd 4 out, NUL-separated JSON; Python's standard library only).
Checks: the screenshot is not blank, a real mouse click on the 'improvement' header sorts the
table by improvement, the plots named render (drawn at a real size, with lines in them), and the
page requests nothing but itself.

usage: browser_check.py INDEX_HTML SCREENSHOT_PNG [PLOT_TITLE ...]"""
import base64
import json
import os
import shutil
import struct
import subprocess
import sys
import tempfile
import time
import zlib


class Browser:
    def __init__(self):
        self.profile = tempfile.mkdtemp(prefix="sweep-chromium-")
        to_browser_r, self.to_browser = os.pipe()
        self.from_browser, from_browser_w = os.pipe()

        def fds():  # the child's fd 3 reads our commands, its fd 4 writes the replies
            os.dup2(to_browser_r, 3)
            os.dup2(from_browser_w, 4)

        self.proc = subprocess.Popen(
            [shutil.which("chromium"), "--headless", "--no-sandbox", "--disable-gpu", "--remote-debugging-pipe",
             "--no-first-run", "--user-data-dir=" + self.profile, "--window-size=1280,2000"],
            # fds 3 and 4 listed too: subprocess closes every fd not in pass_fds after preexec_fn
            pass_fds=(3, 4, to_browser_r, from_browser_w), preexec_fn=fds,
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        os.close(to_browser_r)
        os.close(from_browser_w)
        self.next_id = 0
        self.buffer = b""
        self.events = []

    def _read_message(self, deadline):
        while b"\0" not in self.buffer:
            if time.time() > deadline:
                raise TimeoutError("no answer from chromium")
            chunk = os.read(self.from_browser, 1 << 16)
            if not chunk:
                raise RuntimeError("chromium closed the pipe")
            self.buffer += chunk
        message, self.buffer = self.buffer.split(b"\0", 1)
        return json.loads(message)

    def call(self, method, session=None, timeout=30, **params):
        self.next_id += 1
        message = {"id": self.next_id, "method": method, "params": params}
        if session:
            message["sessionId"] = session
        os.write(self.to_browser, json.dumps(message).encode() + b"\0")
        deadline = time.time() + timeout
        while True:
            reply = self._read_message(deadline)
            if reply.get("id") == self.next_id:
                if "error" in reply:
                    raise RuntimeError(f"{method}: {reply['error']}")
                return reply["result"]
            self.events.append(reply)

    def wait_event(self, name, timeout=30):
        deadline = time.time() + timeout
        while True:
            for i, e in enumerate(self.events):
                if e.get("method") == name:
                    return self.events.pop(i)
            self.events.append(self._read_message(deadline))

    def open_page(self, url, domains=("Page", "Network")):
        """A new tab at `url` with `domains` enabled, once its load event fired: its session id."""
        target = self.call("Target.createTarget", url="about:blank")["targetId"]
        session = self.call("Target.attachToTarget", targetId=target, flatten=True)["sessionId"]
        for domain in domains:
            self.call(domain + ".enable", session)
        self.call("Page.navigate", session, url=url)
        self.wait_event("Page.loadEventFired")
        return session

    def requested(self):
        """Every URL the pages asked for so far."""
        return [e["params"]["request"]["url"] for e in self.events if e.get("method") == "Network.requestWillBeSent"]

    def close(self):
        try:
            self.call("Browser.close", timeout=5)
        except Exception:
            pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
        shutil.rmtree(self.profile, ignore_errors=True)


def png_pixels(data):
    """(width, height, rows of RGB(A) bytes) of an 8-bit RGB or RGBA PNG."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    pos, idat, width = 8, b"", 0
    while pos < len(data):
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + length]
        if kind == b"IHDR":
            width, height, depth, colour = struct.unpack(">IIBB", body[:10])
            assert depth == 8 and colour in (2, 6), (depth, colour)
            channels = 3 if colour == 2 else 4
        elif kind == b"IDAT":
            idat += body
        pos += 12 + length
    raw = zlib.decompress(idat)
    stride = width * channels
    rows, previous = [], bytearray(stride)
    for y in range(height):
        kind, line = raw[y * (stride + 1)], bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for i in range(stride):
            left = line[i - channels] if i >= channels else 0
            up = previous[i]
            upleft = previous[i - channels] if i >= channels else 0
            if kind == 1:
                line[i] = (line[i] + left) & 255
            elif kind == 2:
                line[i] = (line[i] + up) & 255
            elif kind == 3:
                line[i] = (line[i] + (left + up) // 2) & 255
            elif kind == 4:
                p = left + up - upleft
                pa, pb, pc = abs(p - left), abs(p - up), abs(p - upleft)
                line[i] = (line[i] + (left if pa <= pb and pa <= pc else up if pb <= pc else upleft)) & 255
        rows.append(bytes(line))
        previous = line
    return width, height, channels, rows


def main():
    page, shot = os.path.abspath(sys.argv[1]), sys.argv[2]
    url = "file://" + page
    browser = Browser()
    try:
        session = browser.open_page(url)

        # Not blank: a real share of the pixels differs from the white background.
        png = base64.b64decode(browser.call("Page.captureScreenshot", session, format="png")["data"])
        with open(shot, "wb") as f:
            f.write(png)
        width, height, channels, rows = png_pixels(png)
        inked = sum(1 for row in rows[::4] for x in range(0, width * channels, 4 * channels)
                    if row[x:x + 3] != b"\xff\xff\xff")
        sampled = len(rows[::4]) * len(range(0, width * channels, 4 * channels))
        assert inked > 0.01 * sampled, f"the screenshot is blank: {inked} of {sampled} sampled pixels inked"

        def evaluate(expression):
            return browser.call("Runtime.evaluate", session, expression=expression, returnByValue=True)["result"]["value"]

        names = "Array.from(document.querySelectorAll('#ranking tbody tr')).map(r => r.cells[1].textContent)"
        before = evaluate(names)
        # Click the 'improvement' header where it is drawn, with real mouse events.
        box = evaluate("(() => { const th = Array.from(document.querySelectorAll('#ranking th'))"
                       ".find(h => h.textContent === 'improvement'); th.scrollIntoView();"
                       " const r = th.getBoundingClientRect(); return [r.x + r.width / 2, r.y + r.height / 2]; })()")
        for kind in ("mousePressed", "mouseReleased"):
            browser.call("Input.dispatchMouseEvent", session, type=kind, x=box[0], y=box[1], button="left",
                         clickCount=1)
        after = evaluate(names)
        keys = evaluate("Array.from(document.querySelectorAll('#ranking tbody tr'))"
                        ".map(r => parseFloat(r.cells[4].getAttribute('data-key')))")
        finite = [k for k in keys if k is not None and k == k]
        assert finite == sorted(finite), f"not sorted by improvement after the click: {keys}"
        assert after != before, f"the click did not reorder the table: {after}"
        assert evaluate("document.querySelectorAll('#ranking th')[4].getAttribute('aria-sort')") == "ascending"

        # Each plot named: its heading, then a figure whose SVG the browser lays out and draws.
        figures = evaluate("Object.fromEntries(Array.from(document.querySelectorAll('h2'))"
                           ".filter(h => h.nextElementSibling && h.nextElementSibling.tagName === 'FIGURE')"
                           ".map(h => { const svg = h.nextElementSibling.querySelector('svg');"
                           " const r = svg.getBoundingClientRect();"
                           " return [h.textContent, [r.width, r.height, svg.querySelectorAll('path').length]]; }))")
        for title in sys.argv[3:]:
            assert title in figures, f"no plot titled {title!r}: {list(figures)}"
            width, height, paths = figures[title]
            assert width > 300 and height > 150 and paths > 5, f"{title!r} is not drawn: {figures[title]}"

        foreign = [u for u in browser.requested() if u != url]
        assert not foreign, f"the page requested {foreign}"
        print(f"browser: {inked}/{sampled} sampled pixels inked; sorted by a click: {after}; plots drawn: "
              f"{[t for t in sys.argv[3:]]}")
    finally:
        browser.close()


if __name__ == "__main__":
    main()
