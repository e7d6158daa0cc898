# A trainer of your own cannot fill the disk or outlive its run: worker.log takes its output up to
# a cap, then only its last 64 KiB; events.jsonl up to a cap, past which the program is stopped
# and the run failed; what the program leaves running — in its process group or in a session of
# its own — is stopped when it ends. The caps are a test build's small ones (SWEEP_TEST_LOG_CAP,
# SWEEP_TEST_EVENTS_CAP); the real ones are in docs/reference.md.
source "$(dirname "$0")/lib.bash"
command -v sqlite3 >/dev/null || fail "sqlite3 is needed (apt-get install sqlite3)"
cat > limits.sh <<'SH'
#!/bin/bash
mode=$1 loss=3.$SWEEP_INIT_SEED
echo '{"event":"start","step":0,"total_steps":2,"tokens_per_step":8}'
case $mode in
  chatty)  # 4 MB on stderr and 4 MB of plain stdout, its last words at the end
    head -c 4000000 /dev/zero | tr '\0' 'e' >&2
    for i in $(seq 4000); do printf '%01000d\n' 0; done
    sleep 0.5; echo "the chatty program's last words" >&2 ;;
  flood)  # evaluations without end: past the events cap
    for i in $(seq 5000); do echo '{"event":"eval","step":0,"split":"val","loss":3}'; done ;;
  orphans)  # one child in its process group, one in a session of its own, both outliving it
    (sleep 300; echo late) & echo $! > "$SWEEP_RUN_DIR/group.pid"
    setsid sleep 301 & echo $! > "$SWEEP_RUN_DIR/session.pid" ;;
esac
for s in 1 2; do echo "{\"event\":\"train\",\"step\":$s,\"tokens\":$((s * 8)),\"loss\":$loss}"; done
echo '{"event":"end","status":"done","step":2,"test_loss":'$loss'}'
SH
chmod +x limits.sh
cat > l.yaml <<'YAML'
sweep: limits
baseline: orphans
seeds: [1]
trainer:
  command: [./limits.sh, "{mode}"]
  files: [limits.sh]
  keys: {mode: {type: choice, choices: [chatty, flood, orphans], default: orphans}}
base: {}
interventions: {orphans: {}, chatty: {mode: chatty}, flood: {mode: flood}}
YAML
set +e
SWEEP_TEST_LOG_CAP=1000000 SWEEP_TEST_EVENTS_CAP=100000 "$SWEEP" run l.yaml --results res --devices cpu:2x1 > run.txt 2>&1
rc=$?
set -e
[ "$rc" -ne 0 ] || fail "the flood's run should fail the sweep: $(cat run.txt)"
"$SWEEP" plan l.yaml --results res > plan.txt
id() { awk -v v="$1" '$1 == v {print $3}' plan.txt; }
chatty=$(id chatty) flood=$(id flood) orphans=$(id orphans)
log=res/runs/$chatty/worker.log
[ "$(sql "SELECT status FROM runs WHERE run_id = '$chatty'")" = done ] || fail "the chatty run: $(sql "SELECT status, error FROM runs")"
size=$(stat -c %s "$log")
[ "$size" -gt 1000000 ] && [ "$size" -lt 1200000 ] || fail "worker.log of 8 MB of output under a 1 MB cap: $size bytes"
grep -q "sweep: worker.log took 1000000 bytes of the program's output in this attempt, its cap" "$log" || fail "no note where the log was cut"
grep -q "bytes of the program's output dropped; its last 65536 bytes:" "$log" || fail "no tail after the cut"
grep -q "the chatty program's last words" <<< "$(tail -c 200 "$log")" || fail "the program's last words are not the log's: $(tail -c 300 "$log")"
[ "$(sql "SELECT status FROM runs WHERE run_id = '$flood'")" = failed ] || fail "the flood: $(sql "SELECT status, error FROM runs WHERE run_id = '$flood'")"
# the program's events within the cap (the scheduler's own end of the attempt follows them)
[ "$(grep -v '"by":"sweep"' "res/runs/$flood/events.jsonl" | wc -c)" -le 100000 ] || fail "events.jsonl past its cap"
grep -q "events.jsonl took 100000 bytes of events in this attempt, its cap: the program was stopped" "res/runs/$flood/worker.log" ||
  fail "the events cap is not said: $(tail -3 "res/runs/$flood/worker.log")"
[ "$(sql "SELECT attempts FROM runs WHERE run_id = '$flood'")" = 1 ] || fail "a flood is not retried: it would do the same"
[ "$(sql "SELECT status FROM runs WHERE run_id = '$orphans'")" = done ] || fail "the orphans' run"
for f in group session; do
  pid=$(cat "res/runs/$orphans/$f.pid")
  ! kill -0 "$pid" 2>/dev/null || fail "the program's child in its $f ($pid) outlived the run: $(ps -o pid,ppid,pgid,sid,cmd -p "$pid")"
done
grep -q "sweep: the program left [0-9]* processes running after it ended: stopped" "res/runs/$orphans/worker.log" ||
  fail "the stopped children are not said: $(cat "res/runs/$orphans/worker.log")"
check_database
echo "own_trainer_limits: ok"
