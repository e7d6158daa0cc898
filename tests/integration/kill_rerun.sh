# kill -9 of `sweep run` at a random moment, then one `sweep run` again: it finishes the sweep, every
# run done exactly once, no metric row twice. The killed scheduler's workers live on for a moment
# (they die at their next event, its pipe gone), and one forked in the instant before the kill is
# not yet in the database: the re-run finds that run's lock held and follows it — its slot kept busy,
# its events read as they come — until the orphan ends, then resumes it from its checkpoint (or takes
# it as done). Repeated SWEEP_KILLS times (default 20), each in a fresh results folder.
source "$(dirname "$0")/lib.bash"
command -v sqlite3 >/dev/null || fail "sqlite3 is needed (apt-get install sqlite3)"
prepare_bytes
tiny_sweep s.yaml kills 40 "nodrop: {model.dropout: 0.0}"
kills=${SWEEP_KILLS:-20}
for i in $(seq 1 "$kills"); do
  rm -rf res
  "$SWEEP" run s.yaml --results res --devices cpu:2x1 > "killed-$i.txt" 2>&1 &
  pid=$!
  sleep "$(awk -v s="$RANDOM" 'BEGIN { srand(s); printf "%.2f", 0.05 + 2.5 * rand() }')"
  kill -9 "$pid" 2>/dev/null || true
  wait "$pid" 2>/dev/null || true
  "$SWEEP" run s.yaml --results res --devices cpu:2x1 > "rerun-$i.txt" 2>&1 ||
    fail "kill $i: the one re-run after kill -9 did not finish the sweep: $(cat "rerun-$i.txt")"
  grep -q "4 of 4 runs finished, 0 failed, 0 to resume or start" "rerun-$i.txt" || fail "kill $i: $(tail -3 "rerun-$i.txt")"
  [ "$(sql "SELECT count(*) FROM runs WHERE status = 'done' AND steps = 40")" = 4 ] ||
    fail "kill $i: $(sql "SELECT run_id, status, steps FROM runs")"
  check_database
  for dir in res/runs/*/; do  # each run ended done once: one end event that says so
    [ "$(grep -c '"event":"end".*"status":"done"' "$dir/events.jsonl")" = 1 ] ||
      fail "kill $i: $dir ended done $(grep -c '"status":"done"' "$dir/events.jsonl") times"
  done
  grep -q "wait .*another process" "rerun-$i.txt" && followed=$((${followed:-0} + 1))
done
echo "kill_rerun: ok — $kills kills, a run held by the killed scheduler's worker followed in ${followed:-0}"
