# `sweep run` end to end: a 2-variant × 2-seed sweep on two slots, every curve in SQLite;
# running it again trains nothing; a second sweep sharing the baseline reuses its runs; plan,
# status, ls and ingest (rebuilding the database from the run directories), and its report.
source "$(dirname "$0")/lib.bash"
command -v sqlite3 >/dev/null || fail "sqlite3 is needed (apt-get install sqlite3)"
prepare_bytes
tiny_sweep s.yaml tiny 40 "nodrop: {model.dropout: 0.0}"

"$SWEEP" plan s.yaml --results res > plan.txt
grep -q "4 pending" plan.txt || fail "plan before running: $(cat plan.txt)"
[ ! -e res ] || fail "plan must not write anything"

"$SWEEP" run s.yaml --results res --devices cpu:2x1 > run.txt
grep -q "4 to run on 2 slots" run.txt || fail "run output: $(cat run.txt)"
[ "$(sql "SELECT COUNT(*) FROM runs WHERE status = 'done'")" -eq 4 ] || fail "4 runs done: $(sql 'SELECT run_id, status FROM runs')"
[ "$(sql "SELECT COUNT(*) FROM sweep_runs WHERE sweep = 'tiny'")" -eq 4 ] || fail "4 runs in the sweep"
[ "$(sql "SELECT COUNT(*) FROM metrics WHERE split = 'test'")" -eq 4 ] || fail "a test row per run"
[ "$(sql "SELECT COUNT(*) FROM metrics WHERE split = 'val'")" -eq 12 ] || fail "val rows at steps 0, 20, 40"
[ "$(sql "SELECT COUNT(*) FROM runs WHERE test_loss IS NULL OR test_bpb IS NULL")" -eq 0 ] || fail "test loss recorded"
check_database

# the same sweep again: nothing is trained
before=$(cat res/runs/*/events.jsonl | wc -l)
"$SWEEP" run s.yaml --results res --devices cpu:2x1 > again.txt
grep -q "4 already finished, 0 to run" again.txt || fail "second run: $(cat again.txt)"
[ "$(cat res/runs/*/events.jsonl | wc -l)" -eq "$before" ] || fail "a finished run was trained again"
grep -q "4 done" <<< "$("$SWEEP" plan s.yaml --results res)" || fail "plan after running"

# a second sweep that shares the baseline reuses its two runs
tiny_sweep s2.yaml other 40 "clip2: {train.grad_clip: 2.0}"
"$SWEEP" run s2.yaml --results res --devices cpu:2x1 > other.txt
grep -q "2 already finished, 2 to run" other.txt || fail "shared baseline: $(cat other.txt)"
[ "$(ls res/runs | wc -l)" -eq 6 ] || fail "6 distinct runs on disk"

"$SWEEP" ls --results res > ls.txt
grep -q "^tiny .*4 done" ls.txt && grep -q "^other .*4 done" ls.txt || fail "ls: $(cat ls.txt)"
"$SWEEP" status tiny --results res > status.txt
[ "$(grep -c ' done ' status.txt)" -eq 4 ] || fail "status: $(cat status.txt)"
[ "$(grep -cE ' [0-9a-f]{12}(\+dirty)? numerics [0-9]+ ' status.txt)" -eq 4 ] || fail "status shows no code version: $(cat status.txt)"

# the database rebuilt from the run directories alone
rm -f res/sweep.db res/sweep.db-wal res/sweep.db-shm
"$SWEEP" ingest res > /dev/null
[ "$(sql "SELECT COUNT(*) FROM runs WHERE status = 'done'")" -eq 6 ] || fail "ingest: runs"
[ "$(sql "SELECT COUNT(*) FROM sweep_runs")" -eq 8 ] || fail "ingest: sweep membership"
check_database

# the report of the rebuilt database: both variants ranked, paired by seed, every file written
"$SWEEP" report tiny --results res --out rep --format json > rep.json 2> rep.err
python3 -c "
import json; r = json.load(open('rep.json'))
assert sorted(v['name'] for v in r['variants']) == ['base', 'nodrop'], r
assert [v['method'] for v in r['variants'] if v['name'] == 'nodrop'] == ['paired'], r
# the test set's sampling error, from every run's test blocks, beside the seeds'
assert r['noise']['test_se'] > 0 and r['noise']['test_blocks'] > 1, r['noise']
nodrop = [v for v in r['variants'] if v['name'] == 'nodrop'][0]
assert nodrop['test_se'] > 0 and nodrop['seed_se'] > 0, nodrop
" || fail "report: $(cat rep.json rep.err)"
[ "$(sql "SELECT COUNT(*) FROM runs WHERE status = 'done' AND test_blocks IS NULL")" -eq 0 ] ||
  fail "a done run without its test blocks (ingested from its events)"
[ "$(ls rep | wc -l)" -eq 11 ] || fail "report files: $(ls rep) $(cat rep.err)"
# one scheduler per results folder: a second `sweep run` is refused before it writes anything
tiny_sweep long.yaml long 3000
sed -i 's/^seeds: \[1, 2\]/seeds: [9]/' long.yaml
"$SWEEP" run long.yaml --results locked > first.txt 2>&1 &
first=$!
for _ in $(seq 1 600); do [ -n "$(ls locked/runs/*/events.jsonl 2>/dev/null)" ] && break; sleep 0.05; done
wait_for_train_events "$(ls locked/runs/*/events.jsonl | head -1)" 5
cp locked/sweeps/long.yaml saved.yaml
sed -i 's/lr: 3e-3/lr: 1e-3/' long.yaml  # the file edited while the first trains it
code=0; "$SWEEP" run long.yaml --results locked > second.txt 2>&1 || code=$?
[ "$code" -eq 2 ] && grep -q "another \`sweep run\` (pid [0-9]*) is using locked" second.txt ||
  fail "a second sweep run on a locked folder: exit $code, $(cat second.txt)"
cmp -s saved.yaml locked/sweeps/long.yaml || fail "the refused sweep run overwrote locked/sweeps/long.yaml"
kill -INT "$first"
wait "$first" || true
# a sweep binary under another name starts its workers from itself, never from a `sweep` beside it
# (and hands them to the training core beside itself, copied with it)
mkdir -p renamed
cp "$SWEEP" renamed/sweep-copy
cp "$(dirname "$SWEEP")/sweep-core" renamed/
printf '#!/bin/sh\necho "the decoy sweep ran" >&2\nexit 3\n' > renamed/sweep
chmod +x renamed/sweep
tiny_sweep r.yaml renamed 10
renamed/sweep-copy run r.yaml --results res-renamed > renamed.txt 2>&1 || fail "a renamed binary's sweep: $(cat renamed.txt)"
grep -q "decoy" renamed.txt res-renamed/runs/*/worker.log && fail "the renamed binary started the decoy sweep beside it"
[ "$(sqlite3 res-renamed/sweep.db "SELECT COUNT(*) FROM runs WHERE status = 'done'")" -eq 2 ] ||
  fail "the renamed binary's runs: $(cat renamed.txt)"
echo "sweep_run: ok"
