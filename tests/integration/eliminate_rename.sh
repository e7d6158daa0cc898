# --eliminate's stops follow their runs, never a name: a real `sweep run --eliminate` interrupted
# between its looks (Ctrl-C after the look that stops lr-tiny), then the sweep file edited and run
# again. Two arms' names swapped: the run ids are the same, so --eliminate goes on — and the runs the
# look stopped stay stopped under their new name while the arm it never judged trains to its end
# (stopped by name, the arm never judged stopped at 30% and "no result"; the stopped one trained and
# judged again). The stopped arm renamed: still stopped. On the finished study, renamed, `sweep run
# --eliminate` trains nothing. The report, status and plan say it by the runs.
source "$(dirname "$0")/lib.bash"
command -v sqlite3 >/dev/null || fail "sqlite3 is needed (apt-get install sqlite3)"
prepare_bytes
eliminate_sweep s.yaml
steps_of() {  # steps_of VARIANT-CONFIG-MARK: "status:steps" of the runs whose config has MARK, by seed
  local ids
  ids=$(grep -l -- "$1" res/runs/*/config.yaml | xargs -n1 dirname | xargs -n1 basename | sed "s/.*/'&'/" | paste -sd,)
  sql "SELECT group_concat(status || ':' || steps, ' ') FROM (SELECT status, steps FROM runs WHERE run_id IN ($ids)
       ORDER BY init_seed)"
}

# ---- interrupted between the looks: Ctrl-C once the first look has stopped lr-tiny ----
"$SWEEP" run s.yaml --results res --eliminate --devices cpu:2x1 > first.txt 2>&1 &
pid=$!
for _ in $(seq 1 1200); do
  grep -q -- "--eliminate, the look at 30% of training: stopped lr-tiny" first.txt && break
  kill -0 "$pid" 2>/dev/null || break
  sleep 0.05
done
kill -INT "$pid" 2>/dev/null || true
set +e; wait "$pid"; set -e
grep -q -- "--eliminate, the look at 30% of training: stopped lr-tiny" first.txt || fail "no first look: $(cat first.txt)"
[ "$(steps_of 'lr: 3e-06')" = "preempted:30 preempted:30 preempted:30" ] ||
  fail "lr-tiny not stopped at 30: $(steps_of 'lr: 3e-06')"

# ---- the two arms' names swapped in the file: the stops stay with lr-tiny's runs, now named dropout-off ----
sed -i 's/lr-tiny: {train.lr/SWAP: {train.lr/; s/dropout-off: {model/lr-tiny: {model/; s/SWAP:/dropout-off:/' s.yaml
grep -q "dropout-off: {train.lr: 3e-6" s.yaml || fail "the swap: $(cat s.yaml)"
"$SWEEP" plan s.yaml --results res > plan.txt
[ "$(grep -c "^dropout-off .* stopped " plan.txt)" = 3 ] || fail "plan does not show the stopped runs: $(cat plan.txt)"
! grep -q "^lr-tiny .* stopped " plan.txt || fail "plan shows the arm never judged as stopped: $(cat plan.txt)"
"$SWEEP" run s.yaml --results res --eliminate --devices cpu:2x1 > swapped.txt 2>&1 || fail "swapped: $(cat swapped.txt)"
[ "$(steps_of 'lr: 3e-06')" = "preempted:30 preempted:30 preempted:30" ] ||
  fail "the stopped runs trained again under their new name: $(steps_of 'lr: 3e-06')"
[ "$(steps_of 'dropout: 0.0$')" = "done:100 done:100 done:100" ] ||
  fail "the arm never judged was not trained to its end: $(steps_of 'dropout: 0.0$')"
! grep -q "look at 30% of training: stopped" swapped.txt || fail "the stopped arm judged again: $(cat swapped.txt)"
[ "$("$SWEEP" status el --results res | grep -c "^dropout-off .* stopped ")" = 3 ] ||
  fail "status: $("$SWEEP" status el --results res)"
"$SWEEP" report el --results res > table.txt || fail "report: $(cat table.txt)"
grep -qE "dropout-off +3 .* worse +stopped at 30% of training" table.txt || fail "the stopped arm's row: $(cat table.txt)"
! grep -qE "^ *lr-tiny .*no result" table.txt || fail "the arm never judged has no result: $(cat table.txt)"
grep -q -- "--eliminate stopped \`dropout-off\` (stopped as \`lr-tiny\`) before the end of training" table.txt ||
  fail "the note does not name both: $(cat table.txt)"

# ---- the baseline changed under the record: every Δ was judged against base — refused, nothing written ----
cp s.yaml before-baseline.yaml
for other in dropout-off lr-tiny; do  # the arm a look stopped (its runs now named dropout-off), and one it did not
  sed -i "s/^baseline: .*/baseline: $other/" s.yaml
  sed -i "s/^  base: {}/  base: {}/" s.yaml
  expect_rc 2 "$SWEEP" run s.yaml --results res --eliminate 2> err.txt
  grep -q "sweep el's looks judged each arm against the baseline it had then, and s.yaml's baseline '$other' is" err.txt ||
    fail "baseline $other: $(cat err.txt)"
  cp before-baseline.yaml s.yaml
done

# ---- the finished study, the stopped arm renamed: --eliminate trains nothing, the report still says it ----
sed -i 's/dropout-off: {train.lr/tiny-lr: {train.lr/' s.yaml
"$SWEEP" run s.yaml --results res --eliminate --devices cpu:2x1 > renamed.txt 2>&1 || fail "renamed: $(cat renamed.txt)"
grep -q "0 to run" renamed.txt || fail "a rename un-stopped the stopped runs: $(cat renamed.txt)"
[ "$(steps_of 'lr: 3e-06')" = "preempted:30 preempted:30 preempted:30" ] || fail "renamed: $(steps_of 'lr: 3e-06')"
"$SWEEP" report el --results res > renamed_table.txt
grep -qE "tiny-lr +3 .* worse +stopped at 30% of training" renamed_table.txt || fail "renamed: $(cat renamed_table.txt)"
# rebuilt into another results folder by ingest: its database has the record, and the planning step reads it there
"$SWEEP" ingest res --results fresh > /dev/null || fail "ingest into fresh"
[ "$("$SWEEP" plan s.yaml --results fresh | grep -c "^tiny-lr .* stopped ")" = 3 ] ||
  fail "plan of the ingested folder: $("$SWEEP" plan s.yaml --results fresh)"
"$SWEEP" run s.yaml --results fresh --eliminate --devices cpu:2x1 > fresh.txt 2>&1 || fail "fresh: $(cat fresh.txt)"
! grep -q "look at 30% of training" fresh.txt || fail "a look taken again in the ingested folder: $(cat fresh.txt)"
echo "eliminate_rename: ok"
