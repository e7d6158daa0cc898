# `sweep run --eliminate` end to end: every run pauses at each look, checkpointed; the arm shown
# worse than −δ stops at the first look and its runs keep their checkpoints; the others train on
# bitwise as a fixed design trains them (the same test losses); the report says where the stopped
# arm was stopped, with the look's interval; `sweep run` again with --eliminate trains nothing more,
# without it finishes the stopped arm; `sweep ingest` keeps the record; bad input is refused before
# anything is written.
archive=$(cd "$(dirname "$0")/../.." && pwd)/scripts/results-archive.sh
source "$(dirname "$0")/lib.bash"
command -v sqlite3 >/dev/null || fail "sqlite3 is needed (apt-get install sqlite3)"
prepare_bytes
eliminate_sweep s.yaml

# ---- bad input: refused, naming why, with nothing written ----
grep -v '^min_effect' s.yaml > nodelta.yaml
expect_rc 2 "$SWEEP" run nodelta.yaml --results res --eliminate 2> err.txt
grep -q -- "--eliminate: an arm is stopped only when shown worse than −δ: nodelta.yaml has no min_effect" err.txt ||
  fail "no min_effect: $(cat err.txt)"
sed 's/^seeds: .*/seeds: [1]/' s.yaml > one.yaml
expect_rc 2 "$SWEEP" run one.yaml --results res --eliminate 2> err.txt
grep -q "variant 'base' has 1 seed — give the sweep 2 or more" err.txt || fail "one seed: $(cat err.txt)"
expect_rc 2 "$SWEEP" run s.yaml --results res --eliminate --until-decided 2> err.txt
grep -q -- "--eliminate: not with --until-decided" err.txt || fail "with --until-decided: $(cat err.txt)"
sed 's/every: 10/every: 40/' s.yaml > sparse.yaml
expect_rc 2 "$SWEEP" run sparse.yaml --results res --eliminate 2> err.txt
grep -q "variant 'base': its first validation point after step 0 comes after 25% of training, where its look at 30% reads its curve (eval.every 40 of its 100 steps)" err.txt ||
  fail "a look before the first validation point: $(cat err.txt)"
expect_rc 2 "$SWEEP" run s.yaml --results res --eliminate --looks 0.3,0.5,0.95 --kept 0.2,0.2,0.4 2> err.txt
grep -q "it has no validation point after its look at 95% before the end of training (eval.every 10 of its 100 steps)" err.txt ||
  fail "a look past the last validation point: $(cat err.txt)"
expect_rc 2 "$SWEEP" run s.yaml --results res --eliminate --looks 0.5,0.3,0.75 2> err.txt
grep -q "ascending" err.txt || fail "looks out of order: $(cat err.txt)"
expect_rc 2 "$SWEEP" run s.yaml --results res --eliminate --looks 0.3,0.5 2> err.txt
grep -q "one kept share per look" err.txt || fail "a kept share missing: $(cat err.txt)"
expect_rc 2 "$SWEEP" run s.yaml --results res --looks 0.3,0.5 2> err.txt
grep -q -- "--looks requires --eliminate" err.txt || fail "--looks alone: $(cat err.txt)"
expect_rc 2 "$SWEEP" run s.yaml --results res --eliminate --looks "" 2> err.txt
grep -q "give a comma-separated list" err.txt || fail "an empty --looks: $(cat err.txt)"
[ ! -e res ] || fail "a refused run wrote $(ls -R res)"

# ---- live: lr-tiny stopped at the first look (30%: step 30), the rest to the end ----
"$SWEEP" run s.yaml --results res --eliminate --devices cpu:2x1 > run.txt || fail "run: $(cat run.txt)"
grep -E "look|paused|stopped" run.txt
grep -q "to step 30 (a look)" run.txt || fail "no run paused for the first look: $(cat run.txt)"
grep -q -- "--eliminate, the look at 30% of training: stopped lr-tiny (Δ " run.txt || fail "lr-tiny not stopped: $(cat run.txt)"
grep -q -- "--eliminate, the look at 50% of training: no arm shown worse" run.txt || fail "second look: $(cat run.txt)"
grep -q "3 stopped by --eliminate" run.txt || fail "the summary: $(tail -1 run.txt)"
[ "$(sql "SELECT group_concat(r.status || ':' || r.steps, ' ') FROM runs r JOIN sweep_runs v ON v.run_id = r.run_id
        WHERE v.sweep = 'el' AND v.variant = 'lr-tiny'")" = "preempted:30 preempted:30 preempted:30" ] ||
  fail "lr-tiny's runs: $(sql "SELECT status, steps FROM runs")"
[ "$(sql "SELECT count(*) FROM runs WHERE status = 'done' AND steps = 100")" = 6 ] || fail "the others did not finish"
for f in res/runs/*/; do
  [ "$(sql "SELECT status FROM runs WHERE run_id = '$(basename "$f")'")" != preempted ] || [ -e "$f/checkpoint/ckpt.pt" ] ||
    fail "a stopped run lost its checkpoint: $f"
done
[ -e res/sweeps/el.eliminated ] || fail "no record of the looks in the results folder"
grep -qE "^el +s.yaml +6 done, 3 stopped$" <<< "$("$SWEEP" ls --results res)" || fail "ls: $("$SWEEP" ls --results res)"
[ "$("$SWEEP" status el --results res | grep -c "^lr-tiny .* stopped ")" = 3 ] || fail "status: $("$SWEEP" status el --results res)"
"$SWEEP" report el --results res --out rep > table.txt || fail "report: $(cat table.txt)"
cat table.txt
grep -qE "lr-tiny +3 .* worse +stopped at 30% of training: Δ -[0-9.]+, bound -[0-9.]+ < -0.0500" table.txt ||
  fail "the stopped arm's row: $(grep lr-tiny table.txt)"
grep -q -- "--eliminate stopped \`lr-tiny\` before the end of training" table.txt || fail "no note of the stop"
grep -q "(23.3%) not trained" table.txt || fail "the tokens not trained: $(grep 'not trained' table.txt)"
# archived, the stopped runs' curves travel with the finished runs: restored, the report says the same
"$archive" el --results res --out arch/ > arch.txt || fail "archive: $(cat arch.txt)"
grep -q "6 finished runs and 3 stopped by --eliminate" arch.txt || fail "the archive: $(cat arch.txt)"
mkdir restored && tar xzf arch/runs.tar.gz -C restored && "$SWEEP" ingest restored > /dev/null
"$SWEEP" report el --results restored > restored_table.txt
grep -q "(23.3%) not trained" restored_table.txt || fail "restored: $(grep 'not trained' restored_table.txt)"
expect_rc 2 "$SWEEP" run s.yaml --results res --until-decided 2> err.txt
grep -q -- "--until-decided: sweep el was run --eliminate" err.txt || fail "--until-decided after it: $(cat err.txt)"
# one of the stopped arm's runs trained to its end by hand: the arm is still the look's worse, outside Holm
tiny1=$(sql "SELECT r.run_id FROM runs r JOIN sweep_runs v ON v.run_id = r.run_id
             WHERE v.sweep = 'el' AND v.variant = 'lr-tiny' AND r.init_seed = 1")
cp -r res res-one
"$SWEEP" worker "res-one/runs/$tiny1/config.yaml" --run-dir "res-one/runs/$tiny1" --data data/bytes --resume > /dev/null ||
  fail "lr-tiny seed 1 by hand"
"$SWEEP" ingest res-one > /dev/null
"$SWEEP" report el --results res-one > one_table.txt
grep -qE "lr-tiny +3 .* worse +stopped at 30% of training" one_table.txt || fail "one finished run: $(grep lr-tiny one_table.txt)"
# the sweep file changed: the record judged other runs — refused with --eliminate, not applied to the new runs
cp s.yaml unchanged.yaml
sed -i 's/lr-tiny: {train.lr: 3e-6, train.min_lr: 3e-7}/lr-tiny: {train.lr: 4e-6, train.min_lr: 3e-7}/' s.yaml
expect_rc 2 "$SWEEP" run s.yaml --results res-one --eliminate 2> err.txt
cp unchanged.yaml s.yaml
grep -q "sweep el's looks judged other runs than s.yaml gives it now (new runs of lr-tiny)" err.txt ||
  fail "a changed file: $(cat err.txt)"
"$SWEEP" report el --results res-one > /dev/null  # the database still has the file it ran

# ---- the same runs as a fixed design: bitwise the same results ----
"$SWEEP" run s.yaml --results fixed --devices cpu:2x1 > fixed.txt || fail "fixed: $(cat fixed.txt)"
for variant in base dropout-off; do
  live=$(DB=res/sweep.db sql "SELECT group_concat(r.test_loss, ' ') FROM runs r JOIN sweep_runs v ON v.run_id = r.run_id
         WHERE v.sweep = 'el' AND v.variant = '$variant' ORDER BY r.init_seed")
  full=$(DB=fixed/sweep.db sql "SELECT group_concat(r.test_loss, ' ') FROM runs r JOIN sweep_runs v ON v.run_id = r.run_id
         WHERE v.sweep = 'el' AND v.variant = '$variant' ORDER BY r.init_seed")
  [ -n "$live" ] && [ "$live" = "$full" ] || fail "$variant: paused at the looks $live, trained straight $full"
done
"$SWEEP" report el --results fixed > fixed_table.txt
grep -qE " lr-tiny .*worse" fixed_table.txt || fail "the fixed design does not find lr-tiny worse: $(cat fixed_table.txt)"

# ---- again with --eliminate: nothing more to train; without it: the stopped arm finished ----
"$SWEEP" run s.yaml --results res --eliminate > again.txt || fail "again: $(cat again.txt)"
grep -q "0 to run" again.txt || fail "--eliminate again trained something: $(cat again.txt)"
expect_rc 2 "$SWEEP" run s.yaml --results res --eliminate --looks 0.25,0.5,0.75 2> err.txt
grep -q "sweep el was run --eliminate with --looks 0.3,0.5,0.75 --kept 0.2,0.2,0.4" err.txt ||
  fail "other looks on a recorded sweep: $(cat err.txt)"
"$SWEEP" run s.yaml --results res --devices cpu:2x1 > finish.txt || fail "finish: $(cat finish.txt)"
grep -q "sweep el was run --eliminate, which stopped lr-tiny: this run trains it to the end" finish.txt ||
  fail "not said: $(head -3 finish.txt)"
grep -q "3 to run" finish.txt || fail "the stopped runs were not trained: $(cat finish.txt)"
[ "$(sql "SELECT count(*) FROM runs WHERE status = 'done' AND steps = 100")" = 9 ] || fail "not every run finished"
"$SWEEP" report el --results res > finished_table.txt
grep -q "trained to the end since: judged on its finished runs" finished_table.txt || fail "no note: $(cat finished_table.txt)"
! grep -q "stopped at 30%" <(grep -E "lr-tiny" finished_table.txt | head -1) || fail "a finished arm shown stopped"
tiny_live=$(sql "SELECT group_concat(r.test_loss, ' ') FROM runs r JOIN sweep_runs v ON v.run_id = r.run_id
            WHERE v.sweep = 'el' AND v.variant = 'lr-tiny' ORDER BY r.init_seed")
tiny_full=$(DB=fixed/sweep.db sql "SELECT group_concat(r.test_loss, ' ') FROM runs r JOIN sweep_runs v ON v.run_id = r.run_id
            WHERE v.sweep = 'el' AND v.variant = 'lr-tiny' ORDER BY r.init_seed")
[ "$tiny_live" = "$tiny_full" ] || fail "lr-tiny resumed from its look: $tiny_live, straight: $tiny_full"

# ---- a look waits for a run another process trains (a worker a killed scheduler left): followed, then taken up ----
plan=$("$SWEEP" plan s.yaml --results wait)
held=$(awk '$1 == "dropout-off" && $2 == 3 {print $3}' <<< "$plan")
mkdir -p "wait/runs/$held"
touch wait/holding
# another process holds the run's lock, as a worker does, until wait/holding is removed
flock "wait/runs/$held/.lock" sh -c 'while [ -e wait/holding ]; do sleep 0.1; done' &
holder=$!
"$SWEEP" run s.yaml --results wait --eliminate --devices cpu:2x1 > waited.txt &
sweep_pid=$!
for _ in $(seq 1 600); do grep -q "another process (pid .*) trains it — followed" waited.txt && break; sleep 0.05; done
grep -q "another process (pid .*) trains it — followed" waited.txt || fail "the held run not followed: $(cat waited.txt)"
sleep 1
grep -q '"looks_taken":0' wait/sweeps/el.eliminated || fail "a look taken without a run: $(cat wait/sweeps/el.eliminated)"
rm wait/holding
wait "$holder"
wait "$sweep_pid" || fail "after the wait: $(cat waited.txt)"
grep -q "taken up dropout-off seed 3 .*: the process that trained it (pid .*) has ended" waited.txt ||
  fail "not taken up: $(cat waited.txt)"
grep -q -- "--eliminate, the look at 30% of training: stopped lr-tiny" waited.txt || fail "no look after the wait: $(cat waited.txt)"

# ---- the record survives a database rebuilt from the folder ----
rm res/sweep.db*
"$SWEEP" ingest res > /dev/null || fail "ingest"
"$SWEEP" report el --results res > ingested.txt
grep -q "trained to the end since" ingested.txt || fail "the rebuilt database lost the record: $(cat ingested.txt)"
echo "eliminate: ok"
