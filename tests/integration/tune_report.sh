# A tune axis end to end: `sweep run` trains every arm at every learning rate, `sweep report`
# judges each arm at the base value (the first table: those variants only) and at its own best
# (the "Tuned" section: best lr, what 2× off costs, both verdicts, the outcome), in every format;
# `sweep calibrate --tune` runs. Bad tune axes are refused before anything is written.
source "$(dirname "$0")/lib.bash"
prepare_bytes

cat > tune.yaml <<'YAML'
sweep: tuned
baseline: base
seeds: [1, 2, 3]
min_effect: 0.01
better_by: 0.001
base:
  data: {dataset: data/bytes}
  model: {n_layer: 1, n_head: 2, n_embd: 32, block_size: 32, dropout: 0.0}
  train: {micro_batch: 4, grad_accum: 1, tokens: 8K, lr: 3e-3, precision: fp32}
  eval: {every: 0, val_tokens: 2K}
interventions:
  base: {}
  clip: {train.grad_clip: 0.5}
tune:
  train.lr: [1.5e-3, 3e-3, 6e-3, 1.2e-2]
YAML
"$SWEEP" run tune.yaml --results res --devices cpu:2x1 > run.txt || fail "tune sweep: $(cat run.txt)"
grep -q "24 runs" run.txt || fail "2 arms × 4 values × 3 seeds: $(cat run.txt)"
"$SWEEP" report tuned --results res --out rep > report.txt 2> err.txt || fail "tune report: $(cat report.txt err.txt)"
cat report.txt
names=$(awk '$1 == "#" {on = 1; next} on && NF == 0 {exit} on {print $2}' report.txt | sort | tr '\n' ' ')
[ "$names" = "base clip " ] || fail "the first table holds the base value's variants: $names"
grep -q "^Tuned: each arm at its own best lr:" report.txt || fail "no tuned section"
grep -q "^response: test_loss against train.lr, series clip$" report.txt || fail "no response along the tune axis"
for f in rep/report.md rep/index.html; do
  grep -q "Tuned: each arm at its own best lr" "$f" || fail "$f has no tuned section"
done
python3 - <<'PY' || fail "report.json's tuned section is wrong"
import json
r = json.load(open("rep/report.json"))
t = r["tuned"]
assert t["keys"] == ["train.lr"] and t["base_value"] == 0.003, t
assert [a["arm"] for a in t["arms"]] == ["base", "clip"], t["arms"]
assert sorted(a["arm"] if "arm" in a else a["name"] for a in t["at_best"]) == ["base", "clip"], t["at_best"]
clip = [a for a in t["arms"] if a["arm"] == "clip"][0]
assert clip["variants"] == ["clip+lr=1.5e-3", "clip", "clip+lr=6e-3", "clip+lr=1.2e-2"], clip["variants"]
assert clip["outcome"] in ("agrees", "confounded", "extend the grid", "no result"), clip
assert clip["verdict_at_base"] == [v for v in r["variants"] if v["name"] == "clip"][0]["verdict"], clip
best = [v for v in t["at_best"] if v["name"] == "clip"][0]
assert best["seeds"] == 3 and best["method"] == "paired", best
# the file's better_by, recorded with the sweep: tested at the base value and at each arm's best
assert r["design"]["better_by"] == 0.001 and r["design"]["better_by_alpha"] == 0.05, r["design"]
for v in r["variants"] + t["at_best"]:
    assert "p_better_by_holm" in v and v["better_by"] == (v["verdict"] == "better" and v["p_better_by_holm"] < 0.05), v
print("tuned report.json: ok")
PY
"$SWEEP" calibrate --tune --replicates 20 --interventions 2 > calibration.md || fail "calibrate --tune: $(cat calibration.md)"
grep -q "| the baseline's bowl | 0 | fixed, 3 seeds |" calibration.md || fail "calibrate --tune: $(cat calibration.md)"
"$SWEEP" calibrate --tune --replicates 10 --interventions 2 --better-by 0.002 > calibration.md ||
  fail "calibrate --tune --better-by: $(cat calibration.md)"
grep -q "^- deeper by 2δ, true difference 0.01 (> m), fixed, 3 seeds: [0-9.]* ± [0-9.]* per arm" calibration.md ||
  fail "calibrate --tune --better-by: no margin claims: $(cat calibration.md)"
"$SWEEP" calibrate --tune --replicates 10 --interventions 2 --max-seeds 6 > calibration.md ||
  fail "calibrate --tune --max-seeds: $(cat calibration.md)"
grep -q "| the baseline's bowl | 0 | until decided (pocock), 3 to 6 seeds |" calibration.md ||
  fail "calibrate --tune --max-seeds: $(cat calibration.md)"
# a grid of its own (steps of √2) and the asymmetric bowls; a grid that is no list of numbers, or
# without the base value, refused
"$SWEEP" calibrate --tune --replicates 10 --interventions 2 --tune-grid=-1,-0.5,0,0.5,1,1.5,2 --asymmetry 3 > calibration.md ||
  fail "calibrate --tune-grid: $(cat calibration.md)"
grep -q "values 0.5×, 0.707107×, 1×, 1.41421×, 2×, 2.82843×, 4× the base value" calibration.md &&
  grep -q "| moved half a doubling down, 3× steeper above the best | 0 | fixed, 3 seeds |" calibration.md ||
  fail "calibrate --tune-grid: $(cat calibration.md)"
expect_rc 2 "$SWEEP" calibrate --tune --replicates 2 --tune-grid=-1,,1 2> err.txt
grep -q -- "--tune-grid -1,,1: '' is not a finite number" err.txt || fail "calibrate --tune-grid -1,,1: $(cat err.txt)"
expect_rc 2 "$SWEEP" calibrate --tune --replicates 2 --tune-grid=0,0,1,2 2> err.txt
grep -q "the value 0 is in the grid twice" err.txt || fail "calibrate --tune-grid 0,0,1,2: $(cat err.txt)"
expect_rc 2 "$SWEEP" calibrate --tune --replicates 2 --tune-grid=1,2,3 2> err.txt
grep -q "0, the base value, is not among them" err.txt || fail "calibrate --tune-grid 1,2,3: $(cat err.txt)"
for option in --sigma --curvature --asymmetry --run-sigma --min-effect; do  # no infinite noise, bowl or effect
  expect_rc 2 "$SWEEP" calibrate --tune --replicates 2 "$option" inf 2> err.txt
  grep -q "'inf' is not a finite number" err.txt || fail "calibrate --tune $option inf: $(cat err.txt)"
done

# Bad tune axes: file:line:col, nothing written
cp tune.yaml bad.yaml
sed -i 's/  train.lr: \[1.5e-3, 3e-3, 6e-3, 1.2e-2\]/  train.lr: [3e-3, 6e-3]/' bad.yaml
expect_rc 2 "$SWEEP" run bad.yaml --results bad_res 2> err.txt
grep -q "bad.yaml:15:13: tune axis 'train.lr' has 2 values" err.txt || fail "two values: $(cat err.txt)"
[ ! -e bad_res ] || fail "a refused sweep wrote bad_res"
echo "tune_report: ok"
