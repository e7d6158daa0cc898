# How a run of a trainer of your own ends, when the program breaks the events contract
# (docs/reference.md, "the order of events"): the first end event is the run's result — a
# second end (done 99 after done 3.x, failed after done) is ignored and said in the log; a
# program that hangs after its done is killed by the watchdog and the run stays done; a done
# before the start is a contract breach: the program is stopped and the run retried; train
# steps that go backwards and a second start are ignored; an end past total_steps (nanoGPT's loop
# ends at max_iters + 1) is the run's end, in `sweep run` and `sweep ingest` alike. Real processes, the real scheduler,
# the results read from the real database.
source "$(dirname "$0")/lib.bash"
command -v sqlite3 >/dev/null || fail "sqlite3 is needed (apt-get install sqlite3)"

cat > ends.sh <<'SH'
#!/bin/bash
# ends.sh MODE: a run of 3 steps whose test loss is 3.SEED, misbehaving as MODE says
mode=$1 loss=3.$SWEEP_INIT_SEED
start='{"event":"start","step":0,"total_steps":3,"tokens_per_step":8}'
steps() { for s in 1 2 3; do echo "{\"event\":\"train\",\"step\":$s,\"tokens\":$((s * 8)),\"loss\":$loss}"; done; }
done_='{"event":"end","status":"done","step":3,"test_loss":'$loss'}'
case $mode in
  plain) echo "$start"; steps; echo "$done_" ;;
  redone) echo "$start"; steps; echo "$done_"; echo '{"event":"end","status":"failed","reason":"x"}'
          echo '{"event":"end","status":"done","step":3,"test_loss":99}' ;;
  done-then-fail) echo "$start"; steps; echo "$done_"; echo '{"event":"end","status":"failed","reason":"x"}'; exit 1 ;;
  done-then-hang) echo "$start"; steps; echo "$done_"; sleep 1000 ;;
  done-first)  # once: a done before the start, then (if not stopped) a whole run
    if [ ! -f "$SWEEP_RUN_DIR/breached" ]; then
      touch "$SWEEP_RUN_DIR/breached"
      echo '{"event":"end","status":"done","step":3,"test_loss":1.0}'
      sleep 5
    fi
    echo "$start"; steps; echo "$done_" ;;
  backwards) echo "$start"; steps; echo '{"event":"train","step":2,"tokens":16,"loss":50}'
             echo '{"event":"start","step":0,"total_steps":3}'; echo "$done_" ;;
  end-past) echo "$start"; steps; echo '{"event":"end","status":"done","step":4,"test_loss":'$loss'}' ;;  # nanoGPT's loop end
esac
SH
chmod +x ends.sh
cat > e.yaml <<'YAML'
sweep: ends
baseline: plain
seeds: [1, 2]
trainer:
  command: [./ends.sh, "{mode}"]
  files: [ends.sh]
  keys:
    mode: {type: choice, choices: [plain, redone, done-then-fail, done-then-hang, done-first, backwards, end-past], default: plain}
base: {}
interventions:
  plain: {}
  redone: {mode: redone}
  done-then-fail: {mode: done-then-fail}
  done-then-hang: {mode: done-then-hang}
  done-first: {mode: done-first}
  backwards: {mode: backwards}
  end-past: {mode: end-past}
YAML
"$SWEEP" run e.yaml --results res --devices cpu:2x1 --stall-timeout 3 > run.txt 2>&1 || fail "the sweep: $(cat run.txt)"
"$SWEEP" plan e.yaml --results res > plan.txt
id() { awk -v v="$1" '$1 == v && $2 == "1" {print $3}' plan.txt; }
for v in plain redone done-then-fail done-then-hang done-first backwards end-past; do
  r=$(id "$v")
  [ -n "$r" ] || fail "no run of $v in: $(cat plan.txt)"
  [ "$(sql "SELECT status, test_loss FROM runs WHERE run_id = '$r'")" = "done|3.1" ] ||
    fail "$v: $(sql "SELECT status, test_loss, attempts, error FROM runs WHERE run_id = '$r'") — $(cat "res/runs/$r/worker.log")"
done
log() { cat "res/runs/$(id "$1")/worker.log"; }
grep -q 'sweep: ignored (after the run.s end event "done", which is its result): {"event":"end","status":"done","step":3,"test_loss":99}' <<< "$(log redone)" ||
  fail "the second done is not said in the log: $(log redone)"
grep -q 'sweep: ignored (after the run.s end event "done", which is its result): {"event":"end","status":"failed"' <<< "$(log done-then-fail)" ||
  fail "the failed end after done: $(log done-then-fail)"
grep -q 'the trainer exited 1 after its end event "done": the run counts as done' <<< "$(log done-then-fail)" || fail "$(log done-then-fail)"
hang=$(id done-then-hang)
grep -q 'after its end event "done" the worker stalled (.*) and was killed: the result stands' <<< "$(sql "SELECT error FROM runs WHERE run_id = '$hang'")" ||
  fail "a kill after done is not said: $(sql "SELECT error FROM runs WHERE run_id = '$hang'")"
first=$(id done-first)
[ "$(sql "SELECT attempts FROM runs WHERE run_id = '$first'")" = 2 ] || fail "a done before the start is retried once: $(cat run.txt)"
grep -q "contract breach: an end event \"done\" before the run's \"start\" — stopped; the run is retried" <<< "$(log done-first)" ||
  fail "the breach is not said: $(log done-first)"
grep -q 'sweep: ignored (step 2 after step 3: steps go forward)' <<< "$(log backwards)" || fail "steps backwards: $(log backwards)"
grep -q 'sweep: ignored (a second start event from one program)' <<< "$(log backwards)" || fail "a second start: $(log backwards)"
[ "$(sql "SELECT MAX(loss) FROM metrics WHERE run_id = '$(id backwards)' AND split = 'train'")" = 3.1 ] || fail "a step backwards was recorded"
# the report: every variant the same as the baseline, none a verdict from a stray line
"$SWEEP" report ends --results res --out rep --format json > rep.json 2> err.txt || fail "report: $(cat err.txt)"
python3 - <<'PY' || fail "the report: $(cat rep.json)"
import json
v = {x["name"]: x for x in json.load(open("rep.json"))["variants"]}
for name in ("redone", "done-then-fail", "done-then-hang", "done-first", "backwards", "end-past"):
    assert abs(v[name]["improvement"]) < 1e-12, (name, v[name]["improvement"])
print("ends report: ok")
PY
# the same folders ingested again: the same results (events.jsonl holds what the host took)
rm res/sweep.db*
"$SWEEP" ingest res > ingest.txt 2>&1 || fail "ingest: $(cat ingest.txt)"
[ "$(sql "SELECT COUNT(*) FROM runs WHERE status = 'done' AND test_loss IN (3.1, 3.2)")" = 14 ] ||
  fail "after ingest: $(sql "SELECT run_id, status, test_loss FROM runs")"
# a folder holding what no host wrote — done 3.1 then done 99, a done before any start — read
# by `sweep ingest` in the same order the host keeps
r=$(id redone)
echo '{"event":"end","status":"done","step":3,"test_loss":99}' >> "res/runs/$r/events.jsonl"
b=$(id done-first)
sed -i '1i {"event":"end","status":"done","step":3,"test_loss":1.0,"time":1}' "res/runs/$b/events.jsonl"
grep -v '"event":"start"' "res/runs/$b/events.jsonl" > tmp && mv tmp "res/runs/$b/events.jsonl"
rm res/sweep.db*
"$SWEEP" ingest res > ingest2.txt 2>&1 || fail "ingest: $(cat ingest2.txt)"
[ "$(sql "SELECT status, test_loss FROM runs WHERE run_id = '$r'")" = "done|3.1" ] || fail "ingest took a second done"
[ "$(sql "SELECT status FROM runs WHERE run_id = '$b'")" = failed ] ||
  fail "ingest of a done before any start: $(sql "SELECT status, test_loss, error FROM runs WHERE run_id = '$b'")"
grep -q "contract breach" <<< "$(sql "SELECT error FROM runs WHERE run_id = '$b'")" || fail "its error does not say why"
check_database
echo "own_trainer_ends: ok"
