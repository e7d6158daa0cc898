#!/usr/bin/env bash
# The Slurm executor on a real Slurm: this test starts a one-node cluster from Debian's packages
# (munged, slurmctld, slurmd; proctrack/linuxproc, task/none; every file in the test's folder, its
# own ports) and stops it at the end. A 2-variant × 2-seed sweep, one variant with 2 ranks, runs
# as sbatch array tasks; the database gets every curve; `sweep report` reads it; a task sent
# `scancel --signal=TERM` checkpoints, is requeued and resumes to the uninterrupted result.
source "$(dirname "$0")/lib.bash"
for tool in munged slurmctld slurmd sbatch squeue scancel scontrol; do
  command -v "$tool" >/dev/null || [ -x "/usr/sbin/$tool" ] ||
    fail "$tool is missing: scripts/setup.sh --test installs munge, slurmctld, slurmd and slurm-client"
done
[ "$(id -u)" -eq 0 ] || fail "the one-node Slurm of this test runs its daemons as root"

# ---- the cluster ----
cluster=$work/cluster
mkdir -p "$cluster"/{state,spool,log,munge}
chmod 755 "$cluster" "$cluster/munge"
head -c 1024 /dev/urandom > "$cluster/munge/munge.key"
chmod 400 "$cluster/munge/munge.key"
stop_cluster() {
  for pidfile in "$cluster"/slurmd.pid "$cluster"/slurmctld.pid "$cluster"/munge/munged.pid; do
    [ -f "$pidfile" ] && kill "$(cat "$pidfile")" 2>/dev/null || true
  done
  sleep 1
  rm -rf "$work"
}
trap stop_cluster EXIT
/usr/sbin/munged --force --socket="$cluster/munge/sock" --key-file="$cluster/munge/munge.key" \
  --pid-file="$cluster/munge/munged.pid" --seed-file="$cluster/munge/seed" --log-file="$cluster/log/munged.log" < /dev/null > /dev/null 2>&1
port=$(( 20000 + RANDOM % 20000 ))
node=$(hostname -s)
cat > "$cluster/slurm.conf" <<EOF
ClusterName=sweeptest
SlurmctldHost=$node(127.0.0.1)
SlurmUser=root
SlurmdUser=root
SlurmctldPort=$port
SlurmdPort=$((port + 1))
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$cluster/munge/sock
StateSaveLocation=$cluster/state
SlurmdSpoolDir=$cluster/spool
SlurmctldPidFile=$cluster/slurmctld.pid
SlurmdPidFile=$cluster/slurmd.pid
SlurmctldLogFile=$cluster/log/slurmctld.log
SlurmdLogFile=$cluster/log/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SchedulerType=sched/builtin
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
MpiDefault=none
ReturnToService=2
MinJobAge=600
KillWait=10
NodeName=$node NodeAddr=127.0.0.1 CPUs=$(nproc) RealMemory=2000 State=UNKNOWN
PartitionName=test Nodes=ALL Default=YES MaxTime=INFINITE State=UP
EOF
export SLURM_CONF=$cluster/slurm.conf
/usr/sbin/slurmctld -i < /dev/null > /dev/null 2>&1  # daemons must not hold the test's output open
/usr/sbin/slurmd < /dev/null > /dev/null 2>&1
for _ in $(seq 1 100); do
  sinfo --noheader -o %t 2>/dev/null | grep -q idle && break
  sleep 0.2
done
sinfo --noheader -o %t | grep -q idle || fail "the test cluster did not come up: $(tail -5 "$cluster"/log/*.log)"

# ---- a sweep through the Slurm executor ----
prepare_bytes
tiny_sweep s.yaml onslurm 40 "two-ranks: {resources.ranks: 2}"
"$SWEEP" run s.yaml --results res --executor slurm --partition test --time 10:00 > run.txt 2>&1 ||
  fail "sweep run --executor slurm: $(cat run.txt)"
cat run.txt
[ "$(sql "SELECT COUNT(*) FROM runs WHERE status = 'done'")" -eq 4 ] || fail "4 runs done: $(cat run.txt)"
[ "$(sql "SELECT COUNT(*) FROM runs WHERE job LIKE '%\_%' ESCAPE '\\'")" -eq 4 ] || fail "a Slurm task per run"
check_database
grep -q "#SBATCH --ntasks=2" res/onslurm/slurm/*.sbatch || fail "no 2-task array script"
two=$(sql "SELECT r.run_dir FROM runs r JOIN sweep_runs s USING (run_id) WHERE s.variant = 'two-ranks' LIMIT 1")
grep -q "2 data-parallel ranks (Slurm environment)" "$two/train.log" || fail "the 2-rank run did not run 2 ranks"
"$SWEEP" status onslurm --results res | grep -q "ENDED" || fail "sweep status shows no Slurm task"
"$SWEEP" report onslurm --results res --out rep --format json > rep.json 2>/dev/null || fail "report of a Slurm sweep"
grep -q '"two-ranks"' rep.json || fail "the report lacks the 2-rank variant"
"$SWEEP" run s.yaml --results res --executor slurm | grep -q "4 already finished, 0 to run" ||
  fail "a finished Slurm sweep ran again"

# ---- SIGTERM to a task: checkpoint, requeue, resume, the uninterrupted result ----
tiny_sweep long.yaml preempt 1500
sed -i 's/^seeds: \[1, 2\]/seeds: [1]/' long.yaml
"$SWEEP" run long.yaml --results res --executor slurm > long.txt 2>&1 &
scheduler=$!
for _ in $(seq 1 300); do
  task=$(sql "SELECT job FROM runs WHERE job_state = 'RUNNING' AND job != '' AND total_steps = 1500 LIMIT 1" 2>/dev/null)
  dir=$(sql "SELECT run_dir FROM runs WHERE job = '$task' AND job != ''" 2>/dev/null)
  [ -n "$task" ] && [ "$(count '"event":"train"' "$dir/events.jsonl")" -ge 100 ] && break
  sleep 0.1
done
[ -n "$task" ] || fail "the long run never ran: $(cat long.txt)"
scancel --signal=TERM "$task"
wait "$scheduler" || fail "the preempted sweep did not finish: $(cat long.txt)"
cat long.txt
grep -q "requeued .* after SIGTERM" long.txt || fail "no requeue: $(cat long.txt)"
[ "$(count '"resumed":true' "$dir/events.jsonl")" -ge 1 ] || fail "the run did not resume from its checkpoint"
id=$(basename "$dir")
"$SWEEP" train "$dir/config.yaml" --run-dir straight --set resources.threads=1 > /dev/null 2>&1  # as the task ran
test_loss() { grep '"status":"done"' "$1/events.jsonl" | sed 's/.*"test_loss":\([^,]*\).*/\1/'; }
[ "$(test_loss "$dir")" = "$(test_loss straight)" ] ||
  fail "resumed on Slurm: test loss $(test_loss "$dir"), uninterrupted $(test_loss straight)"
[ "$(sql "SELECT COUNT(*) FROM metrics WHERE run_id = '$id' AND split = 'train'")" -eq 1500 ] ||
  fail "train rows of the requeued run"
echo "slurm: ok"
