# SIGTERM/SIGINT: the run checkpoints at the next step boundary, ends with status preempted and
# exit code 75; --resume continues it to the same final test loss as an uninterrupted run.
source "$(dirname "$0")/lib.bash"
prepare_bytes
tiny_config run.yaml 1500

"$SWEEP" train run.yaml --run-dir runs/straight > /dev/null

for sig in TERM INT; do
  dir=runs/$sig
  "$SWEEP" train run.yaml --run-dir "$dir" > /dev/null &
  pid=$!
  wait_for_train_events "$dir/events.jsonl" 20
  kill -"$sig" "$pid"
  set +e; wait "$pid"; rc=$?; set -e
  [ "$rc" -eq 75 ] || fail "SIG$sig: exit code $rc, expected 75"
  grep -q '"event":"end".*"status":"preempted"' "$dir/events.jsonl" || fail "SIG$sig: no preempted end event"
  [ -f "$dir/checkpoint/ckpt.pt" ] || fail "SIG$sig: no checkpoint"
  stopped=$(grep '"status":"preempted"' "$dir/events.jsonl" | sed 's/.*"step":\([0-9]*\).*/\1/')
  [ "$stopped" -lt 1500 ] || fail "SIG$sig arrived too late to test anything"

  "$SWEEP" train run.yaml --run-dir "$dir" --resume > /dev/null
  grep -q '"resumed":true' "$dir/events.jsonl" || fail "SIG$sig: the start event should say resumed"
  # every step trained exactly once, and the same final result as the uninterrupted run
  steps=$(grep '"event":"train"' "$dir/events.jsonl" | sed 's/.*"step":\([0-9]*\).*/\1/' | sort -n | uniq | wc -l)
  total=$(count '"event":"train"' "$dir/events.jsonl")
  [ "$steps" -eq 1500 ] && [ "$total" -eq 1500 ] || fail "SIG$sig: $total train events for $steps distinct steps"
  a=$(grep '"status":"done"' runs/straight/events.jsonl | sed 's/.*"test_loss":\([^,]*\).*/\1/')
  b=$(grep '"status":"done"' "$dir/events.jsonl" | sed 's/.*"test_loss":\([^,]*\).*/\1/')
  [ "$a" = "$b" ] || fail "SIG$sig: resumed test loss $b differs from uninterrupted $a"
done
# SIGTERM in the final evaluation (a test split can take long, a grace period is short): the
# trained state was checkpointed before it, the stop is honoured inside it, and --resume only
# evaluates again — to the uninterrupted run's test loss
tiny_config short.yaml 20
"$SWEEP" train short.yaml --run-dir runs/short > /dev/null
dir=runs/final
mkdir -p "$dir"
echo "slow_eval_ms:200" > "$dir/test-fault"  # 200 ms more per evaluation batch: the evaluation takes seconds
"$SWEEP" train short.yaml --run-dir "$dir" > final.txt 2>&1 &
pid=$!
for _ in $(seq 1 600); do
  grep -q '"event":"checkpoint".*"step":20' "$dir/events.jsonl" 2>/dev/null && break
  sleep 0.05
done
grep -q '"event":"checkpoint".*"step":20' "$dir/events.jsonl" || fail "no checkpoint of the last step before the final evaluation"
rm "$dir/test-fault"  # read at the start: the resume evaluates at full speed
sleep 0.3
kill -TERM "$pid"
set +e; wait "$pid"; rc=$?; set -e
[ "$rc" -eq 75 ] || fail "SIGTERM in the final evaluation: exit $rc, expected 75: $(tail -3 final.txt)"
grep -q '"status":"preempted"' "$dir/events.jsonl" && grep -q '"reason":"stopped by signal 15 in the final evaluation"' "$dir/events.jsonl" ||
  fail "not stopped in the final evaluation: $(tail -2 "$dir/events.jsonl")"
! grep -q '"split":"test"' "$dir/events.jsonl" || fail "the test evaluation ran to its end after the stop"
"$SWEEP" train short.yaml --run-dir "$dir" --resume > /dev/null
[ "$(count '"event":"train"' "$dir/events.jsonl")" -eq 20 ] || fail "steps trained again after a stop in the final evaluation"
a=$(grep '"status":"done"' runs/short/events.jsonl | sed 's/.*"test_loss":\([^,]*\).*/\1/')
b=$(grep '"status":"done"' "$dir/events.jsonl" | sed 's/.*"test_loss":\([^,]*\).*/\1/')
[ -n "$a" ] && [ "$a" = "$b" ] || fail "resumed for its evaluation: test loss $b, uninterrupted $a"
echo "preempt_resume: ok"
