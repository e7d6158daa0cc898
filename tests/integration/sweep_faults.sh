# Faults, for real: kill -9 of the scheduler mid-sweep; kill -9 of a worker; a run that
# diverges and one that crashes (test-build fault hook) beside runs that complete; Ctrl-C.
source "$(dirname "$0")/lib.bash"
command -v sqlite3 >/dev/null || fail "sqlite3 is needed (apt-get install sqlite3)"
prepare_bytes

# ---- kill -9 of the scheduler, then the same command again ----
tiny_sweep a.yaml crashy 400 "nodrop: {model.dropout: 0.0}"
"$SWEEP" run a.yaml --results res --devices cpu:2x1 > run1.txt &
sched=$!
first=""
for _ in $(seq 1 600); do  # the scheduler creates the run directories when it starts them
  first=$(ls res/runs 2>/dev/null | sed -n 1p || true)
  [ -n "$first" ] && break
  sleep 0.05
done
[ -n "$first" ] || fail "no run started within 30 s: $(cat run1.txt)"
wait_for_train_events "res/runs/$first/events.jsonl" 60
kill -9 "$sched"
wait "$sched" 2>/dev/null || true
run_after_kill run2.txt a.yaml --results res --devices cpu:2x1 || fail "sweep run after kill -9 of the scheduler: $(cat run2.txt)"
grep -q "recovered" run2.txt || fail "the second run should recover the interrupted runs: $(cat run2.txt)"
[ "$(sql "SELECT COUNT(*) FROM runs WHERE status = 'done'")" -eq 4 ] || fail "all 4 runs done: $(sql 'SELECT run_id, status, error FROM runs')"
for d in res/runs/*; do
  [ "$(count '"status":"done"' "$d/events.jsonl")" -eq 1 ] || fail "$d finished more than once"
done
check_database

# ---- kill -9 of one worker: failed, retried from its checkpoint, complete curve ----
tiny_sweep b.yaml workerkill 400
"$SWEEP" plan b.yaml --results res > plan.txt
victim=$(awk '$1 == "base" && $2 == "1" {print $3}' plan.txt)
rm -rf "res/runs/$victim"   # shared with sweep crashy: train it again from scratch
sql "DELETE FROM metrics WHERE run_id = '$victim'; UPDATE runs SET status = 'pending', attempts = 0 WHERE run_id = '$victim'"
"$SWEEP" run b.yaml --results res --devices cpu:2x1 > run3.txt &
sched=$!
wait_for_train_events "res/runs/$victim/events.jsonl" 50
kill -9 "$(worker_pid "$victim")"
wait "$sched" || fail "the sweep should complete after a retry: $(cat run3.txt)"
grep -q "retrying from" run3.txt || fail "no retry: $(cat run3.txt)"
[ "$(sql "SELECT status || ' ' || attempts FROM runs WHERE run_id = '$victim'")" = "done 2" ] ||
  fail "victim: $(sql "SELECT status, attempts, error FROM runs WHERE run_id = '$victim'")"
grep -q '"resumed":true' "res/runs/$victim/events.jsonl" || fail "the retry should resume from the checkpoint"
check_database

# ---- a diverging run and a crashing run beside healthy ones ----
tiny_sweep c.yaml faults 40 "diverge: {train.lr: 1000.0, train.grad_clip: 0.0}" "crash: {train.weight_decay: 0.05}" \
  "oom: {train.weight_decay: 0.02}"
"$SWEEP" plan c.yaml --results res > plan.txt
crash=$(awk '$1 == "crash" && $2 == "1" {print $3}' plan.txt)
oom=$(awk '$1 == "oom" && $2 == "2" {print $3}' plan.txt)
mkdir -p "res/runs/$crash" "res/runs/$oom"
echo "crash_at_step:5" > "res/runs/$crash/test-fault"
echo "oom_at_step:7" > "res/runs/$oom/test-fault"
set +e; "$SWEEP" run c.yaml --results res --devices cpu:2x1 > run4.txt; rc=$?; set -e
[ "$rc" -eq 1 ] || fail "a sweep with a failed run exits 1, got $rc"
status_of() { sql "SELECT r.status FROM sweep_runs s JOIN runs r USING (run_id) WHERE s.sweep = 'faults' AND s.variant = '$1' AND r.init_seed = $2"; }
[ "$(status_of diverge 1)" = diverged ] && [ "$(status_of diverge 2)" = diverged ] || fail "diverge: $(status_of diverge 1)"
[ "$(status_of crash 1)" = failed ] || fail "crash: $(status_of crash 1)"
[ "$(status_of crash 2)" = done ] && [ "$(status_of base 1)" = done ] && [ "$(status_of base 2)" = done ] ||
  fail "the healthy runs must complete: $(sql 'SELECT variant, init_seed, status FROM sweep_runs JOIN runs USING (run_id) WHERE sweep = "faults"')"
[ "$(sql "SELECT attempts FROM runs WHERE run_id = '$crash'")" -eq 2 ] || fail "the crash is retried once"
[ "$(status_of oom 2)" = oom ] && [ "$(status_of oom 1)" = done ] || fail "oom: $(status_of oom 2)"
[ "$(sql "SELECT attempts FROM runs WHERE run_id = '$oom'")" -eq 1 ] || fail "out of memory is not retried blindly"
grep -q "test-fault: crashing at step 5" <<< "$(sql "SELECT error FROM runs WHERE run_id = '$crash'")" || fail "the log tail is kept"
# a crash after an earlier out-of-memory is a crash: only this attempt's log counts
echo "crash_at_step:9" > "res/runs/$oom/test-fault"
"$SWEEP" run c.yaml --results res --devices cpu:2x1 --retry-failed --retries 0 > run4b.txt || true
[ "$(status_of oom 2)" = failed ] ||
  fail "a crash after an OOM: $(status_of oom 2), $(sql "SELECT error FROM runs WHERE run_id = '$oom'")"
rm "res/runs/$crash/test-fault" "res/runs/$oom/test-fault"
"$SWEEP" run c.yaml --results res --devices cpu:2x1 --retry-failed > run5.txt
[ "$(status_of crash 1)" = done ] && [ "$(status_of oom 2)" = done ] || fail "--retry-failed: $(cat run5.txt)"

# ---- a worker started by hand on a run the scheduler trains: refused, the run untouched ----
tiny_sweep f.yaml manual 350  # runs of their own (the other sweeps share their base runs)
"$SWEEP" plan f.yaml --results res > plan.txt
victim=$(awk '$1 == "base" && $2 == "1" {print $3}' plan.txt)
"$SWEEP" run f.yaml --results res --devices cpu:1x1 > run10.txt &
sched=$!
wait_for_train_events "res/runs/$victim/events.jsonl" 20
trainer=$(worker_pid "$victim")
code=0
"$SWEEP" worker "res/runs/$victim/config.yaml" --run-dir "res/runs/$victim" --data data/bytes --resume > manual.txt 2>&1 ||
  code=$?
[ "$code" -eq 2 ] && grep -q "is being trained by another process (pid $trainer)" manual.txt ||
  fail "a second process on a run: exit $code, $(cat manual.txt)"
wait "$sched" || fail "the sweep beside a refused worker: $(cat run10.txt)"
[ "$(count '"event":"start"' "res/runs/$victim/events.jsonl")" -eq 1 ] || fail "the refused worker wrote events"
check_database
# ... and the other way round: a run trained by hand is followed (not failed, its slot kept), then taken up whole
tiny_sweep h.yaml byhand 1200
"$SWEEP" plan h.yaml --results res > plan.txt
victim=$(awk '$1 == "base" && $2 == "1" {print $3}' plan.txt)
"$SWEEP" run h.yaml --results res --devices cpu:2x1 > run13.txt 2>&1 &  # writes the run's config.yaml
sched=$!
wait_for_train_events "res/runs/$victim/events.jsonl" 20
kill -INT "$sched"; wait "$sched" || true
"$SWEEP" worker "res/runs/$victim/config.yaml" --run-dir "res/runs/$victim" --data data/bytes --resume \
  --set resources.threads=1 > /dev/null 2> byhand.txt &
byhand=$!
wait_for_train_events "res/runs/$victim/events.jsonl" 100
"$SWEEP" run h.yaml --results res --devices cpu:2x1 > run14.txt 2>&1 || fail "beside a run trained by hand: $(cat run14.txt)"
grep -q "wait  base seed 1 ($victim): another process (pid $byhand) trains it — followed" run14.txt ||
  fail "a run trained by hand not followed: $(cat run14.txt)"
grep -q "taken up base seed 1 ($victim): the process that trained it (pid $byhand) has ended" run14.txt &&
  grep -q "done  base seed 1 ($victim): trained outside this \`sweep run\`" run14.txt || fail "$(cat run14.txt)"
wait "$byhand" || fail "the run trained by hand: $(cat byhand.txt)"
[ "$(count '"event":"start"' "res/runs/$victim/events.jsonl")" -eq 2 ] || fail "another worker trained the held run"
check_database


# ---- kill -9 inside a checkpoint save, between its renames: the previous checkpoint, exactly ----
tiny_sweep g.yaml insave 300
"$SWEEP" plan g.yaml --results res > plan.txt
victim=$(awk '$1 == "base" && $2 == "1" {print $3}' plan.txt)
mkdir -p "res/runs/$victim" && echo "kill_in_save:40" > "res/runs/$victim/test-fault"
"$SWEEP" run g.yaml --results res --devices cpu:2x1 > run11.txt || true
grep -q "test-fault: killed inside the checkpoint save at step 40" "res/runs/$victim/worker.log" ||
  fail "the save was not killed: $(cat run11.txt)"
[ ! -e "res/runs/$victim/checkpoint/ckpt.pt" ] && [ -e "res/runs/$victim/checkpoint/ckpt.prev.pt" ] &&
  [ -n "$(find "res/runs/$victim/checkpoint" -name '.ckpt.pt.tmp.*')" ] ||
  fail "killed between the renames: $(ls -a "res/runs/$victim/checkpoint")"
rm "res/runs/$victim/test-fault"
"$SWEEP" run g.yaml --results res --devices cpu:2x1 --retry-failed > run12.txt || fail "after the kill: $(cat run12.txt)"
grep -q "ckpt.pt: missing — resumed from .*/ckpt.prev.pt at step 20" "res/runs/$victim/train.log" ||
  fail "no fallback said: $(cat "res/runs/$victim/train.log")"
[ -z "$(find "res/runs/$victim" -name '*.tmp.*')" ] || fail "the killed save's temporary file is left"
"$SWEEP" train "res/runs/$victim/config.yaml" --run-dir straight-insave --set resources.threads=1 > /dev/null 2>&1
[ "$(test_loss "res/runs/$victim")" = "$(test_loss straight-insave)" ] ||
  fail "after a kill inside a save: test loss $(test_loss "res/runs/$victim"), uninterrupted $(test_loss straight-insave)"
check_database

# ---- Ctrl-C: runs checkpoint and are recorded interrupted; the next run resumes them ----
# the target is 4× wider than the other runs (~16× the work a step), so that it is still training
# when each Ctrl-C arrives (the 32-wide run finished first on a loaded CI machine)
tiny_sweep d.yaml ctrlc 400 "nodrop2: {model.dropout: 0.0, train.lr: 2e-3, model.n_embd: 128}"
"$SWEEP" plan d.yaml --results res > plan.txt
target=$(awk '$1 == "nodrop2" && $2 == "1" {print $3}' plan.txt)
# ctrl_c_after LOG EVENTS: sweep run d.yaml, Ctrl-C once the target run's events.jsonl has EVENTS
# train events in all; sweep run must exit 130
ctrl_c_after() {
  "$SWEEP" run d.yaml --results res --devices cpu:2x1 > "$1" &
  local sched=$! rc
  wait_for_train_events "res/runs/$target/events.jsonl" "$2"
  kill -INT "$sched"
  set +e; wait "$sched"; rc=$?; set -e
  [ "$rc" -eq 130 ] || fail "Ctrl-C exit code $rc: $(cat "$1")"
}
ctrl_c_after run6.txt 30
[ "$(sql "SELECT status FROM runs WHERE run_id = '$target'")" = interrupted ] ||
  fail "after Ctrl-C: $(sql "SELECT status, error FROM runs WHERE run_id = '$target'")"
grep -q '"status":"preempted"' "res/runs/$target/events.jsonl" || fail "the worker should have checkpointed"
# ... and once more, so that the run is trained in three starts
ctrl_c_after run7.txt 60
"$SWEEP" run d.yaml --results res --devices cpu:2x1 > run7b.txt
[ "$(sql "SELECT COUNT(*) FROM sweep_runs JOIN runs USING (run_id) WHERE sweep = 'ctrlc' AND status = 'done'")" -eq 4 ] ||
  fail "after Ctrl-C and a new run: $(cat run7b.txt)"
[ "$(count '"resumed":true' "res/runs/$target/events.jsonl")" -eq 2 ] || fail "the interrupted run should resume twice"
check_database
# Its wall time sums the three starts (start event to the worker's last event each), its tokens/s is its tokens
# over the time of its own steps (each once: the steps trained again after a resume replace theirs).
[ "$(sql "SELECT COUNT(*) FROM segments WHERE run_id = '$target'")" -eq 3 ] || fail "three segments: $(sql "SELECT * FROM segments WHERE run_id = '$target'")"
python3 - "res/runs/$target/events.jsonl" "$(sql "SELECT wall_seconds, tokens_per_s, tokens FROM runs WHERE run_id = '$target'")" <<'PY' || fail "wall or tokens/s of the resumed run"
import json, sys
events = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
wall, rate, tokens = (float(x) for x in sys.argv[2].split("|"))
segments, steps = [], {}
for e in events:
    if e["event"] == "start":
        segments.append([e["time"], e["time"]])
    if e.get("by") != "sweep":  # the scheduler's end of an attempt says how it ended, not that it trained on
        segments[-1][1] = e["time"]
    if e["event"] == "train":
        steps[e["step"]] = e["tokens"] / e["step"] / e["tokens_per_s"]  # the last time a step ran counts
want_wall = sum(end - start for start, end in segments)
assert abs(wall - want_wall) < 1e-6, (wall, want_wall)
assert wall > segments[-1][1] - segments[-1][0], "wall must cover every start, not the last"
assert len(steps) == 400 and abs(rate - tokens / sum(steps.values())) < 1e-6 * rate, (rate, tokens, len(steps))
print("resumed twice: wall %.2f s over 3 starts, %.0f tokens/s" % (wall, rate))
PY
"$SWEEP" report ctrlc --results res --out rep-ctrlc > rep-ctrlc.txt 2>&1 || fail "report ctrlc: $(cat rep-ctrlc.txt)"
grep -q "had runs started more than once" rep-ctrlc.txt || fail "the report should say wall sums several starts: $(cat rep-ctrlc.txt)"
grep -q "^ctrlc,nodrop2,$target,1,1,0,done,.*,3,[0-9a-f]" rep-ctrlc/summary.csv || fail "summary.csv starts: $(cat rep-ctrlc/summary.csv)"

# ---- Ctrl-C while the workers are still starting (before their SIGTERM handler exists) ----
tiny_sweep e.yaml early 400 "lr4: {train.lr: 4e-3}"
"$SWEEP" run e.yaml --results res --devices cpu:2x1 > run8.txt &
sched=$!
for _ in $(seq 1 200); do  # the scheduler's handler is in place once it starts runs
  [ "$(count '] start ' run8.txt)" -ge 2 ] && break
  sleep 0.01
done
kill -INT "$sched"
set +e; wait "$sched"; rc=$?; set -e
[ "$rc" -eq 130 ] || fail "early Ctrl-C exit code $rc: $(cat run8.txt)"
[ "$(sql "SELECT COUNT(*) FROM sweep_runs JOIN runs USING (run_id) WHERE sweep = 'early' AND status = 'failed'")" -eq 0 ] ||
  fail "a run stopped by Ctrl-C is interrupted, not failed: $(cat run8.txt)"
"$SWEEP" run e.yaml --results res --devices cpu:2x1 > run9.txt
[ "$(sql "SELECT COUNT(*) FROM sweep_runs JOIN runs USING (run_id) WHERE sweep = 'early' AND status = 'done'")" -eq 4 ] ||
  fail "after an early Ctrl-C: $(cat run9.txt)"
check_database

# ---- a closed stdout (`sweep run | head -c 1`): the sweep goes on to the end ----
tiny_sweep p.yaml piped 250
{ "$SWEEP" run p.yaml --results res --devices cpu:2x1 || echo "$?" > piped-rc.txt; } | head -c 1 > /dev/null
[ ! -e piped-rc.txt ] || fail "sweep run with a closed stdout exited $(cat piped-rc.txt)"
[ "$(sql "SELECT COUNT(*) FROM sweep_runs JOIN runs USING (run_id) WHERE sweep = 'piped' AND status = 'done'")" -eq 2 ] ||
  fail "a closed stdout stopped the sweep: $(sql "SELECT status FROM sweep_runs JOIN runs USING (run_id) WHERE sweep = 'piped'")"
echo "sweep_faults: ok"
