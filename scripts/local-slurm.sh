#!/usr/bin/env bash
# A one-node Slurm on this machine, from Debian's packages (munge, slurmctld, slurmd, slurm-client;
# `scripts/setup.sh --test` installs them): every file in DIR, its own ports, proctrack/linuxproc,
# task/none. For trying the Slurm executor without a cluster, and for its test. Runs as root.
#   scripts/local-slurm.sh start DIR   # then: export SLURM_CONF=DIR/slurm.conf
#   scripts/local-slurm.sh stop DIR
set -euo pipefail
usage() { echo "usage: $0 start|stop DIR" >&2; exit 2; }
[ $# -eq 2 ] || usage
action=$1
dir=$(mkdir -p "$2" && cd "$2" && pwd)

stop() {
  for pidfile in "$dir"/slurmd.pid "$dir"/slurmctld.pid "$dir"/munge/munged.pid; do
    [ -f "$pidfile" ] && kill "$(cat "$pidfile")" 2>/dev/null || true
  done
}

start() {
  for tool in munged slurmctld slurmd sinfo; do
    command -v "$tool" >/dev/null || [ -x "/usr/sbin/$tool" ] ||
      { echo "$0: $tool is missing: scripts/setup.sh --test installs munge, slurmctld, slurmd and slurm-client" >&2; exit 1; }
  done
  [ "$(id -u)" -eq 0 ] || { echo "$0: the daemons of this one-node Slurm run as root" >&2; exit 1; }
  mkdir -p "$dir"/{state,spool,log,munge}
  chmod 755 "$dir" "$dir/munge"
  [ -f "$dir/munge/munge.key" ] || { head -c 1024 /dev/urandom > "$dir/munge/munge.key"; chmod 400 "$dir/munge/munge.key"; }
  # The daemons must not hold the caller's output open (a test runner waits for it to close).
  /usr/sbin/munged --force --socket="$dir/munge/sock" --key-file="$dir/munge/munge.key" \
    --pid-file="$dir/munge/munged.pid" --seed-file="$dir/munge/seed" --log-file="$dir/log/munged.log" \
    < /dev/null > /dev/null 2>&1
  local port=$(( 20000 + RANDOM % 20000 )) node
  node=$(hostname -s)
  cat > "$dir/slurm.conf" <<EOF
ClusterName=sweeplocal
SlurmctldHost=$node(127.0.0.1)
SlurmUser=root
SlurmdUser=root
SlurmctldPort=$port
SlurmdPort=$((port + 1))
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$dir/munge/sock
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool
SlurmctldPidFile=$dir/slurmctld.pid
SlurmdPidFile=$dir/slurmd.pid
SlurmctldLogFile=$dir/log/slurmctld.log
SlurmdLogFile=$dir/log/slurmd.log
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
PartitionName=local Nodes=ALL Default=YES MaxTime=INFINITE State=UP
EOF
  export SLURM_CONF=$dir/slurm.conf
  /usr/sbin/slurmctld -i < /dev/null > /dev/null 2>&1
  /usr/sbin/slurmd < /dev/null > /dev/null 2>&1
  for _ in $(seq 1 100); do
    sinfo --noheader -o %t 2>/dev/null | grep -q idle && break
    sleep 0.2
  done
  if ! sinfo --noheader -o %t | grep -q idle; then
    echo "$0: the one-node Slurm did not come up:" >&2
    tail -5 "$dir"/log/*.log >&2
    stop
    exit 1
  fi
  echo "one-node Slurm up (partition local); now: export SLURM_CONF=$dir/slurm.conf"
}

case $action in
  start) start ;;
  stop) stop ;;
  *) usage ;;
esac
