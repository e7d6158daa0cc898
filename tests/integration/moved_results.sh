# A results folder is location-independent: a sweep interrupted in one place resumes — and
# trains nothing that was finished — from another working directory after the folder moved; its
# datasets are found from the sweep file, never the working directory; a moved folder whose
# datasets are gone is rebuilt by `sweep ingest` and reported.
source "$(dirname "$0")/lib.bash"
command -v sqlite3 >/dev/null || fail "sqlite3 is needed (apt-get install sqlite3)"
prepare_bytes
mkdir -p proj/exp elsewhere far
mv data proj/  # the sweep file names data/bytes: found in proj/, the folder above proj/exp
tiny_sweep proj/exp/s.yaml moved 300 "nodrop: {model.dropout: 0.0}"

# ---- interrupted while training, from one working directory ----
(cd elsewhere && exec "$SWEEP" run ../proj/exp/s.yaml --results ../proj/res --devices cpu:1x1 > run1.txt 2>&1) &
sched=$!
first=""
for _ in $(seq 1 600); do
  first=$(ls proj/res/runs 2>/dev/null | sed -n 1p || true)
  [ -n "$first" ] && break
  sleep 0.05
done
[ -n "$first" ] || fail "no run started within 30 s: $(cat elsewhere/run1.txt)"
wait_for_train_events "proj/res/runs/$first/events.jsonl" 60
kill -INT "$sched"
code=0; wait "$sched" || code=$?
[ "$code" -eq 130 ] || fail "Ctrl-C: exit $code: $(cat elsewhere/run1.txt)"
[ "$(DB=proj/res/sweep.db sql "SELECT status FROM runs WHERE run_id = '$first'")" = interrupted ] ||
  fail "the run Ctrl-C stopped is not interrupted"

# ---- moved, resumed from another working directory ----
mv proj/res far/away
(cd far && "$SWEEP" run ../proj/exp/s.yaml --results away --devices cpu:1x1 > run2.txt 2>&1) ||
  fail "sweep run of the moved folder: $(cat far/run2.txt)"
export DB=far/away/sweep.db
[ "$(sql "SELECT COUNT(*) FROM runs WHERE status = 'done'")" -eq 4 ] || fail "4 runs done: $(cat far/run2.txt)"
[ "$(ls far/away/runs | wc -l)" -eq 4 ] || fail "run folders: $(ls far/away/runs)"
for stray in proj/res elsewhere/res far/res far/results elsewhere/results results; do
  [ ! -e "$stray" ] || fail "$stray was written outside the results folder"
done
[ "$(count '"resumed":true' "far/away/runs/$first/events.jsonl")" -eq 1 ] || fail "the interrupted run did not resume"
check_database
"$SWEEP" train "far/away/runs/$first/config.yaml" --data proj/data/bytes --run-dir straight --set resources.threads=1 \
  > /dev/null 2>&1
[ "$(test_loss "far/away/runs/$first")" = "$(test_loss straight)" ] ||
  fail "resumed after the move: test loss $(test_loss "far/away/runs/$first"), uninterrupted $(test_loss straight)"

# ---- once more, from a third directory: nothing is trained again ----
lines=$(cat far/away/runs/*/events.jsonl | wc -l)
(cd proj/exp && "$SWEEP" run s.yaml --results ../../far/away --devices cpu:1x1 > run3.txt 2>&1) ||
  fail "a finished sweep: $(cat proj/exp/run3.txt)"
grep -q "4 runs, 4 already finished, 0 to run" proj/exp/run3.txt || fail "a finished sweep plans runs: $(cat proj/exp/run3.txt)"
[ "$(cat far/away/runs/*/events.jsonl | wc -l)" -eq "$lines" ] || fail "a finished run was trained again"

# ---- the dataset gone and the database lost: rebuilt from the folder, reported ----
mv proj/data proj/data-elsewhere
rm far/away/sweep.db*
# ... and lines no worker writes, among a finished run's events: skipped, the rest counts
events=$(ls far/away/runs/*/events.jsonl | sed -n 1p)
{ echo 'not json'; echo '{"event":"train","step":"seven","loss":[]}'; echo '[1, 2]'; } >> "$events"
"$SWEEP" ingest far/away > ingest.txt 2>&1 || fail "ingest of a moved folder: $(cat ingest.txt)"
[ "$(sql "SELECT COUNT(*) FROM runs WHERE status = 'done'")" -eq 4 ] || fail "ingest: $(sql 'SELECT run_id, status FROM runs')"
[ "$(sql "SELECT COUNT(*) FROM sweep_runs WHERE sweep = 'moved'")" -eq 4 ] || fail "ingest lost the sweep's membership"
check_database
"$SWEEP" report moved --results far/away --out rep --format json > rep.json 2> report.txt ||
  fail "report of the rebuilt folder: $(cat report.txt)"
grep -q '"nodrop"' rep.json || fail "the report lacks a variant"

# ---- an interrupted sweep ingested into another results folder resumes there from its checkpoint ----
mv proj/data-elsewhere proj/data
tiny_sweep proj/exp/t.yaml ingested 3000
"$SWEEP" run proj/exp/t.yaml --results A --devices cpu:1x1 > a.txt 2>&1 &
sched=$!
for _ in $(seq 1 600); do
  id=$(ls A/runs 2>/dev/null | sed -n 1p || true)
  [ -n "$id" ] && [ -f "A/runs/$id/checkpoint/ckpt.pt" ] && break
  sleep 0.05
done
kill -INT "$sched"
wait "$sched" || true
step=$(DB=A/sweep.db sql "SELECT steps FROM runs WHERE run_id = '$id'")
[ "$step" -gt 0 ] || fail "the run in A was not interrupted mid-training: $(cat a.txt)"
"$SWEEP" ingest A --results B > /dev/null || fail "ingest A --results B"
[ "$(DB=B/sweep.db sql "SELECT run_dir FROM runs WHERE run_id = '$id'")" = "$PWD/A/runs/$id" ] ||
  fail "B does not point at the run's folder in A: $(DB=B/sweep.db sql 'SELECT run_id, run_dir FROM runs')"
"$SWEEP" run proj/exp/t.yaml --results B --devices cpu:1x1 > b.txt 2>&1 || fail "the sweep in B: $(cat b.txt)"
grep -q "start base seed 1 ($id) on cpu:0, resuming" b.txt || fail "B did not resume the run: $(cat b.txt)"
grep -q "\"event\":\"start\".*\"resumed\":true" "A/runs/$id/events.jsonl" || fail "the run did not resume from A's checkpoint"
[ ! -e "B/runs/$id" ] || fail "B trained the run afresh in a folder of its own"
# the second seed never started in A: started in B, and not said to resume (it has nothing to resume from)
grep -q "start base seed 2 ([0-9a-f]*) on cpu:0$" b.txt || fail "the second seed: $(cat a.txt b.txt)"
echo "moved_results: ok"
