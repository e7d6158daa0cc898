#!/usr/bin/env python3
"""`sweep serve`'s page in headless Chromium (browser_check.py's DevTools pipe): the sweep's page
loads without a console error and asks for nothing but the server's own files; the validation
curve it draws is the database's (each variant's mean over its seeds at each token count); a
variant's checkbox hides its curves and the log axis changes the drawing (both seen in the
pixels); the Δ-loss chart draws the report's paired improvements; then, with the page open, `sweep run` trains a new variant and its runs appear, done,
without a reload, while every JSON route keeps answering.

Last, a run's page shows its log's markup as text (the script appended an <img onerror> to it).

usage: serve_check.py URL SWEEP DB SHOT_PREFIX RUN_ID -- COMMAND... (the sweep run that adds runs)"""
import base64
import json
import os
import sqlite3
import subprocess
import sys
import time
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from browser_check import Browser, png_pixels  # noqa: E402


def get(url):
    with urllib.request.urlopen(url, timeout=30) as r:
        return r.status, json.loads(r.read())


def main():
    split = sys.argv.index("--")
    base, sweep, db, shots, run = sys.argv[1:split]
    command = sys.argv[split + 1:]
    page = base + "sweeps/" + sweep
    browser = Browser()
    try:
        session = browser.open_page(page, ("Page", "Network", "Runtime", "Log"))

        def evaluate(expression, awaited=False):
            result = browser.call("Runtime.evaluate", session, expression=expression, returnByValue=True,
                                  awaitPromise=awaited)
            if "exceptionDetails" in result:
                raise AssertionError(f"{expression}: {result['exceptionDetails']}")
            return result["result"].get("value")

        def wait_for(expression, what, timeout=60):
            deadline = time.time() + timeout
            while time.time() < deadline:
                if evaluate(expression):
                    return
                time.sleep(0.2)
            raise AssertionError(f"timed out waiting for {what}")

        def shot(name):
            png = base64.b64decode(browser.call("Page.captureScreenshot", session, format="png")["data"])
            with open(f"{shots}-{name}.png", "wb") as f:
                f.write(png)
            return png_pixels(png)[3]

        wait_for("window.sweepView && window.sweepView.ready && window.sweepView.charts.curves", "the curves chart")
        loaded_at = evaluate("window.sweepView.loadedAt")
        rows = evaluate("Array.from(document.querySelectorAll('#ranking tbody tr')).map(r => r.dataset.variant)")
        assert rows and "base" in rows, f"no ranked table: {rows}"

        # The drawn validation curves against the database: per variant, the mean over its runs at
        # each token count (every point: a short run is not thinned).
        drawn = evaluate("(() => { const u = window.sweepView.charts.curves; const out = {};"
                         " u.series.forEach((s, i) => { if (i > 0 && !s.label.includes(' ')) out[s.label] ="
                         " u.data[0].map((x, k) => [x, u.data[i][k]]).filter(p => p[1] != null); }); return out; })()")
        con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
        for variant, points in drawn.items():
            want = con.execute(
                "SELECT m.tokens, AVG(m.loss) FROM metrics m JOIN sweep_runs s ON s.run_id = m.run_id "
                "WHERE s.sweep = ? AND s.variant = ? AND m.split = 'val' GROUP BY m.tokens ORDER BY m.tokens",
                (sweep, variant)).fetchall()
            assert len(want) == len(points), f"{variant}: drew {len(points)} points, the database has {len(want)}"
            for (x, y), (tokens, loss) in zip(points, want):
                assert x == tokens and abs(y - loss) < 1e-9, f"{variant}: drew ({x}, {y}), the database has ({tokens}, {loss})"
        con.close()
        assert len(drawn) >= 2, f"too few variants drawn: {list(drawn)}"

        # The Δ-loss chart draws the report's paired improvements (report.json's delta_curves, shared).
        wait_for("window.sweepView.charts.delta", "the Δ-loss chart")
        _, page_json = get(base + f"api/sweeps/{sweep}")
        deltas = evaluate("(() => { const u = window.sweepView.charts.delta; const out = {};"
                          " u.series.forEach((s, i) => { if (i > 0 && !s.label.includes(' CI ')) out[s.label] ="
                          " u.data[0].map((x, k) => [x, u.data[i][k]]).filter(p => p[1] != null); }); return out; })()")
        assert page_json["deltas"] and set(deltas) == {d["variant"] for d in page_json["deltas"]}, \
            f"Δ-loss chart: drew {list(deltas)}, the sweep has {[d['variant'] for d in page_json['deltas']]}"
        for d in page_json["deltas"]:
            want = [(p["tokens"], p["improvement"]) for p in d["points"] if p["improvement"] is not None]
            got = deltas[d["variant"]]
            assert want and len(got) == len(want) and all(x == t and abs(y - i) < 1e-12 for (x, y), (t, i) in zip(got, want)), \
                f"{d['variant']}: drew Δ {got}, the report has {want}"

        # Thinned on the server (10 buckets for 30 steps): each bucket of the mean training curve
        # keeps its lowest and its highest point, as the database gives them.
        con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
        _, thin = get(base + f"api/sweeps/{sweep}/curves?metric=train_loss&px=10")
        for v in thin["variants"]:
            full = con.execute(
                "SELECT m.tokens, AVG(m.loss) FROM metrics m JOIN sweep_runs s ON s.run_id = m.run_id "
                "WHERE s.sweep = ? AND s.variant = ? AND m.split = 'train' GROUP BY m.tokens ORDER BY m.tokens",
                (sweep, v["name"])).fetchall()
            assert len(full) > 22 and len(v["x"]) < len(full), f"{v['name']}: {len(v['x'])} of {len(full)} points: not thinned"
            kept = {x: y for x, y in zip(v["x"], v["mean"])}
            x0, span = full[0][0], full[-1][0] - full[0][0]
            for b in range(10):
                end = float("inf") if b == 9 else x0 + span * (b + 1) / 10
                start = -float("inf") if b == 0 else x0 + span * b / 10
                inner = [(x, y) for x, y in full[1:-1] if start <= x < end]
                if not inner:
                    continue
                for want in (min(inner, key=lambda p: p[1]), max(inner, key=lambda p: p[1])):
                    assert any(abs(kept.get(x, float("nan")) - want[1]) < 1e-9 for x, _ in inner), \
                        f"{v['name']}: bucket {b} lost its extreme {want}"
            assert full[0][0] in kept and full[-1][0] in kept, f"{v['name']}: an end was thinned away"
        con.close()

        # A variant's checkbox hides its curves; the log axis redraws them.
        before = shot("before")
        evaluate("document.querySelector('input[data-variant=\"base\"]').click()")
        wait_for("window.sweepView.charts.curves.series.find(s => s.label === 'base').show === false", "base hidden")
        time.sleep(0.3)
        hidden = shot("hidden")
        assert hidden != before, "hiding the baseline changed no pixel"
        evaluate("document.querySelector('input[data-variant=\"base\"]').click()")
        wait_for("window.sweepView.charts.curves.series.find(s => s.label === 'base').show === true", "base shown")
        evaluate("document.getElementById('logy').click()")
        wait_for("window.sweepView.charts.curves.scales.y.distr === 3", "a log y axis")
        time.sleep(0.3)
        assert shot("log") != before, "the log axis changed no pixel"

        # A zoomed chart keeps its window when the page refreshes with the same curves.
        evaluate("(() => { const u = window.sweepView.charts.curves, x = u.data[0];"
                 " u.setSelect({ left: 10, top: 10, width: 50, height: 50 }, true);"
                 " u.setScale('x', { min: x[1], max: x[x.length - 2] }); window.zoomedChart = u; })()")
        time.sleep(0.2)  # uPlot applies a scale at its next commit
        zoom = evaluate("(() => { const u = window.sweepView.charts.curves, x = u.data[0];"
                        " return [u.scales.x.min, u.scales.x.max, u.zoomed, x[1], x[x.length - 2]]; })()")
        assert zoom[2] is True, "a selection did not mark the chart zoomed"
        assert zoom[:2] == zoom[3:], f"the chart did not zoom: {zoom}"
        evaluate("window.sweepView.refresh()", awaited=True)
        kept = evaluate("(() => { const u = window.sweepView.charts.curves;"
                        " return [u === window.zoomedChart, u.scales.x.min, u.scales.x.max]; })()")
        assert kept == [True] + zoom[:2], f"the refresh lost the zoom: {zoom[:2]} became {kept}"

        # A log tokens axis: the first evaluation (0 tokens) has no place on it.
        evaluate("document.getElementById('logx').click()")
        wait_for("window.sweepView.charts.curves.scales.x.distr === 3", "a log tokens axis")
        assert evaluate("window.sweepView.charts.curves.data[0].every(x => x > 0)"), "a log axis was given 0 tokens"

        # Live: a new variant trains while the page is open; every route keeps answering meanwhile.
        known = set(evaluate("Array.from(document.querySelectorAll('#runs tbody tr')).map(r => r.dataset.run)"))
        child = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        answered = 0
        deadline = time.time() + 240
        while True:
            for route in ("api/version", "api/sweeps", f"api/sweeps/{sweep}",
                          f"api/sweeps/{sweep}/curves?metric=train_loss&seeds=1&px=300"):
                status, _ = get(base + route)
                assert status == 200, f"{route}: {status}"
                answered += 1
            done = evaluate("Array.from(document.querySelectorAll('#runs tbody tr'))"
                            ".filter(r => r.cells[3].textContent === 'done').map(r => r.dataset.run)")
            if set(done) - known and child.poll() is not None:
                break
            assert time.time() < deadline, "the new runs never showed as done on the page"
            time.sleep(0.5)
        assert child.wait() == 0, f"the sweep run beside the page failed: {child.stderr.read().decode()[-2000:]}"
        wait_for("Array.from(document.querySelectorAll('#runs tbody tr')).filter(r => r.cells[3].textContent === 'done')"
                 f".length === {len(known) + len(set(done) - known)}", "every run done on the page", 30)
        done = evaluate("Array.from(document.querySelectorAll('#runs tbody tr'))"
                        ".filter(r => r.cells[3].textContent === 'done').map(r => r.dataset.run)")
        assert evaluate("window.sweepView.loadedAt") == loaded_at, "the page was reloaded"
        refreshes = evaluate("window.sweepView.refreshes")
        assert refreshes > 0, "the page never refreshed"

        browser.call("Page.navigate", session, url=base + "runs/" + run)
        browser.wait_event("Page.loadEventFired")
        wait_for("window.sweepView && window.sweepView.ready", "the run's page")
        assert evaluate("document.getElementById('log').textContent.includes('<img src=x onerror=')"), "the log's markup is not shown"
        assert evaluate("document.querySelectorAll('#log *').length") == 0, "the log's markup became elements"
        assert evaluate("document.title") == "sweep", "a handler in the log ran"

        # the sweeps page: its table, and `sweep pool` over the sweeps (one sweep here: nothing pooled, said)
        browser.call("Page.navigate", session, url=base)
        browser.wait_event("Page.loadEventFired")
        wait_for("document.querySelector('#pool h2') !== null", "the sweeps page's section across settings")
        assert evaluate("document.getElementById('pool').textContent.includes('two or more settings')"), \
            evaluate("document.getElementById('pool').textContent")

        errors = [e for e in browser.events if e.get("method") == "Runtime.exceptionThrown" or
                  (e.get("method") == "Runtime.consoleAPICalled" and e["params"]["type"] == "error") or
                  (e.get("method") == "Log.entryAdded" and e["params"]["entry"]["level"] == "error")]
        assert not errors, f"console errors: {errors[:3]}"
        foreign = [u for u in browser.requested() if not u.startswith(base)]
        assert not foreign, f"the page requested {foreign}"
        print(f"serve_check: {len(drawn)} variants' curves equal the database; {len(set(done) - known)} new runs "
              f"shown done without a reload after {refreshes} refreshes; {answered} route answers during the run")
    finally:
        browser.close()


if __name__ == "__main__":
    main()
