# A trainer of the user's own (tests/data/trainers/toy-trainer.sh, a bash script that prints
# sweep's events from a known loss curve) run by `sweep run`: its keys checked before anything
# runs, placeholders and SWEEP_* variables filled in, seeds paired, the report's numbers the
# known ones; its run ids follow its file's contents; malformed events go to the log; SIGTERM
# checkpoints and resumes; kill -9 of the trainer and of the scheduler, a stall and an end
# without a test loss are classified as documented; two ranks get torchrun's variables.
source "$(dirname "$0")/lib.bash"
command -v sqlite3 >/dev/null || fail "sqlite3 is needed (apt-get install sqlite3)"
cp "$(dirname "$0")/../data/trainers/toy-trainer.sh" .

own_sweep() {  # own_sweep FILE NAME [extra intervention lines...]
  local file=$1 name=$2; shift 2
  {
    echo "sweep: $name"
    echo "baseline: base"
    echo "seeds: [1, 2, 3]"
    echo "min_effect: 0.01"
    echo "trainer:"
    echo "  name: toy"
    echo "  command: [./toy-trainer.sh, \"{train.effect}\", \"{train.steps}\", \"{train.mode}\"]"
    echo "  files: [toy-trainer.sh]"
    echo "  keys:"
    echo "    train.effect: 0.0"
    echo "    train.steps: {type: int, default: 12, min: 1}"
    echo "    train.mode: {type: choice, choices: [plain, garble, stall, crash, no-test, slow, noisy], default: plain}"
    echo "    model.width: {type: choice, choices: [narrow, wide], default: narrow}"
    echo "base:"
    echo "  train: {steps: 12}"
    echo "interventions:"
    echo "  base: {}"
    for line in "$@"; do echo "  $line"; done
  } > "$file"
}

# ---- the report: the known effects, paired by seed ----
own_sweep a.yaml own "better: {train.effect: 0.05}" "same: {model.width: wide}"
"$SWEEP" run a.yaml --results res --devices cpu:2x1 > run.txt || fail "own trainer: $(cat run.txt)"
"$SWEEP" report own --results res --out rep --format json > rep.json 2> err.txt || fail "report: $(cat err.txt)"
python3 - <<'PY' || fail "the report of the toy trainer: $(cat rep.json)"
import json
r = json.load(open("rep.json"))
v = {x["name"]: x for x in r["variants"]}
assert v["better"]["method"] == "paired" and abs(v["better"]["improvement"] - 0.05) < 1e-9, v["better"]
assert v["better"]["verdict"] == "better", v["better"]
assert abs(v["same"]["improvement"]) < 1e-12 and v["same"]["verdict"] == "equivalent", v["same"]
# the base's seeds: 3 + (s·7919 mod 13)/1000
for d in v["base"]["runs_detail"]:
    s = d["init_seed"]
    assert abs(d["value"] - (3 + (s * 7919 % 13) / 1000)) < 1e-9, d
    assert d["code"] == [r["code"].split("trained by ")[1]], (d["code"], r["code"])
assert r["code"].startswith("code: trained by trainer toy@"), r["code"]
assert any("sweep did not verify its equivalences" in n for n in r["notes"]), r["notes"]
print("own trainer report: ok")
PY
run=$(ls res/runs | sed -n 1p)
for f in config.yaml config.json events.jsonl worker.log checkpoint; do
  [ -e "res/runs/$run/$f" ] || fail "no $f in a run folder of an own trainer"
done
grep -q "the trainer's own output: not an event" "res/runs/$run/worker.log" || fail "plain output not in worker.log"
python3 -c "import json; c = json.load(open('res/runs/$run/config.json')); assert c['model']['width'] in ('narrow', 'wide') and 'init' in c['seeds'], c" ||
  fail "config.json: $(cat "res/runs/$run/config.json")"

# ---- the database deleted: `sweep ingest` rebuilds it, the trainer's sweep included ----
cp res/sweep.db saved.db
rm res/sweep.db*
"$SWEEP" ingest res > ingest.txt 2>&1 || fail "ingest of an own trainer's results: $(cat ingest.txt)"
"$SWEEP" report own --results res --out rep2 --format json > rep2.json 2>/dev/null || fail "report after ingest: $(cat ingest.txt)"
python3 -c "
import json; v = {x['name']: x for x in json.load(open('rep2.json'))['variants']}
assert abs(v['better']['improvement'] - 0.05) < 1e-9 and v['better']['verdict'] == 'better', v" || fail "after ingest"

# ---- identity: the trainer's file changes, every run id changes; back, the same ids ----
"$SWEEP" plan a.yaml --results res > plan1.txt
echo "# a comment" >> toy-trainer.sh
"$SWEEP" plan a.yaml --results res > plan2.txt
[ "$(grep -c ' done ' plan1.txt)" -eq 9 ] || fail "plan: $(cat plan1.txt)"
[ "$(grep -c ' pending ' plan2.txt)" -eq 9 ] || fail "a changed trainer file must change the run ids: $(cat plan2.txt)"
sed -i '$ d' toy-trainer.sh
"$SWEEP" plan a.yaml --results res > plan3.txt
cmp -s plan1.txt plan3.txt || fail "the same file must give the same ids: $(diff plan1.txt plan3.txt)"
# a run planned before its trainer changed (queued, retried) refuses to train under its old id
run1=$(awk '$1 == "base" && $2 == "1" {print $3}' plan1.txt)
echo "# edited" >> toy-trainer.sh
expect_rc 2 "$SWEEP" worker "res/runs/$run1/config.yaml" --run-dir "res/runs/$run1" --resume 2> edited.txt
grep -q "toy-trainer.sh has changed since this run was planned" edited.txt || fail "$(cat edited.txt)"
sed -i '$ d' toy-trainer.sh

# ---- grid and tune axes over the trainer's own keys: points named by their values, a tuned best ----
own_sweep grid.yaml ownsgrid "better: {train.effect: 0.05}"
printf 'grid:\n  train.steps: [12, 24]\n' >> grid.yaml
"$SWEEP" plan grid.yaml --results res3 > grid.txt 2>&1 || fail "a grid of an own trainer's key: $(cat grid.txt)"
[ "$(awk '$4 == "pending" {print $1}' grid.txt | sort -u | tr '\n' ' ')" = "base better better+steps=24 steps=24 " ] ||
  fail "the grid's points are named by the trainer's values: $(cat grid.txt)"
sed -i 's/^  train.steps: \[12, 24\]$/  resources.ranks: [1, 2]/' grid.yaml  # resources, beside the trainer's keys
"$SWEEP" plan grid.yaml --results res3 > grid.txt 2>&1 || fail "a grid of resources.ranks: $(cat grid.txt)"
[ "$(awk '$4 == "pending" {print $1}' grid.txt | sort -u | tr '\n' ' ')" = "base better better+ranks=2 ranks=2 " ] ||
  fail "the grid's points are named by the resources too: $(cat grid.txt)"
own_sweep tune.yaml ownstune "wide: {model.width: wide}"
sed -i 's/^  train: {steps: 12}$/  train: {steps: 12, effect: 0.02}/' tune.yaml
printf 'tune:\n  train.effect: [0.01, 0.02, 0.04]\n' >> tune.yaml
"$SWEEP" run tune.yaml --results res3 --devices cpu:2x1 > tune.txt || fail "a tune of an own trainer's key: $(cat tune.txt)"
"$SWEEP" report ownstune --results res3 --out tunerep > /dev/null 2> err.txt || fail "the tuned report: $(cat err.txt)"
python3 - <<'PY' || fail "the tuned report of an own trainer: $(cat tunerep/report.json)"
import json
t = json.load(open("tunerep/report.json"))["tuned"]
assert t["keys"] == ["train.effect"] and t["base_value"] == 0.02, t
wide = [a for a in t["arms"] if a["arm"] == "wide"][0]
assert wide["variants"] == ["wide+effect=0.01", "wide", "wide+effect=0.04"], wide
assert t["arms"][0]["variants"] == ["effect=0.01", "base", "effect=0.04"], t["arms"][0]  # by value, the baseline's too
# the loss falls with the effect: each arm's best is the largest value tried, at the grid's edge
assert all(abs(a["best"] - 0.04) < 1e-9 and a["outcome"] == "extend the grid" for a in t["arms"]), t["arms"]
assert [a["name"] for a in t["at_best"]] == ["base", "wide"] and t["at_best"][1]["verdict"] == "equivalent", t["at_best"]
print("own trainer, grid and tune: ok")
PY

# ---- bad input: an undeclared key, a wrong type, an unknown placeholder, a missing file ----
own_sweep bad.yaml bad "typo: {train.efect: 0.1}" "wrong: {train.steps: many}"
expect_rc 2 "$SWEEP" run bad.yaml --results res2 2> bad.txt
grep -q "bad.yaml:18:10: unknown key 'train.efect': the trainer does not declare it — did you mean 'train.effect'?" bad.txt ||
  fail "undeclared key: $(cat bad.txt)"
grep -q "bad.yaml:19:11: 'train.steps' must be a whole number, got many" bad.txt || fail "wrong type: $(cat bad.txt)"
sed 's/{train.mode}/{train.mood}/; s/files: \[toy-trainer.sh\]/files: [toy-trainer.sh, missing.py]/' a.yaml > bad2.yaml
expect_rc 2 "$SWEEP" run bad2.yaml --results res2 2> bad2.txt
grep -q "unknown placeholder {train.mood} — did you mean {train.mode}?" bad2.txt || fail "placeholder: $(cat bad2.txt)"
grep -q "'trainer.files': no file .*missing.py" bad2.txt || fail "missing file: $(cat bad2.txt)"
sed 's|\./toy-trainer.sh,|./no-such-trainer,|' a.yaml > bad3.yaml
expect_rc 2 "$SWEEP" run bad3.yaml --results res2 2> bad3.txt
grep -q "./no-such-trainer is not an executable file" bad3.txt || fail "a missing command: $(cat bad3.txt)"
sed 's|\./toy-trainer.sh,|"",|' a.yaml > bad4.yaml
expect_rc 2 "$SWEEP" run bad4.yaml --results res2 2> bad4.txt
grep -q "bad4.yaml:[0-9]*:[0-9]*: 'trainer.command': its first part, the program, is empty" bad4.txt ||
  fail "an empty program: $(cat bad4.txt)"
sed 's|choices: \[narrow, wide\]|choices: [narrow, wide, 1, "1", 1.0]|' a.yaml > bad5.yaml
expect_rc 2 "$SWEEP" run bad5.yaml --results res2 2> bad5.txt
grep -q "key 'model.width': the choice '1' is listed twice — remove one" bad5.txt || fail "duplicate choices: $(cat bad5.txt)"
[ ! -e res2 ] || fail "refused sweeps left a results folder"

# ---- malformed events go to the log, the run still counts; an end without a test loss fails, not retried ----
own_sweep m.yaml messy "garbled: {train.mode: garble}" "no-test: {train.mode: no-test}"
"$SWEEP" run m.yaml --results res --devices cpu:2x1 > m.txt && fail "a run without a test loss should fail the sweep: $(cat m.txt)"
garbled=$(awk '$1 == "garbled" && $2 == "1" {print $3}' <<< "$("$SWEEP" plan m.yaml --results res)")
grep -q 'sweep: not an event (train event: "step" must be a whole number' "res/runs/$garbled/worker.log" ||
  fail "a malformed event is not in the log: $(cat "res/runs/$garbled/worker.log")"
grep -q 'sweep: not an event ("event" must be one of' "res/runs/$garbled/worker.log" || fail "an unknown event type"
grep -q "\[cut: a line longer than 262144 bytes\]" "res/runs/$garbled/worker.log" || fail "a 300 KB line was not cut into the log"
! grep -q '"pad"' "res/runs/$garbled/events.jsonl" || fail "an over-long line was taken for an event"
grep -q 'sweep: not an event (malformed JSON: .*number overflow parsing .1e400.*): {"event":"eval"' "res/runs/$garbled/worker.log" ||
  fail "a loss of 1e400 is not said in the log: $(grep 1e400 "res/runs/$garbled/worker.log")"
grep -q "sweep: not an event (nested deeper than 64 arrays and objects)" "res/runs/$garbled/worker.log" ||
  fail "a line 100,000 arrays deep is not refused in the log"
! grep -q '"deep"' "res/runs/$garbled/events.jsonl" || fail "a line 100,000 arrays deep was taken for an event"
# the same line in a run folder `sweep ingest` reads: skipped like a malformed line, nothing crashes
printf '{"event":"train","step":3,"tokens":128,"loss":1,"deep":%s%s}\n' "$(head -c 100000 /dev/zero | tr '\0' '[')" \
  "$(head -c 100000 /dev/zero | tr '\0' ']')" >> "res/runs/$garbled/events.jsonl"
"$SWEEP" ingest res > ingest-deep.txt 2>&1 || fail "ingest of a folder with a line 100,000 deep: $(tail -3 ingest-deep.txt)"
[ "$(sql "SELECT status FROM runs WHERE run_id = '$garbled'")" = done ] || fail "after ingesting the deep line"
[ "$(sql "SELECT status FROM runs WHERE run_id = '$garbled'")" = done ] || fail "the garbled run is not done"
notest=$(awk '$1 == "no-test" && $2 == "1" {print $3}' <<< "$("$SWEEP" plan m.yaml --results res)")
[ "$(sql "SELECT status, attempts FROM runs WHERE run_id = '$notest'")" = "failed|1" ] ||
  fail "an end without a test loss: $(sql "SELECT status, attempts, error FROM runs WHERE run_id = '$notest'")"
grep -q "without a test_loss" <<< "$(sql "SELECT error FROM runs WHERE run_id = '$notest'")" || fail "its error does not say why"

# ---- SIGTERM: the trainer checkpoints, the run is re-queued and resumes from its checkpoint ----
own_sweep p.yaml preempt "slow: {train.mode: slow}"
"$SWEEP" run p.yaml --results res --devices cpu:2x1 > p.txt &
sched=$!
victim=$(awk '$1 == "slow" && $2 == "1" {print $3}' <<< "$("$SWEEP" plan p.yaml --results res)")
wait_for_train_events "res/runs/$victim/events.jsonl" 4
kill -TERM "$(worker_pid "$victim")"
wait "$sched" || fail "the sweep should finish after a preemption: $(cat p.txt)"
grep -q "preempted slow seed 1 .* at step [0-9]*: re-queued" p.txt || fail "not re-queued: $(cat p.txt)"
[ "$(grep -c '"resumed":true' "res/runs/$victim/events.jsonl")" -ge 1 ] || fail "the trainer did not resume"
[ "$(sql "SELECT COUNT(*) FROM segments WHERE run_id = '$victim' AND step > 0")" -ge 1 ] || fail "no segment from a step > 0"
[ "$(sql "SELECT status FROM runs WHERE run_id = '$victim'")" = done ] || fail "the preempted run did not finish"

# ---- kill -9 of the trainer: a crash, retried; kill -9 of the scheduler: the same command resumes ----
own_sweep k.yaml kills "crashy: {train.mode: crash}" "slow: {train.mode: slow}"
"$SWEEP" run k.yaml --results res --devices cpu:2x1 > k1.txt &
sched=$!
slow=$(awk '$1 == "slow" && $2 == "2" {print $3}' <<< "$("$SWEEP" plan k.yaml --results res)")
wait_for_train_events "res/runs/$slow/events.jsonl" 3
kill -9 "$sched"
wait "$sched" 2>/dev/null || true
run_after_kill k2.txt k.yaml --results res --devices cpu:2x1 || fail "after kill -9 of the scheduler: $(cat k1.txt k2.txt)"
grep -q "retrying from" k1.txt k2.txt || fail "the crashing trainer was not retried: $(cat k1.txt k2.txt)"
[ "$(sql "SELECT COUNT(*) FROM runs r JOIN sweep_runs s ON s.run_id = r.run_id WHERE s.sweep = 'kills' AND r.status = 'done'")" -eq 9 ] ||
  fail "not all done: $(sql "SELECT run_id, status, error FROM runs")"
check_database

# ---- a stall: killed by the watchdog, retried, finished ----
own_sweep s.yaml stalls "stuck: {train.mode: stall}"
"$SWEEP" run s.yaml --results res --devices cpu:2x1 --stall-timeout 2 > s.txt || fail "stalled trainer: $(cat s.txt)"
grep -q "no event for .*stall timeout 2 s.*killed, retrying from" s.txt || fail "no stall: $(cat s.txt)"

# ---- sweep check: an A/A check of the trainer, deterministic or not ----
"$SWEEP" check a.yaml --results res --devices cpu:2x1 > check.txt || fail "sweep check: $(cat check.txt)"
grep -q "deterministic given its seeds: every repeat equals its twin to the last digit" check.txt || fail "$(cat check.txt)"
[ "$(grep -c ' identical$' check.txt)" -eq 3 ] || fail "3 seeds, each identical twice: $(cat check.txt)"
sed 's/  train: {steps: 12}/  train: {steps: 12, mode: noisy}/; s/sweep: own/sweep: noisy/' a.yaml > n.yaml
"$SWEEP" check n.yaml --results res --devices cpu:2x1 --seeds 4 > ncheck.txt || fail "sweep check: $(cat ncheck.txt)"
grep -q "not deterministic given its seeds: twins differ by up to .*σ_repeat = .* against σ_seed = .* (4 seeds)" ncheck.txt ||
  fail "a noisy trainer: $(cat ncheck.txt)"

# ---- a ladder of a trainer of your own: rungs placed by the params it reports × the tokens it trained ----
cat > l.yaml <<'YAML'
sweep: ownladder
baseline: base
seeds: [1, 2, 3]
min_effect: 0.01
trainer:
  command: [./toy-trainer.sh, "{train.effect}", "{train.steps}", plain, "{model.params}"]
  files: [toy-trainer.sh]
  keys: {train.effect: 0.0, train.steps: 12, model.params: 1000}
scale:
  rungs:
    s: {model.params: 1000, train.steps: 6}
    m: {model.params: 4000, train.steps: 12}
    l: {model.params: 16000, train.steps: 24}
  target: {flops: 1e10}
base: {}
interventions: {base: {}, better: {train.effect: 0.05}}
YAML
"$SWEEP" run l.yaml --results res --devices cpu:2x1 > l.txt || fail "a ladder of an own trainer: $(cat l.txt)"
"$SWEEP" report ownladder --results res --out lrep --format json > lrep.json || fail "its report"
python3 - <<'PY' || fail "the own trainer's ladder: $(cat lrep.json)"
import json
l = json.load(open("lrep.json"))["ladder"]
assert [r["flops"] for r in l["rungs"]] == [6 * 1000 * 384, 6 * 4000 * 768, 6 * 16000 * 1536], l["rungs"]
(t,) = l["trends"]
assert t["verdict"] == "holds" and abs(t["at_target"] - 0.05) < 1e-9, t
print("own trainer ladder: ok")
PY
sed 's/  target: {flops: 1e10}/  tokens_per_param: 1/' l.yaml > l2.yaml
expect_rc 2 "$SWEEP" run l2.yaml --results res 2> l2.txt
grep -q "l2.yaml:.*scale.tokens_per_param needs each rung's parameters before it runs" l2.txt || fail "$(cat l2.txt)"

# ---- two ranks: torchrun's variables, rank 0's events ----
cat > ranks.sh <<'SH'
#!/bin/bash
echo "rank $RANK of $WORLD_SIZE at $MASTER_ADDR:$MASTER_PORT local $LOCAL_RANK" >&2
[ "$RANK" = 0 ] || { echo "rank $RANK's stdout"; exit 0; }
echo '{"event":"start","step":0,"total_steps":1}'
echo '{"event":"train","step":1,"tokens":8,"loss":2.5}'
echo "{\"event\":\"end\",\"status\":\"done\",\"step\":1,\"test_loss\":2.$SWEEP_INIT_SEED}"
SH
chmod +x ranks.sh
cat > r.yaml <<'YAML'
sweep: ranked
baseline: base
seeds: [1, 2]
trainer: {command: [./ranks.sh], files: [ranks.sh], keys: {x: 1}}
base: {resources: {ranks: 2}}
interventions: {base: {}, other: {x: 2}}
YAML
"$SWEEP" run r.yaml --results res --devices cpu:2x1 > r.txt || fail "two ranks: $(cat r.txt)"
one=$(awk '$1 == "base" && $2 == "1" {print $3}' <<< "$("$SWEEP" plan r.yaml --results res)")
grep -q "rank 1 of 2 at 127.0.0.1:[0-9]* local 1" "res/runs/$one/worker.log" || fail "rank 1's environment: $(cat "res/runs/$one/worker.log")"
grep -q "\[rank 1\] rank 1's stdout" "res/runs/$one/worker.log" || fail "rank 1's stdout is not in the log"
check_database
echo "own_trainer: ok"
