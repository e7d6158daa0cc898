# A scale ladder end to end: `sweep run` trains every intervention at every rung (tokens from
# tokens_per_param), `sweep report` prints the per-rung table, the trend verdicts and the
# extrapolation to the target, writes ladder.svg and report.json's ladder; `--until-decided`
# adds seeds rung by rung; and a ladder that cannot be a ladder is refused before anything runs.
source "$(dirname "$0")/lib.bash"
prepare_bytes

cat > ladder.yaml <<'YAML'
sweep: lad
baseline: base
seeds: [1, 2]
min_effect: 0.05
base:
  data: {dataset: data/bytes}
  model: {n_layer: 1, n_head: 2, n_embd: 16, block_size: 32, dropout: 0.0}
  train: {micro_batch: 4, tokens: 8K, lr: 3e-3, precision: fp32}
  eval: {every: 2, val_tokens: 2K}
scale:
  rungs:
    small: {model.n_embd: 16}
    medium: {model.n_embd: 32}
    large: {model.n_layer: 2, model.n_embd: 48}
  tokens_per_param: 0.2
  target: {params: 1M}
interventions:
  base: {}
  clip: {train.grad_clip: 0.05}
  wd: {train.weight_decay: 0.0}
YAML
"$SWEEP" plan ladder.yaml > plan.txt || fail "plan: $(cat plan.txt)"
grep -q "^sweep lad (ladder.yaml): 9 variants, 18 runs" plan.txt || fail "plan: $(cat plan.txt)"
"$SWEEP" run ladder.yaml --results res --devices cpu:2x1 > run.txt || fail "ladder sweep: $(cat run.txt)"
"$SWEEP" report lad --results res --out rep > report.txt 2> err.txt || fail "ladder report: $(cat report.txt err.txt)"
cat report.txt
grep -qE "^intervention +small +medium +large +Δ per 10× FLOPs +95% CI +p \(Holm\) +p holds \(Holm\) +trend +at 1\.00M params +95% PI$" report.txt ||
  fail "no ladder table"
grep -qE "^clip +[+-][0-9.]+ [a-z]+ " report.txt || fail "no clip row"
grep -qE "^  wd: (holds|grows|shrinks|flips sign|undecided) — " report.txt || fail "no trend verdict for wd"
grep -q "^target 1.00M params: " report.txt || fail "no target sentence"
grep -q "^Speed-up: the training FLOPs the baseline needs" report.txt || fail "no speed-up section"
grep -qE "^intervention +small +medium +large +× per 10× FLOPs +95% CI +p \(Holm\) +trend +at 1\.00M params +95% PI$" report.txt ||
  fail "no speed-up table"
grep -qE "^  clip: ([a-z ]+ — .*×[0-9.]+ per 10× FLOPs|no result — )" report.txt || fail "no speed-up trend for clip"
for rung in small medium large; do
  grep -q "^rung $rung (" report.txt || fail "no table for rung $rung"
done
[ -s rep/ladder.svg ] || fail "no ladder.svg"
python3 - <<'PY' || fail "report.json's ladder is wrong"
import json
r = json.load(open("rep/report.json"))
l = r["ladder"]
assert [x["name"] for x in l["rungs"]] == ["small", "medium", "large"], l["rungs"]
assert l["rungs"][0]["params"] < l["rungs"][1]["params"] < l["rungs"][2]["params"]
assert all(x["tokens"] == round(0.2 * x["params"]) for x in l["rungs"]), l["rungs"]
assert [t["intervention"] for t in l["trends"]] == ["clip", "wd"], l["trends"]
for t in l["trends"]:
    assert t["pairs"] == 6 and t["rungs"] == 3 and t["df"] == 4, t
    assert t["verdict"] in ("holds", "grows", "shrinks", "flips sign", "undecided"), t
    assert t["target_pi"][0] <= t["at_target"] <= t["target_pi"][1], t
assert l["target"]["unit"] == "params" and l["target"]["far"] is False or l["target"]["factor"] > 10
assert sorted({v["rung"] for v in r["variants"]}) == ["large", "medium", "small"]
assert sum(v["baseline"] for v in r["variants"]) == 3
# the speed-ups to the baseline's final validation loss, per rung (every seed compared) and their line
assert [s["intervention"] for s in l["speedups"]] == ["clip", "wd"], l["speedups"]
for s in l["speedups"]:
    assert [x["seeds"] for x in s["rungs"]] == [2, 2, 2], s
    assert all(x["speedup"] is None or x["speedup"] > 0 for x in s["rungs"]), s
print("ladder report.json: ok")
PY

# The backtest: the top rung hidden and predicted from the two below, in the report and by itself
grep -q "^backtest: the trend " report.txt || fail "no backtest sentence in the report"
grep -q "^the target lies at a compute ratio of " report.txt || fail "no backtest sentence on the target"
"$SWEEP" backtest --results res > backtest.txt || fail "sweep backtest: $(cat backtest.txt)"
cat backtest.txt
grep -qE "^lad +large +2 +0\.[0-9]+ +2 " backtest.txt || fail "no backtest row for the hidden rung large"
grep -q "^test_loss: the trend " backtest.txt || fail "no backtest verdict"
"$SWEEP" backtest lad --results res --format json > backtest.json || fail "sweep backtest --format json"
python3 - <<'PY' || fail "sweep backtest's JSON"
import json
b = json.load(open("backtest.json"))
rows = b["rows"]
assert [r["hidden"] for r in rows] == ["large"] and rows[0]["rungs_below"] == 2, rows
assert [p["intervention"] for p in rows[0]["predictions"]] == ["clip", "wd"], rows[0]
for p in rows[0]["predictions"]:  # from 2 rungs below: a prediction, and no interval (a line through 2 shows no bend)
    assert p["pi_low"] is None and p["pi_high"] is None and p["seeds"] == 2, p
assert rows[0]["arm_pairs"] == 3 and 0 <= rows[0]["accuracy_trend"] <= 1, rows[0]
assert b["pooled"]["intervals"] == 0 and b["pooled"]["coverage"] is None, b["pooled"]
print("backtest json: ok")
PY
expect_rc 2 "$SWEEP" backtest nosuch --results res 2> bad.txt
grep -q "nosuch" bad.txt || fail "backtest of an unknown sweep: $(cat bad.txt)"
expect_rc 2 "$SWEEP" backtest --results res --metric bits 2> bad.txt
# a ladder named twice is backtested once
"$SWEEP" backtest lad lad --results res > twice.txt || fail "sweep backtest lad lad: $(cat twice.txt)"
diff backtest.txt twice.txt || fail "a ladder named twice counted twice"
# the same ladder under another name (its file copied and run: nothing trains) is counted once
sed 's/^sweep: lad$/sweep: lad-copy/' ladder.yaml > copy.yaml
grep -q "^sweep: lad-copy$" copy.yaml || fail "the copy: $(head -3 copy.yaml)"
"$SWEEP" run copy.yaml --results res --devices cpu:2x1 > copy.txt || fail "the copy: $(cat copy.txt)"
"$SWEEP" backtest --results res > both.txt || fail "sweep backtest of both: $(cat both.txt)"
grep -qE "^not scored: (lad-copy: the same runs as lad|lad: the same runs as lad-copy) — counted once$" both.txt ||
  fail "the copy: $(cat both.txt)"
[ "$(grep -cE "^lad(-copy)? +large " both.txt)" = 1 ] || fail "the same ladder counted twice: $(cat both.txt)"
# a val_lastK the runs did not evaluate often enough for: refused, with the K they allow
expect_rc 2 "$SWEEP" backtest lad --results res --metric val_last100 2> bad.txt
grep -q "evaluated fewer than 100 times after step 0 (the fewest: [0-9]*) — " bad.txt || fail "val_last100: $(cat bad.txt)"
# calibrate takes no ladder's noise (each rung has its own), and --backtest no sweep at all
expect_rc 2 "$SWEEP" calibrate lad --results res --replicates 2 2> bad.txt
grep -q "sweep lad is a scale ladder, each rung with noise of its own" bad.txt || fail "calibrate of a ladder: $(cat bad.txt)"
expect_rc 2 "$SWEEP" calibrate --backtest lad --results res --replicates 2 2> bad.txt
grep -q "it takes no sweep" bad.txt || fail "calibrate --backtest with a sweep: $(cat bad.txt)"
# --results without a sweep says nothing to a calibration: refused, not ignored
expect_rc 2 "$SWEEP" calibrate --pool --results res --replicates 2 2> bad.txt
grep -q "\-\-results names where a sweep's results are read, and no sweep is named" bad.txt ||
  fail "calibrate --pool --results: $(cat bad.txt)"

# --until-decided on a ladder: undecided rungs get seeds, each rung's baseline with them
"$SWEEP" run ladder.yaml --results res --devices cpu:2x1 --until-decided --max-seeds 4 > more.txt ||
  fail "until-decided ladder: $(cat more.txt)"
grep -q "until decided" more.txt || fail "no until-decided round: $(cat more.txt)"
"$SWEEP" report lad --results res --out rep2 --format json > rep2.json || fail "report after until-decided"
python3 - <<'PY' || fail "until-decided on a ladder: $(cat more.txt)"
import json
r = json.load(open("rep2.json"))
seeds = {v["name"]: v["seeds"] for v in r["variants"]}
for rung in ("small", "medium", "large"):
    most = max(seeds[f"{i}+{rung}"] for i in ("clip", "wd"))
    assert seeds[f"base+{rung}"] >= most, seeds
assert max(seeds.values()) > 2, ("no seeds were added", seeds)
print("until-decided ladder:", seeds)
PY

# refused before anything runs: a rung that is not larger than the one before
sed 's/large: {model.n_layer: 2, model.n_embd: 48}/large: {model.n_embd: 24, model.n_layer: 1, model.n_head: 1}/; s/medium: {model.n_embd: 32}/medium: {model.n_embd: 40}/' ladder.yaml > shrinking.yaml
expect_rc 2 "$SWEEP" run shrinking.yaml --results res2 --devices cpu:1x1 2> bad.txt
grep -q "shrinking.yaml:.*rung 'large' has .* parameters, no more than rung 'medium'" bad.txt || fail "$(cat bad.txt)"
# two rungs of one size: said as rungs, not as a grid's points
sed 's/medium: {model.n_embd: 32}/medium: {model.n_embd: 16}/' ladder.yaml > equal.yaml
expect_rc 2 "$SWEEP" run equal.yaml --results res2 --devices cpu:1x1 2> bad.txt
grep -q "equal.yaml:.*rung 'medium' of the scale ladder is the same run config as rung 'small' — each rung must be another size" bad.txt ||
  fail "equal rungs: $(cat bad.txt)"
[ ! -e res2/sweep.db ] || fail "a refused ladder left a database"
echo "ladder: ok"
