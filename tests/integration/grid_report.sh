# Grid and zip sweeps end to end: `sweep run` then `sweep report` — the baseline found under its
# bare name, every variant named by what it changes, the response of the test loss to the axis
# (table, best value with its CI, response.svg), and a zip that keeps the global batch
# (micro-batch × accumulation) giving the same losses: accumulation equals a bigger micro-batch.
source "$(dirname "$0")/lib.bash"
prepare_bytes

cat > grid.yaml <<'YAML'
sweep: gridded
baseline: base
seeds: [1, 2, 3]
base:
  data: {dataset: data/bytes}
  model: {n_layer: 1, n_head: 2, n_embd: 32, block_size: 32, dropout: 0.0}
  train: {micro_batch: 4, grad_accum: 2, tokens: 16K, lr: 3e-3, precision: fp32}
  eval: {every: 0, val_tokens: 2K}
interventions:
  base: {}
  clip: {train.grad_clip: 0.5}
grid:
  train.grad_accum: [1, 2, 4]
YAML
"$SWEEP" run grid.yaml --results res --devices cpu:2x1 > run.txt || fail "grid sweep: $(cat run.txt)"
"$SWEEP" report gridded --results res --out rep > report.txt 2> err.txt || fail "grid report: $(cat report.txt err.txt)"
cat report.txt
names=$(awk '$1 == "#" {on = 1; next} on && NF == 0 {exit} on {print $2}' report.txt | sort | tr '\n' ' ')
[ "$names" = "base clip clip+grad_accum=1 clip+grad_accum=4 grad_accum=1 grad_accum=4 " ] || fail "variant names: $names"
grep -q "^response: test_loss against batch size (sequences) (train.grad_accum), series base$" report.txt ||
  fail "no response table for the base series"
grep -q "^response: .*series clip$" report.txt || fail "no response table for the clip series"
grep -qE "^  best batch size \(sequences\): (at or below )?[0-9.]+.* 2000 bootstrap resamples of the 3 seeds" report.txt ||
  fail "no best batch size with its CI"
[ -s rep/response.svg ] || fail "no response.svg"
python3 - <<'PY' || fail "report.json responses or response.svg are wrong"
import json, xml.etree.ElementTree as ET
r = json.load(open("rep/report.json"))
assert [x["series"] for x in r["responses"]] == ["base", "clip"], r["responses"]
for x in r["responses"]:
    assert [p["x"] for p in x["points"]] == [4, 8, 16], x["points"]
    assert all(len(p["values"]) == 3 for p in x["points"])
    assert x["fit"]["fitted"] and x["fit"]["seeds"] == 3 and x["fit"]["resamples"] == 2000, x["fit"]
    assert x["fit"]["ci_low"] <= x["fit"]["best"] <= x["fit"]["ci_high"], x["fit"]
root = ET.parse("rep/response.svg").getroot()
plots = [g for g in root.iter("{http://www.w3.org/2000/svg}g") if g.get("id", "").startswith("gnuplot_plot_")]
assert len(plots) == 2 * 3, len(plots)  # per series: its seeds, its means with CIs, its fitted curve
print("grid responses and response.svg: ok")
PY

cat > zip.yaml <<'YAML'
sweep: zipped
baseline: base
seeds: [1, 2]
base:
  data: {dataset: data/bytes}
  model: {n_layer: 1, n_head: 2, n_embd: 32, block_size: 32, dropout: 0.0}
  train: {micro_batch: 8, grad_accum: 1, tokens: 16K, lr: 3e-3, precision: fp32}
  eval: {every: 0, val_tokens: 2K}
interventions:
  base: {}
zip:
  train.micro_batch: [8, 4, 2]
  train.grad_accum: [1, 2, 4]
YAML
"$SWEEP" run zip.yaml --results res --devices cpu:2x1 > zrun.txt || fail "zip sweep: $(cat zrun.txt)"
"$SWEEP" report zipped --results res --out zrep --format json > zrep.json 2> zerr.txt || fail "zip report: $(cat zerr.txt)"
python3 - <<'PY' || fail "zip report: $(cat zrep.json)"
import json
r = json.load(open("zrep.json"))
assert sorted(v["name"] for v in r["variants"]) == ["base", "micro_batch=2+grad_accum=4", "micro_batch=4+grad_accum=2"]
for v in r["variants"]:
    assert v["method"] in ("", "paired"), v
    assert abs(v["improvement"]) < 1e-4, ("accumulation must equal the bigger micro-batch", v["name"], v["improvement"])
(x,) = r["responses"]
assert x["axis"] == "train.micro_batch" and [p["x"] for p in x["points"]] == [2, 4, 8], x
print("zip: same global batch, same loss: ok")
PY
echo "grid_report: ok"
