#!/usr/bin/env bash
# `sweep report` on a fixture database (known values, so the ranking and the verdicts are known):
# the ranked table, every file, a variant named <script>alert(1)</script> escaped, the SVG plots
# with one series per variant, and the HTML opened in headless Chromium (a screenshot that is not
# blank, the table sorted by a real mouse click, no request leaving the page).
source "$(dirname "$0")/lib.bash"
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

# An empty results folder: `sweep ingest` creates its database with the current schema.
mkdir -p results/runs
"$SWEEP" ingest results >/dev/null

evil='=1+1<script>alert(1)</script>'  # a formula for a spreadsheet, a script for a browser
sql() { sed "s/'/''/g" <<<"$1"; }  # a string literal's body
{
  echo "BEGIN;"
  echo "INSERT INTO sweeps(name, file, spec, baseline, updated_at) VALUES ('fixture', 'fix\`ture.yaml', 'sweep: fixture
# \`\`\`\` a comment that must not close report.md''s fence', 'baseline', 0);"
  pos=0
  # variant: test loss of seeds 1, 2, 3 ('-' = diverged)
  while read -r name values; do
    echo "INSERT INTO variants(sweep, name, position, overrides) VALUES ('fixture', '$(sql "$name")', $pos, '{}');"
    seed=0
    for v in $values; do
      seed=$((seed + 1)); id="run${pos}s${seed}"
      if [ "$v" = - ]; then status=diverged; loss=NULL; else status=done; loss=$v; fi
      echo "INSERT INTO runs(run_id, config, init_seed, data_seed, status, steps, total_steps, tokens, test_loss,
              wall_seconds, tokens_per_s, run_dir, updated_at)
            VALUES ('$id', 'x', $seed, $seed, '$status', 2, 2, 2048, $loss, 60, 1000, 'results/runs/$id', 0);"
      echo "INSERT INTO sweep_runs VALUES ('fixture', '$(sql "$name")', '$id');"
      # a validation curve at 0, 1024 and 2048 tokens ending near the test loss, and two steps
      if [ "$v" != - ]; then
        for k in 0 1 2; do
          echo "INSERT INTO metrics(run_id, split, step, tokens, loss, loss_status)
                VALUES ('$id', 'val', $k, $((k * 1024)), $v + 0.5 * (2 - $k), 'finite');"
        done
        for k in 1 2; do
          echo "INSERT INTO metrics(run_id, split, step, tokens, loss, loss_status, grad_norm, grad_norm_status)
                VALUES ('$id', 'train', $k, $((k * 1024)), $v + 0.4 * (2 - $k), 'finite', $k.5, 'finite');"
        done
      fi
    done
    pos=$((pos + 1))
  done <<EOF
baseline 3.00 3.02 2.98
good 2.90 2.915 2.885
bad 3.10 3.125 3.07
noisy 3.05 2.95 3.01
$evil 2.95 2.971 2.929
unstable - - -
EOF
  echo "COMMIT;"
} | sqlite3 results/sweep.db || fail "cannot write the fixture"

"$SWEEP" report fixture --out report > table.txt 2> err.txt || { cat table.txt err.txt; fail "sweep report failed"; }
cat table.txt

# The ranked order and the verdicts: good, =1+1<script>, baseline, noisy, bad, then the diverged one.
rows=$(awk '$1 ~ /^[0-9]+$/ {print $1, $2}' table.txt)
[ "$rows" = "$(printf '1 good\n2 =1+1<script>alert(1)</script>\n3 baseline\n4 noisy\n5 bad\n6 unstable')" ] ||
  fail "unexpected ranking: $rows"
verdict() { grep -E "^[0-9]+ +$1 " "${2:-table.txt}" | grep -oE 'better|worse|equivalent|undecided|baseline|diverged' | sed -n 1p; }
[ "$(verdict good)" = better ] || fail "good: $(verdict good)"
[ "$(verdict bad)" = worse ] || fail "bad: $(verdict bad)"
[ "$(verdict noisy)" = undecided ] || fail "noisy: $(verdict noisy)"
grep -q "no smallest effect of interest declared" table.txt || fail "no suggestion of a min_effect"

# With a smallest effect of interest: noisy stays undecided at ±0.05 and is equivalent at ±1
# (its paired differences are +0.05, −0.07, +0.03); good is better, yet below ±1.
"$SWEEP" report fixture --out report-d --min-effect 0.05 > table-d.txt 2> err.txt || fail "--min-effect 0.05: $(cat err.txt)"
[ "$(verdict noisy table-d.txt)" = undecided ] || fail "noisy at ±0.05: $(verdict noisy table-d.txt)"
grep -q "p equiv (Holm)" table-d.txt || fail "no equivalence column: $(cat table-d.txt)"
"$SWEEP" report fixture --out report-d --min-effect 1 > table-d.txt 2> err.txt || fail "--min-effect 1: $(cat err.txt)"
[ "$(verdict noisy table-d.txt)" = equivalent ] || fail "noisy at ±1: $(verdict noisy table-d.txt)"
grep -qE "^1 +good .*better \(< δ\)" table-d.txt || fail "good at ±1: $(grep good table-d.txt)"
python3 - <<'PY' || fail "report.json's design and equivalence fields"
import json
r = json.load(open("report-d/report.json"))
assert r["design"]["min_effect"] == 1 and r["design"]["min_effect_source"] == "--min-effect", r["design"]
noisy = next(v for v in r["variants"] if v["name"] == "noisy")
assert noisy["verdict"] == "equivalent" and noisy["p_equivalence_holm"] < 0.05, noisy
PY
for bad in 0 -1 abc nan 1e999; do
  expect_rc 2 "$SWEEP" report fixture --out report-d --min-effect "$bad" 2> err.txt
  grep -q -- "--min-effect .*must be a number above 0" err.txt || fail "--min-effect $bad: $(cat err.txt)"
done
# The metric signal in every report, and the mean of the last K validation evaluations as the metric
grep -q "metric signal (the sd of the arms' means" table.txt || fail "no metric signal: $(cat table.txt)"
"$SWEEP" report fixture --out report-k --metric val_last2 --format json > last2.json 2> err.txt || fail "--metric val_last2: $(cat err.txt)"
python3 - <<'PY' || fail "val_last2 or metric_signal"
import json
r = json.load(open("last2.json"))
assert r["metric"] == "val_last2", r["metric"]
assert any(v["verdict"] in ("better", "worse", "undecided", "equivalent") for v in r["variants"]), r["variants"]
m = r["metric_signal"]
assert m[0]["metric"] in ("val_last2", "test_loss", "test_bpb", "val_loss", "val_last3"), m
assert all(x["noise"] > 0 and x["arms"] >= 2 for x in m), m
PY
expect_rc 2 "$SWEEP" report fixture --out report-k --metric val_last1 2> err.txt
grep -q "val_lastK (K from 2 to 100" err.txt || fail "--metric val_last1: $(cat err.txt)"

# Better by a margin: a one-sided test beside the verdict, its column and report.json's fields.
"$SWEEP" report fixture --out report-m --better-by 0.001 --better-by-alpha 0.01 > table-m.txt 2> err.txt ||
  fail "--better-by 0.001: $(cat err.txt)"
grep -q "p by m (Holm)" table-m.txt || fail "no margin column: $(cat table-m.txt)"
grep -qE "^1 +good .*better \(by > 0.001\)" table-m.txt || fail "good by > 0.001: $(grep good table-m.txt)"
grep -q "(by > 0.001): better, and shown better by more than the margin" report-m/report.md || fail "no margin sentence"
python3 - <<'PY' || fail "report.json's margin fields"
import json
r = json.load(open("report-m/report.json"))
assert r["design"]["better_by"] == 0.001 and r["design"]["better_by_alpha"] == 0.01, r["design"]
for v in r["variants"]:
    if v["verdict"] in ("baseline", "no result") or v["p_better_by_holm"] is None:
        assert v["better_by"] is False, v
        continue
    assert v["better_by"] == (v["verdict"] == "better" and v["p_better_by_holm"] < 0.01), v
    assert v["p_better_by_holm"] >= v["p_better_by"], v
PY
"$SWEEP" report fixture --out report-m --better-by 100 > table-m.txt 2> err.txt || fail "--better-by 100: $(cat err.txt)"
grep -qE "^[0-9]+ .*better \(by > " table-m.txt && fail "shown better by more than 100: $(cat table-m.txt)"
for bad in 0 -1 abc nan; do
  expect_rc 2 "$SWEEP" report fixture --out report-m --better-by "$bad" 2> err.txt
  grep -q -- "--better-by .*must be a number above 0" err.txt || fail "--better-by $bad: $(cat err.txt)"
done
expect_rc 2 "$SWEEP" report fixture --out report-m --better-by-alpha 0.01 2> err.txt
grep -q -- "--better-by-alpha 0.01: no margin to test" err.txt || fail "--better-by-alpha alone: $(cat err.txt)"
expect_rc 2 "$SWEEP" report fixture --out report-m --better-by 0.01 --better-by-alpha 0.9 2> err.txt
grep -q -- "--better-by-alpha" err.txt || fail "--better-by-alpha 0.9: $(cat err.txt)"
[ "$(verdict unstable)" = diverged ] || fail "unstable: $(verdict unstable)"
grep -q "unstable: 3 of 3 runs diverged" table.txt || fail "no note on the diverged variant"

for f in report.md index.html summary.csv report.json curves.svg forest.svg seeds.svg delta.svg target.svg train.svg \
         grad_norm.svg; do
  [ -s "report/$f" ] || fail "report/$f missing"
done
[ "$(ls -A report | wc -l)" -eq 11 ] || fail "stray files in the report folder: $(ls -A report)"
grep -q "where the effects happen" table.txt || fail "no tokens-to-target table: $(cat table.txt)"
[ "$(wc -l < report/summary.csv)" -eq 19 ] || fail "summary.csv: expected a header and 18 runs"

# No user string reaches the HTML unescaped.
! grep -q '<script>alert' report/index.html || fail "the variant's name reached index.html unescaped"
grep -q '&lt;script&gt;alert(1)&lt;/script&gt;' report/index.html || fail "the escaped name is missing"
grep -q "^fixture,'=1+1<script>" report/summary.csv || fail "a cell a spreadsheet would run: $(cat report/summary.csv)"
# The sweep file's text in a fence longer than any backtick run in it, the file name in a code span.
grep -qx '`````yaml' report/report.md && [ "$(grep -cx '`````' report/report.md)" -eq 1 ] ||
  fail "report.md's fence: $(sed -n '/The sweep file/,$p' report/report.md)"
grep -q '^`` fix`ture.yaml `` as it was run' report/report.md || fail "the file name's code span"

# report.json holds the ranking for pipelines; the SVGs parse and hold one series per variant.
python3 - "$evil" <<'PY' || fail "report.json or the SVG plots are wrong"
import json, sys, xml.etree.ElementTree as ET
evil = sys.argv[1]
r = json.load(open("report/report.json"))
assert [v["name"] for v in r["variants"]] == ["good", evil, "baseline", "noisy", "bad", "unstable"], r["variants"]
assert r["variants"][0]["verdict"] == "better" and r["variants"][0]["method"] == "paired"
assert r["variants"][5]["mean"] is None
ns = {"s": "http://www.w3.org/2000/svg"}
def series(name):
    root = ET.parse("report/" + name).getroot()
    return [g for g in root.iter("{http://www.w3.org/2000/svg}g") if g.get("id", "").startswith("gnuplot_plot_")]
def texts(name):
    root = ET.parse("report/" + name).getroot()
    return [t.text for t in root.iter("{http://www.w3.org/2000/svg}text")]
with_results = ["good", evil, "baseline", "noisy", "bad"]
# curves: a band and a line per variant with results, the line titled in the legend
assert len(series("curves.svg")) == 2 * len(with_results), len(series("curves.svg"))
assert sorted(t for t in texts("curves.svg") if t in with_results) == sorted(with_results)
# forest: one point with its interval per intervention, named on the axis
assert len(series("forest.svg")) == 4, len(series("forest.svg"))
assert sorted(t for t in texts("forest.svg") if t in with_results) == sorted(["good", evil, "noisy", "bad"])
# seeds: the seeds and the mean bar of every variant with results
assert len(series("seeds.svg")) == 2 * len(with_results), len(series("seeds.svg"))
# delta: a band and a line per intervention paired with the baseline; target: one point each
interventions = ["good", evil, "noisy", "bad"]
assert len(series("delta.svg")) == 2 * len(interventions), len(series("delta.svg"))
assert sorted(t for t in texts("delta.svg") if t in with_results) == sorted(interventions)
assert len(series("target.svg")) == len(interventions) - 1, len(series("target.svg"))  # bad never gets there
# train and grad_norm: a band and a line per variant with steps
assert len(series("train.svg")) == 2 * len(with_results) and len(series("grad_norm.svg")) == 2 * len(with_results)
# tokens to target: each curve is the baseline's shifted by a constant, so the savings are exact
t = {x["variant"]: x for x in r["tokens_to_target"]}
# good reaches the baseline's final loss 10% sooner on every seed; bad never does
assert t["good"]["reached"] == 3 and 0.09 < t["good"]["saving"] < 0.11 and t["good"]["ci_low"] is not None, t
assert t["bad"]["reached"] == 0 and t["bad"]["saving"] is None, t
assert [p["tokens"] for p in r["delta_curves"][0]["points"]] == [1024, 2048], r["delta_curves"][0]
print("report.json and SVG plots: ok")
PY

# The page in a real browser: not blank, sorted by a click, nothing fetched.
command -v chromium >/dev/null || fail "chromium is not installed (scripts/setup.sh --test installs it)"
python3 "$here/browser_check.py" report/index.html shot.png "Where the effects happen: Δ validation loss along training" \
  "Tokens saved to reach the baseline's final loss" "Training loss" "Gradient norm" || fail "the browser check failed"

# Without gnuplot the report is still written, with a warning, and no stale plot survives.
mkdir -p nognuplot && ln -sf "$(command -v sqlite3)" nognuplot/sqlite3
PATH="$PWD/nognuplot" "$SWEEP" report fixture --out report > /dev/null 2> err.txt || fail "report without gnuplot failed"
grep -q "gnuplot not found" err.txt || fail "no warning without gnuplot"
[ ! -e report/curves.svg ] || fail "a stale plot survived"
grep -q "good" report/index.html || fail "index.html not written without gnuplot"

# Bad input: an unknown sweep (with a suggestion), an unknown metric, no database.
expect_rc 2 "$SWEEP" report fixtur 2> err.txt
grep -q "did you mean 'fixture'" err.txt || fail "no suggestion for a misspelt sweep: $(cat err.txt)"
expect_rc 2 "$SWEEP" report fixture --metric val_los 2> err.txt
expect_rc 2 "$SWEEP" report --results nowhere 2> err.txt
grep -q "no database" err.txt || fail "no clear error without a database"
# An empty database file (a scheduler killed before its first write): refused, and left empty —
# reading commands create no schema in it.
mkdir -p emptydb && : > emptydb/sweep.db
for cmd in "report" "ls" "status" "backtest"; do
  expect_rc 2 "$SWEEP" $cmd --results emptydb 2> err.txt
  grep -q "emptydb/sweep.db is empty (0 bytes)" err.txt || fail "$cmd on an empty database: $(cat err.txt)"
done
"$SWEEP" plan "$here/../../experiments/quick.yaml" --results emptydb > /dev/null 2> err.txt || fail "plan beside an empty database: $(cat err.txt)"
[ ! -s emptydb/sweep.db ] && [ "$(ls emptydb)" = "sweep.db" ] || fail "a reading command wrote into an empty database"
touch afile
expect_rc 2 "$SWEEP" report fixture --out afile 2> err.txt
grep -q "cannot write the report into afile" err.txt || fail "--out on a file: $(cat err.txt)"
echo "report: ok"
