// sweep serve's page: reads the JSON routes of this server, draws the tables with DOM nodes
// (text only, never markup from the data) and the curves with uPlot, and follows the database:
// every 2 s it asks /api/version and, when the database changed, fetches the view again.
"use strict";

const view = window.sweepView = { charts: {}, version: null, loadedAt: Date.now(), refreshes: 0 };
const main = document.getElementById("main");

// ---- small helpers ----
function el(tag, attrs, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (k === "class") e.className = v;
    else if (k === "text") e.textContent = v;
    else if (k.startsWith("on")) e.addEventListener(k.slice(2), v);
    else e.setAttribute(k, v);
  }
  for (const c of children) if (c != null) e.append(c);
  return e;
}
async function api(path) {
  const r = await fetch(path, { cache: "no-store" });
  const body = await r.json().catch(() => ({ error: r.statusText }));
  if (!r.ok) throw new Error(body.error || r.statusText);
  return body;
}
function duration(s) {
  if (s == null) return "unknown";
  s = Math.round(s);
  const h = Math.floor(s / 3600), m = Math.floor(s / 60) % 60;
  return h ? `${h}h${String(m).padStart(2, "0")}m` : m ? `${m}m${String(s % 60).padStart(2, "0")}s` : `${s}s`;
}
function statesText(p) {
  return Object.entries(p.states).map(([k, n]) => `${n} ${k}`).join(", ") +
    (p.eta_seconds != null ? ` — about ${duration(p.eta_seconds)} to go` : "");
}
function rgba(hex, alpha) {
  const n = parseInt(hex.slice(1), 16);
  return `rgba(${n >> 16 & 255},${n >> 8 & 255},${n & 255},${alpha})`;
}
function crumbs(...parts) {
  const c = document.getElementById("crumbs");
  c.replaceChildren(...parts.flatMap(p => [" / ", p]));
}
function showError(e) {
  main.replaceChildren(el("p", { class: "error", text: e.message }));
}

// ---- the sweeps ----
async function sweepsPage() {
  const data = await api("/api/sweeps");
  view.version = data.version;
  crumbs(el("span", { text: data.results }));
  const rows = data.sweeps.map(s => el("tr", {},
    el("td", { class: "left" }, el("a", { href: "/sweeps/" + encodeURIComponent(s.name), text: s.name })),
    el("td", { class: "left", text: s.file }),
    el("td", { text: String(s.runs) }),
    el("td", { class: "left", text: statesText(s) }),
    el("td", { class: "left", text: s.codes.join("; ") || "-" })));
  main.replaceChildren(el("h1", { text: "Sweeps" }),
    data.sweeps.length ? el("table", { id: "sweeps" },
      el("thead", {}, el("tr", {}, ...["sweep", "file", "runs", "status", "trained by"].map(
        (h, i) => el("th", { class: i === 2 ? "" : "left", text: h })))),
      el("tbody", {}, ...rows)) : el("p", { class: "muted", text: "No sweep in this database yet." }));
  if (data.sweeps.length > 0) main.append(await poolSection());
}

// ---- across settings: `sweep pool` over every sweep (a ladder's rungs are settings each) ----
async function poolSection() {
  const pool = await api("/api/pool");
  const num = v => v == null ? "-" : (v >= 0 ? "+" : "") + v.toFixed(4);
  const range = (lo, hi) => lo == null ? "-" : `[${num(lo)}, ${num(hi)}]`;
  const section = el("section", { id: "pool" }, el("h2", { text: "Across settings" }));
  if (!pool.pooled.length) {
    section.append(el("p", { class: "muted", text: "No intervention is measured in two or more settings." }));
    return section;
  }
  section.append(el("p", { class: "muted", text: `${pool.metric}, pooled over ${pool.settings.length} settings ` +
    "(a ladder's rungs each one): random effects, Hartung–Knapp's interval, and the interval for a new setting." }));
  const headers = ["intervention", "settings", "pooled", "95% CI", "tau", "new setting: 95% PI", "verdict"];
  section.append(el("table", { id: "pooled" },
    el("thead", {}, el("tr", {}, ...headers.map((h, i) => el("th", { class: i === 0 || i === 6 ? "left" : "", text: h })))),
    el("tbody", {}, ...pool.pooled.map(p => el("tr", { title: p.why },
      el("td", { class: "left", text: p.intervention }),
      el("td", { text: String(p.k) }),
      el("td", { text: num(p.pooled) }),
      el("td", { text: range(p.ci_low, p.ci_high) }),
      el("td", { text: p.tau2 == null ? "-" : Math.sqrt(p.tau2).toFixed(4) }),
      el("td", { text: range(p.pi_low, p.pi_high) }),
      el("td", { class: "left", text: p.verdict }))))));
  return section;
}

// ---- one sweep ----
const metricLabels = { val_loss: "validation loss", train_loss: "training loss", grad_norm: "gradient norm",
  lr: "learning rate", tokens_per_s: "tokens/s", moe_load: "MoE load (busiest expert ÷ mean)" };
const state = { metric: "val_loss", logX: false, logY: false, smooth: 0, seeds: false, hidden: new Set() };

function rankedTable(sweep) {
  const headers = sweep.table.headers;
  return el("table", { id: "ranking" },
    el("thead", {}, el("tr", {}, ...headers.map((h, i) => el("th", { class: i === 1 || h === "verdict" || h === "test" || h === "stopped" ? "left" : "", text: h })))),
    el("tbody", {}, ...sweep.table.rows.map(r => el("tr", { "data-variant": r.variant },
      ...r.cells.map((c, i) => {
        const td = el("td", { class: i === 1 || headers[i] === "verdict" || headers[i] === "test" || headers[i] === "stopped" ? "left" : "" });
        if (i === 1) td.append(el("span", { class: "swatch" }));
        td.append(c.text);
        if (i === 1) td.firstChild.style.background = r.colour;
        if (headers[i] === "verdict") td.className += " verdict-" + r.verdict.split(" ")[0];
        return td;
      })))));
}

function runsTable(sweep) {
  return el("table", { id: "runs" },
    el("thead", {}, el("tr", {}, ...["variant", "init seed", "data seed", "status", "attempts", "steps", "test loss", "run"].map(
      (h, i) => el("th", { class: i === 0 || i === 3 || i === 7 ? "left" : "", text: h })))),
    el("tbody", {}, ...sweep.runs.map(r => el("tr", { "data-run": r.run_id },
      el("td", { class: "left", text: r.variant }),
      el("td", { text: String(r.init_seed) }),
      el("td", { text: String(r.data_seed) }),
      el("td", { class: "left status-" + r.status, text: r.status, title: r.error || "" }),
      el("td", { text: String(r.attempts) }),
      el("td", { text: `${r.steps}/${r.total_steps}` }),
      el("td", { text: r.test_loss == null ? "-" : r.test_loss.toFixed(4) }),
      el("td", { class: "left" }, el("a", { href: "/runs/" + encodeURIComponent(r.run_id), text: r.run_id.slice(0, 12) }))))));
}

// uPlot's data from per-variant tables: joined on x (each variant keeps its own token counts).
function curveData(curves, sweep) {
  const colours = Object.fromEntries(sweep.variants.map(v => [v.name, v.colour]));
  const tables = [], series = [{ label: "tokens" }], bands = [];
  const keep = (x, y) => (state.logY && !(y > 0)) ? null : y;
  // a log axis has no place for 0 tokens (the first evaluation): those points are left out
  const table = (x, ...ys) => {
    const rows = x.map((_, i) => i).filter(i => !state.logX || x[i] > 0);
    return [rows.map(i => x[i]), ...ys.map(y => rows.map(i => keep(x[i], y[i])))];
  };
  for (const v of curves.variants) {
    const colour = colours[v.name] || "#888888", show = !state.hidden.has(v.name);
    const base = series.length;
    tables.push(table(v.x, v.mean, v.min, v.max));
    series.push({ label: v.name, stroke: colour, width: v.baseline ? 2.5 : 1.6, spanGaps: true, show },
      { label: v.name + " min", stroke: rgba(colour, 0.25), width: 0.5, spanGaps: true, show, edge: true },
      { label: v.name + " max", stroke: rgba(colour, 0.25), width: 0.5, spanGaps: true, show, edge: true });
    bands.push({ series: [base + 2, base + 1], fill: rgba(colour, 0.12) });
    for (const r of v.runs || []) {
      tables.push(table(r.x, r.y));
      series.push({ label: `${v.name} ${r.init_seed === r.data_seed ? `seed ${r.init_seed}` : `init seed ${r.init_seed}, data seed ${r.data_seed}`}`, stroke: rgba(colour, 0.5), width: 0.8,
        dash: [4, 3], spanGaps: true, show });
    }
  }
  const data = tables.length ? uPlot.join(tables) : [[]];
  return { data, series, bands };
}

// Draws chart `name` in host, or, when it is there with the same series and axes, gives it the new
// data: a chart the user zoomed (a drag) keeps its window as points arrive, until a double-click.
function chart(host, name, title, yLabel, built, logX, logY) {
  const old = view.charts[name];
  const same = old && old.root.parentNode === host && old.series.length === built.series.length &&
    old.scales.x.distr === (logX ? 3 : 1) && old.scales.y.distr === (logY ? 3 : 1) && old.title === title &&
    built.series.every((s, i) => old.series[i].label === s.label);
  if (same) {
    old.setData(built.data, !old.zoomed);
    built.series.forEach((s, i) => { if (i > 0 && old.series[i].show !== (s.show ?? true)) old.setSeries(i, { show: s.show ?? true }); });
    return old;
  }
  if (old) old.destroy();
  const opts = {
    title, width: chartWidth(host), height: 380,
    scales: { x: { time: false, distr: logX ? 3 : 1 }, y: { distr: logY ? 3 : 1 } },
    series: built.series, bands: built.bands,
    axes: [{ label: "tokens" }, { label: yLabel, size: 70 }],
    cursor: { drag: { x: true, y: true, uni: 30 } },
    legend: { live: true },
    hooks: { setSelect: [u => { if (u.select.width > 0) u.zoomed = true; }] },
  };
  const u = new uPlot(opts, built.data, host);
  u.title = title;
  // a band's edges are drawn, not listed: their legend rows go (the band's mean row stays)
  const rows = u.root.querySelectorAll(".u-legend .u-series");
  built.series.forEach((s, i) => { if (s.edge && rows[i]) rows[i].style.display = "none"; });
  u.over.addEventListener("dblclick", () => { u.zoomed = false; });
  view.charts[name] = u;
  return u;
}

function chartWidth(host) { return Math.max(400, Math.min(1300, host.clientWidth || 1000)); }

// Charts follow the window's width (once it has stopped changing for a moment).
let resizing = null;
window.addEventListener("resize", () => {
  clearTimeout(resizing);
  resizing = setTimeout(() => {
    for (const u of Object.values(view.charts)) {
      const host = u.root.parentNode;
      if (host && chartWidth(host) !== u.width) u.setSize({ width: chartWidth(host), height: u.height });
    }
  }, 200);
});

let curvesAsked = 0;
async function drawCurves(sweep, host) {
  const asked = ++curvesAsked;
  const px = Math.max(100, Math.min(2000, host.clientWidth || 1000));
  const curves = await api(`/api/sweeps/${encodeURIComponent(sweep.name)}/curves?metric=${state.metric}` +
    `&px=${px}&seeds=${state.seeds ? 1 : 0}&smooth=${state.metric === "val_loss" ? 0 : state.smooth}`);
  if (asked !== curvesAsked) return;  // a newer redraw was asked for meanwhile: its answer draws
  const thinned = curves.seed_buckets && curves.seed_buckets < curves.buckets ?
    ` (each seed thinned to ${curves.seed_buckets} buckets: ${sweep.runs.length} runs)` : "";
  chart(host, "curves", metricLabels[state.metric] + " — mean over seeds, band from the lowest to the highest seed" + thinned,
    metricLabels[state.metric], curveData(curves, sweep), state.logX, state.logY);
  view.curves = curves;
}

function drawDelta(sweep, host) {
  if (!sweep.deltas.length) {
    if (view.charts.delta) view.charts.delta.destroy();
    delete view.charts.delta;
    host.replaceChildren(el("p", { class: "muted", text: "No intervention shares seeds with the baseline yet." }));
    return;
  }
  const tables = [], series = [{ label: "tokens" }], bands = [];
  for (const d of sweep.deltas) {
    const x = d.points.map(p => p.tokens);
    tables.push([x, d.points.map(p => p.improvement), d.points.map(p => p.ci_low), d.points.map(p => p.ci_high)]);
    const base = series.length, show = !state.hidden.has(d.variant);
    series.push({ label: d.variant, stroke: d.colour, width: 1.6, spanGaps: true, show },
      { label: d.variant + " CI low", stroke: rgba(d.colour, 0.25), width: 0.5, spanGaps: true, show, edge: true },
      { label: d.variant + " CI high", stroke: rgba(d.colour, 0.25), width: 0.5, spanGaps: true, show, edge: true });
    bands.push({ series: [base + 2, base + 1], fill: rgba(d.colour, 0.12) });
  }
  if (!view.charts.delta) host.replaceChildren();  // the note that there was none yet
  chart(host, "delta", "Improvement over the baseline along training (Δ validation loss, 95% CI over paired seeds)",
    "Δ loss (positive = better)", { data: uPlot.join(tables), series, bands }, false, false);
}

function drawResponses(sweep, host) {
  // one host per chart, kept while the sweep has the same charts (their zoom with them)
  const wanted = sweep.responses.map((_, k) => "response" + k).concat(sweep.ladder ? ["ladder"] : []);
  const hosts = Object.fromEntries(wanted.map(n => [n, view.charts[n] ? view.charts[n].root.parentNode : null]));
  if (wanted.some(n => !hosts[n]) || host.childElementCount !== wanted.length) {
    for (const name of Object.keys(view.charts).filter(n => n.startsWith("response") || n === "ladder")) {
      view.charts[name].destroy();
      delete view.charts[name];
    }
    host.replaceChildren(...wanted.map(n => (hosts[n] = el("div", { class: "chart" }))));
  }
  sweep.responses.forEach((r, k) => {
    const pts = r.points.slice().sort((a, b) => a.x - b.x);
    chart(hosts["response" + k], "response" + k, `${sweep.metric} against ${r.axis}${r.series ? " (" + r.series + ")" : ""}`, sweep.metric,
      { data: [pts.map(p => p.x), pts.map(p => p.mean), pts.map(p => p.ci_low), pts.map(p => p.ci_high)],
        series: [{ label: r.axis }, { label: "mean", stroke: "#0b62c4", width: 2, points: { show: true, size: 7 } },
          { label: "CI low", stroke: "rgba(11,98,196,.3)", edge: true }, { label: "CI high", stroke: "rgba(11,98,196,.3)", edge: true }],
        bands: [{ series: [3, 2], fill: "rgba(11,98,196,.1)" }] }, r.log_x, false);
  });
  if (sweep.ladder) {
    const rungs = sweep.ladder.rungs;
    const x = rungs.map(r => r.flops);
    const series = [{ label: "training FLOPs" }], data = [x];
    sweep.ladder.trends.forEach((t, i) => {
      const at = Object.fromEntries(t.points.map(p => [p.rung, p.improvement]));
      data.push(rungs.map(r => at[r.name] ?? null));
      series.push({ label: `${t.intervention} (${t.verdict})`, stroke: `hsl(${(i * 67) % 360} 60% 42%)`, width: 1.8,
        points: { show: true, size: 7 }, spanGaps: true });
    });
    chart(hosts.ladder, "ladder", "Improvement over each rung's baseline, across the ladder", "improvement",
      { data, series, bands: [] }, x.every(v => v > 0), false);
  }
  if (!wanted.length) host.replaceChildren(el("p", { class: "muted", text: "No grid axis or scale ladder in this sweep." }));
}

function curveControls(sweep, redraw) {
  const select = el("select", { id: "metric", onchange: e => { state.metric = e.target.value; redraw(); } },
    ...Object.entries(metricLabels).map(([k, label]) => el("option", { value: k, text: label })));
  select.value = state.metric;
  const box = (id, key, label) => {
    const input = el("input", { type: "checkbox", id, onchange: e => { state[key] = e.target.checked; redraw(); } });
    input.checked = state[key];
    return el("label", {}, input, " " + label);
  };
  const slider = el("input", { type: "range", id: "smooth", min: "0", max: "0.99", step: "0.01", value: String(state.smooth),
    onchange: e => { state.smooth = parseFloat(e.target.value); redraw(); } });
  const variants = el("span", { class: "variants" }, ...sweep.variants.map(v => {
    const input = el("input", { type: "checkbox", "data-variant": v.name, onchange: e => {
      if (e.target.checked) state.hidden.delete(v.name); else state.hidden.add(v.name);
      redraw();
    } });
    input.checked = !state.hidden.has(v.name);
    const swatch = el("span", { class: "swatch" });
    swatch.style.background = v.colour;
    return el("label", {}, input, swatch, v.name);
  }));
  return el("div", {}, el("div", { class: "controls" }, el("label", {}, "curve ", select), box("logx", "logX", "log tokens"),
    box("logy", "logY", "log y"), el("label", {}, "smoothing ", slider), box("seeds", "seeds", "each seed"),
    el("span", { class: "muted", text: "drag to zoom, double-click to reset" })),
    el("div", { class: "controls" }, variants));
}

async function sweepPage(name) {
  let sweep = await api("/api/sweeps/" + encodeURIComponent(name));
  crumbs(el("a", { href: "/", text: "sweeps" }), el("span", { text: sweep.name }));
  const status = el("p", { id: "status" });
  const ranking = el("div", { id: "ranking-host" });
  const curves = el("div", { class: "chart", id: "curves" });
  const delta = el("div", { class: "chart", id: "delta" });
  const responses = el("div", { id: "responses" });
  const runs = el("div", { id: "runs-host" });
  const report = el("pre", { id: "report" });
  const text = el("div", { id: "method" });
  const controls = el("div", { id: "controls" });
  let variantNames = null;
  const redraw = async () => {
    try {
      await drawCurves(sweep, curves);
      drawDelta(sweep, delta);
    } catch (e) { curves.replaceChildren(el("p", { class: "error", text: e.message })); }
  };
  const fill = () => {
    view.version = sweep.version;
    status.textContent = `${sweep.file} — ${statesText(sweep)}. ${sweep.code}`;
    ranking.replaceChildren(el("p", { text: sweep.headline }), rankedTable(sweep));
    text.replaceChildren(el("p", { text: sweep.method }), ...sweep.noise.map(l => el("p", { class: "muted", text: l })),
      ...sweep.notes.map(n => el("p", { class: "muted", text: "Note: " + n })));
    runs.replaceChildren(runsTable(sweep));
    report.textContent = sweep.report;
    const names = sweep.variants.map(v => v.name).join("\n");
    if (names !== variantNames) {  // a variant added to the sweep while the page is open gets its toggle
      variantNames = names;
      controls.replaceChildren(curveControls(sweep, redraw));
    }
    drawResponses(sweep, responses);
  };
  main.replaceChildren(el("h1", { text: sweep.name }), status, ranking, text,
    el("h2", { text: "Curves" }), controls, curves,
    el("h2", { text: "Where the effects happen" }), delta,
    el("h2", { text: "Response" }), responses,
    el("h2", { text: "Runs" }), runs,
    el("h2", { text: "The report" }), report,
    el("details", {}, el("summary", { text: "The sweep file as run" }), el("pre", { text: sweep.spec })));
  fill();
  await redraw();
  view.refresh = async () => {
    sweep = await api("/api/sweeps/" + encodeURIComponent(name));
    fill();
    await redraw();
  };
}

// ---- one run ----
async function runPage(id) {
  const r = await api("/api/runs/" + encodeURIComponent(id));
  view.version = r.version;
  crumbs(el("a", { href: "/", text: "sweeps" }), el("span", { text: "run " + r.run_id }));
  const facts = [["status", r.status + (r.error ? ` — ${r.error}` : "")], ["attempts", String(r.attempts)],
    ["seeds", `init ${r.init_seed}, data ${r.data_seed}`], ["steps", `${r.steps}/${r.total_steps}`],
    ["tokens", String(r.tokens)], ["test loss", r.test_loss == null ? "-" : r.test_loss.toFixed(4)],
    ["test bits/byte", r.test_bpb == null ? "-" : r.test_bpb.toFixed(4)],
    ["tokens/s", r.tokens_per_s == null ? "-" : Math.round(r.tokens_per_s).toString()],
    ["wall", duration(r.wall_seconds)], ["batch job", r.job ? `${r.job} (${r.job_state})` : "-"]];
  const folder = el("a", { href: "file://" + encodeURI(r.run_dir), text: r.run_dir });
  main.replaceChildren(el("h1", { text: "Run " + r.run_id }),
    el("dl", {}, ...facts.flatMap(([k, v]) => [el("dt", { text: k }), el("dd", { text: v })]),
      el("dt", { text: "folder" }), el("dd", {}, folder)),
    el("h2", { text: "Segments (each start of a worker)" }),
    el("table", { id: "segments" }, el("thead", {}, el("tr", {}, ...["started", "from step", "last event", "code"].map(h => el("th", { text: h })))),
      el("tbody", {}, ...r.segments.map(s => el("tr", {}, el("td", { text: new Date(s.started * 1000).toLocaleString() }),
        el("td", { text: String(s.step) }), el("td", { text: new Date(s.last_event * 1000).toLocaleString() }),
        el("td", { class: "left", text: s.code }))))),
    el("h2", { text: "Config" }), el("pre", { id: "config", text: r.config }),
    el("h2", { text: "The log's last lines (worker.log)" }), el("pre", { id: "log", text: r.log || "(empty)" }));
  view.refresh = () => runPage(id);
}

// ---- routing and following the database ----
async function route() {
  try {
    const path = decodeURIComponent(location.pathname);
    if (path === "/") {
      await sweepsPage();
      view.refresh = sweepsPage;
    } else if (path.startsWith("/sweeps/")) {
      await sweepPage(path.slice(8));
    } else if (path.startsWith("/runs/")) {
      await runPage(path.slice(6));
    } else {
      throw new Error("no such page");
    }
    view.ready = true;
  } catch (e) {
    showError(e);
    view.refresh = route;  // a sweep not recorded yet: the page comes alive when it is
    view.ready = true;
  }
}

async function follow() {
  const live = document.getElementById("live");
  try {
    const { version } = await api("/api/version");
    live.className = "";
    live.textContent = "live";
    if (view.version !== null && version !== view.version && view.refresh) {
      const before = view.version;
      view.version = version;
      try {
        await view.refresh();
        view.refreshes++;
      } catch (e) {
        view.version = before;  // asked again at the next poll
        live.className = "stale";
        live.textContent = "could not refresh: " + e.message;
      }
    } else {
      view.version = version;
    }
  } catch (e) {
    live.className = "stale";
    live.textContent = "server unreachable";
  }
  setTimeout(follow, 2000);
}

route().then(follow);
