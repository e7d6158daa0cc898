# A run folder is trusted only as the run its name says (src/sched/run_folder.h), and an own
# trainer's finished runs are found again after its files change or move (sweeps/NAME.trainer):
#   - two folders' events.jsonl swapped: both reported by name and skipped by `sweep ingest`,
#     never a verdict flipped; a config.yaml edited after its run: skipped, and `sweep run` trains
#     nothing in it;
#   - the trainer's file edited, the database deleted, `sweep ingest`: every finished run kept;
#   - the results folder restored elsewhere, without the trainer: the same report, byte for byte;
#   - `sweep ingest RESULTS/runs/ID`: the run at the seeds its config says.
# Real processes, the real scheduler and database.
source "$(dirname "$0")/lib.bash"
command -v sqlite3 >/dev/null || fail "sqlite3 is needed (apt-get install sqlite3)"
sql() { sqlite3 "${DB:-res/sweep.db}" "$1"; }
mkdir project
cp "$(dirname "$0")/../data/trainers/toy-trainer.sh" project/
cat > project/t.yaml <<'YAML'
sweep: trust
baseline: base
seeds: [1, 2]
trainer:
  command: [./toy-trainer.sh, "{train.effect}", "6", plain]
  files: [toy-trainer.sh]
  keys: {train.effect: 0.0}
base: {}
interventions:
  base: {}
  better: {train.effect: 0.5}
YAML
"$SWEEP" run project/t.yaml --results res --devices cpu:2x1 > run.txt 2>&1 || fail "the sweep: $(cat run.txt)"
[ -f res/sweeps/trust.trainer ] || fail "no record of the trainer: $(ls res/sweeps)"
grep -q '"files":{"toy-trainer.sh":"[0-9a-f]\{64\}"}' res/sweeps/trust.trainer || fail "$(cat res/sweeps/trust.trainer)"
grep -q '"dir":"../project"' res/sweeps/trust.trainer || fail "the trainer's folder, relative: $(cat res/sweeps/trust.trainer)"
"$SWEEP" report trust --results res --out rep > /dev/null 2>&1 || fail "report"
"$SWEEP" plan project/t.yaml --results res > plan.txt
id() { awk -v v="$1" -v s="$2" '$1 == v && $2 == s {print $3}' plan.txt; }
base1=$(id base 1) better1=$(id better 1)
[ -n "$base1" ] && [ -n "$better1" ] || fail "no ids in $(cat plan.txt)"
grep -q "\"identity\":\"$base1\"" "res/runs/$base1/events.jsonl" || fail "the start carries no identity: $(sed -n 1p "res/runs/$base1/events.jsonl")"

# ---- the trainer edited, the database rebuilt: every finished run is found again ----
echo '# a comment' >> project/toy-trainer.sh
cp -r res edited && rm edited/sweep.db*
"$SWEEP" ingest edited > ingest.txt 2>&1 || fail "ingest after the edit: $(cat ingest.txt)"
DB=edited/sweep.db
[ "$(sql "SELECT COUNT(*) FROM sweep_runs s JOIN runs r USING (run_id) WHERE s.sweep = 'trust' AND r.status = 'done'")" = 4 ] ||
  fail "finished runs lost after an edit of the trainer: $(sql "SELECT variant, run_id FROM sweep_runs")"
"$SWEEP" report trust --results edited --out rep-edited > /dev/null 2>&1 || fail "report after the edit"
cmp rep/report.md rep-edited/report.md || fail "the report changed: $(diff rep/report.md rep-edited/report.md)"

# ---- restored elsewhere, with no trainer at all: the same report ----
mkdir -p far/away && cp -r res far/away/res && rm far/away/res/sweep.db*
(cd far/away && "$SWEEP" ingest res > ingest.txt 2>&1) || fail "ingest elsewhere: $(cat far/away/ingest.txt)"
"$SWEEP" report trust --results far/away/res --out rep-far > /dev/null 2>&1 || fail "report elsewhere"
cmp rep/report.md rep-far/report.md || fail "the restored report differs: $(diff rep/report.md rep-far/report.md)"

# ---- an older folder's record (NAME.trainer-dir, no hashes) still plans, from the trainer's files ----
older=old && cp -r res "$older" && rm "$older"/sweep.db* "$older/sweeps/trust.trainer"
cp "$(dirname "$0")/../data/trainers/toy-trainer.sh" project/toy-trainer.sh  # as it ran
echo "$PWD/project" > "$older/sweeps/trust.trainer-dir"
"$SWEEP" ingest "$older" > ingest-old.txt 2>&1 || fail "ingest of an older folder: $(cat ingest-old.txt)"
DB=$older/sweep.db
[ "$(sql "SELECT COUNT(*) FROM sweep_runs WHERE sweep = 'trust'")" = 4 ] || fail "an older folder's sweep: $(cat ingest-old.txt)"

# ---- two folders' events swapped: both skipped by name, the verdict never flipped ----
cp -r res swapped && rm swapped/sweep.db*
mv "swapped/runs/$base1/events.jsonl" tmp && mv "swapped/runs/$better1/events.jsonl" "swapped/runs/$base1/events.jsonl" &&
  mv tmp "swapped/runs/$better1/events.jsonl"
expect_rc 1 "$SWEEP" ingest swapped > swap.txt 2>&1
for r in "$base1" "$better1"; do
  grep -q "sweep ingest: run folder .*swapped/runs/$r skipped: its events.jsonl holds a start of run [0-9a-f]*, not of its config ($r)" swap.txt ||
    fail "the swapped folder $r is not said: $(cat swap.txt)"
done
DB=swapped/sweep.db
[ "$(sql "SELECT COUNT(*) FROM runs WHERE run_id IN ('$base1', '$better1') AND status = 'done'")" = 0 ] ||
  fail "a swapped folder was ingested: $(sql "SELECT run_id, status, test_loss FROM runs")"
[ "$(sql "SELECT COUNT(*) FROM runs WHERE status = 'done'")" = 2 ] || fail "the other runs: $(sql "SELECT run_id, status FROM runs")"

# ---- a config.yaml edited after its run: skipped by ingest, not trained on by run ----
cp -r res edited-config && rm edited-config/sweep.db*
sed -i 's/train.effect: 0.5\|effect: 0.5/effect: 0.25/' "edited-config/runs/$better1/config.yaml"
grep -q "0.25" "edited-config/runs/$better1/config.yaml" || fail "the edit did not take: $(cat "edited-config/runs/$better1/config.yaml")"
expect_rc 1 "$SWEEP" ingest edited-config > edit.txt 2>&1
grep -q "run folder .*edited-config/runs/$better1 skipped: its config.yaml is not the run its name says" edit.txt || fail "$(cat edit.txt)"
DB=edited-config/sweep.db
sql "UPDATE runs SET status = 'pending' WHERE run_id = '$better1'"  # as if it had not finished: `sweep run` takes it up
before=$(cat "edited-config/runs/$better1/events.jsonl")
expect_rc 1 "$SWEEP" run project/t.yaml --results edited-config --devices cpu:2x1 > run-edit.txt 2>&1
grep -q "fail  better seed 1 .*its folder .* is not this run's: its config.yaml is not the run its name says" run-edit.txt ||
  fail "sweep run trained in an edited folder: $(cat run-edit.txt)"
[ "$(cat "edited-config/runs/$better1/events.jsonl")" = "$before" ] || fail "the edited folder was written to"

# ---- a folder without its config.yaml, holding another run's events: said by ingest, refused by run ----
cp -r res noconfig && rm noconfig/sweep.db* "noconfig/runs/$base1/config.yaml"
cp "noconfig/runs/$better1/events.jsonl" "noconfig/runs/$base1/events.jsonl"
expect_rc 1 "$SWEEP" ingest noconfig > noconfig.txt 2>&1
grep -q "run folder .*noconfig/runs/$base1 skipped: it has events but no config.yaml" noconfig.txt || fail "$(cat noconfig.txt)"
rm noconfig/sweep.db*
expect_rc 1 "$SWEEP" run project/t.yaml --results noconfig --devices cpu:2x1 > noconfig-run.txt 2>&1
grep -q "fail  base seed 1 .*is not this run's: its events.jsonl holds a start of run $better1" noconfig-run.txt ||
  fail "sweep run took another run's events: $(cat noconfig-run.txt)"

# ---- an events.jsonl that is a FIFO: named, never read (a read would hang) ----
cp -r res fifo && rm fifo/sweep.db* "fifo/runs/$base1/events.jsonl" && mkfifo "fifo/runs/$base1/events.jsonl"
expect_rc 1 timeout 60 "$SWEEP" ingest fifo > fifo.txt 2>&1
grep -q "run folder .*fifo/runs/$base1 skipped: its events.jsonl is not a file" fifo.txt || fail "a FIFO: $(cat fifo.txt)"

# ---- an events.jsonl grown to 1 GB (its events, then a sparse tail: one line of zeros) read in
# bounded memory: its result stands (a whole-file read took 2.5-3x its size, and died of it) ----
cp -r res big && rm big/sweep.db* && truncate -s 1G "big/runs/$base1/events.jsonl"
( ulimit -v 1000000 && "$SWEEP" ingest big > big.txt 2>&1 ) || fail "ingest of a 1 GB events.jsonl under 1 GB of memory: $(cat big.txt)"
DB=big/sweep.db
[ "$(sql "SELECT COUNT(*) FROM runs WHERE status = 'done'")" = 4 ] || fail "the runs: $(sql "SELECT run_id, status FROM runs")"

# ---- the same runs trained again elsewhere, restored over these folders: ingest keeps their
# record alone, none of the segments trained here (wall times doubled, "started more than once") ----
"$SWEEP" run project/t.yaml --results res2 --devices cpu:2x1 > run2.txt 2>&1 || fail "the second training: $(cat run2.txt)"
cp -r res restored && cp -r res2/runs/. restored/runs/
"$SWEEP" ingest restored > restored.txt 2>&1 || fail "ingest of the restored: $(cat restored.txt)"
DB=restored/sweep.db
[ "$(sql "SELECT COUNT(*) FROM segments")" = 4 ] || fail "segments of both trainings: $(sql "SELECT run_id, started FROM segments")"
[ "$(sql "SELECT group_concat(round(wall_seconds, 3)) FROM (SELECT wall_seconds FROM runs ORDER BY run_id)")" = \
  "$(DB=res2/sweep.db sql "SELECT group_concat(round(wall_seconds, 3)) FROM (SELECT wall_seconds FROM runs ORDER BY run_id)")" ] ||
  fail "wall times: $(sql "SELECT run_id, wall_seconds FROM runs")"

# ---- one run folder: the seeds its config says ----
mkdir one && "$SWEEP" ingest "res/runs/$(id base 2)/" --results one > one.txt 2>&1 || fail "one folder: $(cat one.txt)"
DB=one/sweep.db
[ "$(sql "SELECT init_seed, data_seed, status FROM runs")" = "2|2|done" ] || fail "one folder's row: $(sql "SELECT * FROM runs")"
check_database
echo "run_folder_trust: ok"
