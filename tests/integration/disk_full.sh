# A full disk, for real: the results folder on a small tmpfs (mounted in a private mount
# namespace, so nothing outlives the test). A worker that cannot write its checkpoint, and a
# disk filled while runs train: one line naming the path, exit 74, no run left `running`, no
# temporary file left, the database whole; after space is freed the same command finishes the
# sweep, every run's test loss identical to the same sweep run on a roomy disk.
if [ -z "${SWEEP_MOUNT_NS:-}" ]; then  # again, inside a mount namespace of its own
  if [ "$(id -u)" -eq 0 ] && unshare -m true 2>/dev/null; then
    exec env SWEEP_MOUNT_NS=1 unshare -m bash "$0"
  elif unshare -rm true 2>/dev/null; then
    exec env SWEEP_MOUNT_NS=1 unshare -rm bash "$0"
  fi
  echo "SKIP: cannot make a mount namespace here (needs root, or unprivileged user namespaces) to mount a small tmpfs"
  exit 77
fi
source "$(dirname "$0")/lib.bash"
trap 'umount "$work"/res/runs/*/checkpoint "$work/res" 2>/dev/null || true; rm -rf "$work"' EXIT
command -v sqlite3 >/dev/null || fail "sqlite3 is needed (apt-get install sqlite3)"
small_disk() {  # small_disk DIR SIZE
  mkdir -p "$1"
  mount -t tmpfs -o "size=$2" tmpfs "$1" 2>/dev/null || { echo "SKIP: cannot mount a tmpfs here"; exit 77; }
}
# After a stop for a full disk: the stop said so in one line naming the path, nothing is
# `running`, no temporary file is left, the database is whole.
check_stopped() {  # check_stopped OUTPUT CODE
  [ "$2" -eq 74 ] || fail "a full disk: exit $2, not 74: $(cat "$1")"
  grep -q "No space left on device\|database or disk is full" "$1" || fail "no disk-full message: $(cat "$1")"
  grep -q "unexpected error\|terminate called" "$1" && fail "a crash, not a message: $(cat "$1")"
  [ "$(sql "SELECT COUNT(*) FROM runs WHERE status = 'running'")" -eq 0 ] ||
    fail "runs left running: $(sql "SELECT run_id, status FROM runs")"
  [ -z "$(find res -name '*.tmp.*')" ] || fail "temporary files left: $(find res -name '*.tmp.*')"
  [ "$(sql 'PRAGMA integrity_check')" = ok ] || fail "integrity_check: $(sql 'PRAGMA integrity_check')"
}
# Every run of the sweep finished with the test loss of the same run on a roomy disk.
check_as_reference() {
  check_database
  for id in $(DB=ref/sweep.db sql "SELECT run_id FROM runs"); do
    [ "$(sql "SELECT test_loss FROM runs WHERE run_id = '$id' AND status = 'done'")" = \
      "$(DB=ref/sweep.db sql "SELECT test_loss FROM runs WHERE run_id = '$id'")" ] ||
      fail "run $id: $(sql "SELECT status, test_loss FROM runs WHERE run_id = '$id'"), reference $(DB=ref/sweep.db sql "SELECT test_loss FROM runs WHERE run_id = '$id'")"
  done
}

prepare_bytes
tiny_sweep s.yaml full 300 "nodrop: {model.dropout: 0.0}"
"$SWEEP" run s.yaml --results ref --devices cpu:2x1 > ref.txt 2>&1 || fail "the reference sweep: $(cat ref.txt)"

# ---- a disk too small for a checkpoint (the first run's checkpoint folder on a 200k tmpfs; the
# database has room): the worker stops, the sweep stops ----
"$SWEEP" plan s.yaml --results res > plan.txt
first=$(awk '$1 == "base" && $2 == "1" {print $3}' plan.txt)
small_disk "res/runs/$first/checkpoint" 200k
code=0; "$SWEEP" run s.yaml --results res --devices cpu:1x1 > run1.txt 2>&1 || code=$?
check_stopped run1.txt "$code"
grep -q "cannot write the checkpoint $PWD/res/runs/.*/checkpoint/ckpt.pt: No space left on device" run1.txt ||
  fail "the message names the checkpoint: $(cat run1.txt)"
[ "$(sql "SELECT COUNT(*) FROM runs WHERE status = 'interrupted'")" -eq 1 ] || fail "one run stopped: $(cat run1.txt)"
[ "$(sql "SELECT COUNT(*) FROM runs WHERE status = 'pending'")" -eq 3 ] || fail "the others never started: $(cat run1.txt)"
mount -o remount,size=64m "res/runs/$first/checkpoint"
"$SWEEP" run s.yaml --results res --devices cpu:1x1 > run2.txt 2>&1 || fail "after space was freed: $(cat run2.txt)"
check_as_reference
umount "res/runs/$first/checkpoint" && rm -rf res

# ---- the disk filled while two runs train: whichever write meets it first ----
small_disk res 64m
"$SWEEP" run s.yaml --results res --devices cpu:2x1 > run3.txt 2>&1 &
sched=$!
for _ in $(seq 1 600); do [ "$(ls res/runs 2>/dev/null | wc -l)" -ge 2 ] && break; sleep 0.05; done
wait_for_train_events "res/runs/$(ls res/runs | sed -n 1p)/events.jsonl" 30
dd if=/dev/zero of=res/filler bs=64k 2>/dev/null || true  # until the disk is full
code=0; wait "$sched" || code=$?
check_stopped run3.txt "$code"
rm res/filler
"$SWEEP" run s.yaml --results res --devices cpu:2x1 > run4.txt 2>&1 || fail "after space was freed: $(cat run4.txt)"
check_as_reference
[ -z "$(find res -name '*.tmp.*' -o -name '.sweep-reserve')" ] || fail "left behind: $(find res -name '*.tmp.*' -o -name '.sweep-reserve')"

# ---- a disk smaller than the scheduler's reserve, two runs at once: resumable all the same ----
umount res && small_disk res 600k
code=0; "$SWEEP" run s.yaml --results res --devices cpu:2x1 > run6.txt 2>&1 || code=$?
[ "$code" -eq 74 ] || fail "a disk smaller than the reserve: exit $code, $(cat run6.txt)"
mount -o remount,size=64m res
"$SWEEP" run s.yaml --results res --devices cpu:2x1 > run7.txt 2>&1 || fail "after space was freed: $(cat run7.txt)"
check_as_reference

# ---- a read-only results folder: one line, nothing changed ----
cp s.yaml unchanged.yaml  # the sweep file edited (one more intervention), in place
sed -i 's/^  base: {}/  base: {}\n  lr2: {train.lr: 2e-3}/' s.yaml
before=$(sql "SELECT COUNT(*) FROM runs")
mount -o remount,ro res
code=0; "$SWEEP" run s.yaml --results res --devices cpu:2x1 > run5.txt 2>&1 || code=$?
cp unchanged.yaml s.yaml
[ "$code" -eq 74 ] && [ "$(wc -l < run5.txt)" -eq 1 ] && grep -q "Read-only file system" run5.txt ||
  fail "a read-only folder: exit $code, $(cat run5.txt)"
# ... and what only reads it works as it is
"$SWEEP" status full --results res > status.txt 2>&1 || fail "sweep status on a read-only folder: $(cat status.txt)"
"$SWEEP" report full --results res --out ro-report > ro-report.txt 2>&1 || fail "report on a read-only folder: $(cat ro-report.txt)"
grep -q "nodrop" ro-report/report.md || fail "the report of a read-only folder"
mount -o remount,rw res
[ "$(sql "SELECT COUNT(*) FROM runs")" -eq "$before" ] || fail "a refused sweep run changed the database"
cat run1.txt run3.txt run6.txt run5.txt
echo "disk_full: ok"
