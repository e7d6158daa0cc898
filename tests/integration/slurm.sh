#!/usr/bin/env bash
# The Slurm executor on a real Slurm: this test starts a one-node cluster from Debian's packages
# (munged, slurmctld, slurmd; proctrack/linuxproc, task/none; every file in the test's folder, its
# own ports) and stops it at the end. A 2-variant × 2-seed sweep, one variant with 2 ranks, runs
# as sbatch array tasks; the database gets every curve; `sweep report` reads it; a task sent
# `scancel --signal=TERM` checkpoints, is requeued and resumes to the uninterrupted result; Ctrl-C
# cancels the tasks and a second `sweep run` resumes them. A trainer of your own runs as array tasks too.
local_slurm=$(cd "$(dirname "$0")/../../scripts" && pwd)/local-slurm.sh  # before lib.bash changes directory
source "$(dirname "$0")/lib.bash"
for tool in munged slurmctld slurmd sbatch squeue scancel scontrol; do
  command -v "$tool" >/dev/null || [ -x "/usr/sbin/$tool" ] ||
    fail "$tool is missing: scripts/setup.sh --test installs munge, slurmctld, slurmd and slurm-client"
done
[ "$(id -u)" -eq 0 ] || fail "the one-node Slurm of this test runs its daemons as root"

# ---- the cluster ----
cluster=$work/cluster
stop_cluster() {
  "$local_slurm" stop "$cluster"
  sleep 1
  rm -rf "$work"
}
trap stop_cluster EXIT
"$local_slurm" start "$cluster" > /dev/null || fail "the test cluster did not come up"
export SLURM_CONF=$cluster/slurm.conf

# ---- a sweep through the Slurm executor ----
prepare_bytes
tiny_sweep s.yaml onslurm 40 "two-ranks: {resources.ranks: 2}"
"$SWEEP" run s.yaml --results res --executor slurm --partition local --time 10:00 > run.txt 2>&1 ||
  fail "sweep run --executor slurm: $(cat run.txt)"
cat run.txt
[ "$(sql "SELECT COUNT(*) FROM runs WHERE status = 'done'")" -eq 4 ] || fail "4 runs done: $(cat run.txt)"
[ "$(sql "SELECT COUNT(*) FROM runs WHERE job LIKE '%\_%' ESCAPE '\\'")" -eq 4 ] || fail "a Slurm task per run"
check_database
grep -q "#SBATCH --ntasks=2" res/onslurm/slurm/*.sbatch || fail "no 2-task array script"
two=res/$(sql "SELECT r.run_dir FROM runs r JOIN sweep_runs s USING (run_id) WHERE s.variant = 'two-ranks' LIMIT 1")
grep -q "2 data-parallel ranks (Slurm environment)" "$two/train.log" || fail "the 2-rank run did not run 2 ranks"
grep -q "ENDED" <<< "$("$SWEEP" status onslurm --results res)" || fail "sweep status shows no Slurm task"
"$SWEEP" report onslurm --results res --out rep --format json > rep.json 2>/dev/null || fail "report of a Slurm sweep"
grep -q '"two-ranks"' rep.json || fail "the report lacks the 2-rank variant"
grep -q "4 already finished, 0 to run" <<< "$("$SWEEP" run s.yaml --results res --executor slurm)" ||
  fail "a finished Slurm sweep ran again"

# ---- a trainer of your own as Slurm array tasks: the host runs it in each task, events as for sweep's core ----
cp "$SWEEP_TEST_DATA/trainers/toy-trainer.sh" .
cat > own.yaml <<'YAML'
sweep: ownslurm
baseline: base
seeds: [1, 2]
trainer:
  command: [./toy-trainer.sh, "{train.effect}", "6", plain]
  files: [toy-trainer.sh]
  keys: {train.effect: 0.0}
base: {}
interventions: {base: {}, better: {train.effect: 0.05}}
YAML
"$SWEEP" run own.yaml --results res --executor slurm --partition local --time 10:00 > own.txt 2>&1 ||
  fail "a trainer of your own on Slurm: $(cat own.txt)"
"$SWEEP" report ownslurm --results res --out rep-own --format json > rep-own.json 2>/dev/null || fail "its report"
python3 -c "
import json; v = {x['name']: x for x in json.load(open('rep-own.json'))['variants']}
assert v['better']['method'] == 'paired' and abs(v['better']['improvement'] - 0.05) < 1e-9, v['better']" ||
  fail "the own trainer's Slurm report: $(cat rep-own.json)"
[ "$(sql "SELECT COUNT(*) FROM runs r JOIN sweep_runs s USING (run_id) WHERE s.sweep = 'ownslurm' AND r.job LIKE '%\_%' ESCAPE '\\'")" -eq 4 ] ||
  fail "a Slurm task per run of the own trainer"

# await_training SWEEP: sets task, run and dir to the sweep's running Slurm task, its run and its run directory
# once that run has logged 100 training steps (task is empty after 30 s without).
await_training() {
  for _ in $(seq 1 300); do
    task=$(sql "SELECT job FROM runs JOIN sweep_runs USING (run_id) WHERE sweep = '$1' AND job_state = 'RUNNING'" 2>/dev/null)
    run=$(sql "SELECT run_id FROM runs WHERE job = '$task' AND job != ''" 2>/dev/null)
    dir=res/runs/$run
    [ -n "$task" ] && [ "$(count '"event":"train"' "$dir/events.jsonl")" -ge 100 ] && return
    sleep 0.1
  done
  task=
}

# ---- a task whose worker cannot write its files (exit 74): the sweep stops, resumable ----
tiny_sweep io.yaml ioslurm 60
"$SWEEP" plan io.yaml --results res > plan.txt
victim=$(awk '$1 == "base" && $2 == "1" {print $3}' plan.txt)
mkdir -p "res/runs/$victim" && echo "disk_full_at_step:5" > "res/runs/$victim/test-fault"
code=0; "$SWEEP" run io.yaml --results res --executor slurm > io.txt 2>&1 || code=$?
[ "$code" -eq 74 ] && grep -q "stopped base seed 1 ($victim) at step .*: cannot write .*events.jsonl: No space left" io.txt ||
  fail "a Slurm task that cannot write: exit $code, $(cat io.txt)"
[ "$(sql "SELECT status FROM runs WHERE run_id = '$victim'")" = interrupted ] || fail "the stopped run is not resumable"
rm "res/runs/$victim/test-fault"
"$SWEEP" run io.yaml --results res --executor slurm > io2.txt 2>&1 || fail "after the disk was freed: $(cat io2.txt)"
[ "$(sql "SELECT COUNT(*) FROM sweep_runs JOIN runs USING (run_id) WHERE sweep = 'ioslurm' AND status = 'done'")" -eq 2 ] ||
  fail "ioslurm: $(cat io2.txt)"
check_database

# ---- SIGTERM to a task: checkpoint, requeue, resume, the uninterrupted result ----
tiny_sweep long.yaml preempt 1500
sed -i 's/^seeds: \[1, 2\]/seeds: [1]/' long.yaml
"$SWEEP" run long.yaml --results res --executor slurm > long.txt 2>&1 &
scheduler=$!
await_training preempt
[ -n "$task" ] || fail "the long run never ran: $(cat long.txt)"
scancel --signal=TERM "$task"
wait "$scheduler" || fail "the preempted sweep did not finish: $(cat long.txt)"
cat long.txt
grep -q "requeued .* after SIGTERM" long.txt || fail "no requeue: $(cat long.txt)"
[ "$(count '"resumed":true' "$dir/events.jsonl")" -ge 1 ] || fail "the run did not resume from its checkpoint"
id=$(basename "$dir")
"$SWEEP" train "$dir/config.yaml" --run-dir straight --set resources.threads=1 > straight.txt 2>&1 ||  # as the task ran
  fail "the uninterrupted run: $(tail -5 straight.txt)"
[ "$(test_loss "$dir")" = "$(test_loss straight)" ] ||
  fail "resumed on Slurm: test loss $(test_loss "$dir"), uninterrupted $(test_loss straight)"
[ "$(sql "SELECT COUNT(*) FROM metrics WHERE run_id = '$id' AND split = 'train'")" -eq 1500 ] ||
  fail "train rows of the requeued run"

# ---- Ctrl-C: the sweep's tasks are cancelled, not requeued; `sweep run` again resumes them ----
tiny_sweep stop.yaml stopped 1500
sed -i 's/^seeds: \[1, 2\]/seeds: [3]/' stop.yaml  # not the run above
"$SWEEP" run stop.yaml --results res --executor slurm > stop.txt 2>&1 &
scheduler=$!
await_training stopped
[ -n "$task" ] || fail "the run to stop never ran: $(cat stop.txt)"
kill -INT "$scheduler"
code=0; wait "$scheduler" || code=$?
cat stop.txt
[ "$code" -eq 130 ] || fail "Ctrl-C: sweep run exited $code, not 130"
grep -q "Ctrl-C: cancelled Slurm job" stop.txt || fail "Ctrl-C did not cancel the Slurm job"
sleep 5  # time for a wrongly requeued task to show up
[ -z "$(squeue --noheader -j "${task%_*}" -o %i 2>/dev/null)" ] || fail "the cancelled task is still queued: $(squeue)"
[ "$(sql "SELECT status FROM runs WHERE job = '$task'")" = interrupted ] || fail "the cancelled run is not marked interrupted"
"$SWEEP" run stop.yaml --results res --executor slurm > again.txt 2>&1 || fail "sweep run after Ctrl-C: $(cat again.txt)"
[ "$(sql "SELECT status FROM runs WHERE run_id = '$run'")" = done ] || fail "the interrupted run did not finish"
[ "$(count '"resumed":true' "$dir/events.jsonl")" -ge 1 ] || fail "the cancelled run started over instead of resuming"
echo "slurm: ok"
