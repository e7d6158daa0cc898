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
echo "preempt_resume: ok"
