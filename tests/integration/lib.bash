# Shared set-up of the integration tests (sourced, not a test): a temp dir as the working
# directory, a small corpus, a prepared bytes dataset and a tiny run config.
set -euo pipefail
# Under pipefail, `cmd | grep -q PATTERN` fails at random: grep exits at its first match, and cmd,
# still writing, dies of SIGPIPE. Grep the output as a string instead: grep -q P <<< "$(cmd)".
# Likewise `| head -1`: take a first line with `| sed -n 1p`, which reads to the end.
: "${SWEEP:?SWEEP must point at the sweep binary}"
work=$(mktemp -d)
# A test that fails midway leaves no process of its own behind (a server, a sweep in the background).
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$work"' EXIT
cd "$work"

fail() {
  echo "FAIL: $*" >&2
  local keep=${TMPDIR:-/tmp}/sweep-failed-$(basename "$0" .sh)
  rm -rf "$keep" && cp -r "$work" "$keep" && echo "the test's folder is kept in $keep" >&2
  exit 1
}
expect_rc() {  # expect_rc CODE command...
  local want=$1; shift
  set +e; "$@"; local got=$?; set -e
  [ "$got" -eq "$want" ] || fail "'$*' exited $got, expected $want"
}
count() { local c; c=$(grep -c "$1" "$2" 2>/dev/null); echo "${c:-0}"; }

# Documents: the licence texts every Debian system ships (base-files), one per file.
make_corpus() {
  mkdir -p corpus
  find /usr/share/common-licenses -maxdepth 1 -type f -exec cp {} corpus/ \;
  [ "$(ls corpus | wc -l)" -ge 10 ] || fail "too few documents in /usr/share/common-licenses"
}

prepare_bytes() {
  make_corpus
  "$SWEEP" data prepare --input corpus --tokenizer bytes --out data/bytes --val 0.1 --test 0.1 >/dev/null
}

# tiny_config FILE STEPS
tiny_config() {
  cat > "$1" <<YAML
data: {dataset: data/bytes}
model: {n_layer: 2, n_head: 2, n_embd: 32, block_size: 32, dropout: 0.1}
train: {micro_batch: 8, tokens: $(( $2 * 8 * 32 )), lr: 3e-3, min_lr: 3e-4, schedule: cosine, warmup: 5, grad_clip: 1.0}
eval: {every: 10, val_tokens: 2K}
seeds: {init: 1, data: 1}
resources: {threads: 1}
YAML
}

# tiny_sweep FILE NAME STEPS [extra interventions YAML lines...]
tiny_sweep() {
  local file=$1 name=$2 steps=$3; shift 3
  {
    echo "sweep: $name"
    echo "baseline: base"
    echo "seeds: [1, 2]"
    echo "base:"
    echo "  data: {dataset: data/bytes}"
    echo "  model: {n_layer: 2, n_head: 2, n_embd: 32, block_size: 32, dropout: 0.1}"
    echo "  train: {micro_batch: 8, tokens: $(( steps * 8 * 32 )), lr: 3e-3, grad_clip: 1.0}"
    echo "  eval: {every: 20, val_tokens: 2K}"
    echo "interventions:"
    echo "  base: {}"
    for line in "$@"; do echo "  $line"; done
  } > "$file"
}

# eliminate_sweep FILE: the --eliminate tests' study (sweep el) — lr-tiny barely trains, worse by far
# from its first evaluations on; dropout-off near the baseline; 3 seeds of 100 steps, a validation
# point every 10, min_effect 0.01.
eliminate_sweep() {
  tiny_sweep "$1" el 100 "lr-tiny: {train.lr: 3e-6, train.min_lr: 3e-7}" "dropout-off: {model.dropout: 0.0}"
  sed -i 's/^seeds: .*/seeds: [1, 2, 3]/; s/every: 20/every: 10/' "$1"
  echo "min_effect: 0.01" >> "$1"
}

sql() { sqlite3 "${DB:-res/sweep.db}" "$1"; }

# run_after_kill OUT ARGS...: `sweep run ARGS` (its output in OUT) after a scheduler was killed with
# -9. The workers it left die of SIGPIPE at their next event, but the front starts in milliseconds,
# and one it forked in the instant before the kill is not yet known to the database: the run then
# skips what such a worker still trains ("another process (pid N) trains it", exit 1) and, as it
# says, the next `sweep run` takes it up once that has ended — which this does.
run_after_kill() {
  local out=$1 rc pid; shift
  set +e; "$SWEEP" run "$@" > "$out"; rc=$?; set -e
  if [ "$rc" -eq 1 ] && grep -q "another process (pid [0-9]*) trains it" "$out"; then
    for pid in $(grep -o "another process (pid [0-9]*)" "$out" | grep -o "[0-9]*"); do
      while [ -e "/proc/$pid" ] && ! grep -q '^State:.*Z' "/proc/$pid/status" 2>/dev/null; do sleep 0.05; done
    done
    "$SWEEP" run "$@" >> "$out"
  else
    return "$rc"
  fi
}

# Every run of the database: one row per (run, split, step), train steps 1..total, integrity ok.
check_database() {
  [ "$(sql 'PRAGMA integrity_check')" = ok ] || fail "integrity_check: $(sql 'PRAGMA integrity_check')"
  local bad
  bad=$(sql "SELECT run_id FROM runs r WHERE status = 'done' AND
               ((SELECT COUNT(*) FROM metrics m WHERE m.run_id = r.run_id AND split = 'train') != r.total_steps
             OR (SELECT MAX(step) FROM metrics m WHERE m.run_id = r.run_id AND split = 'train') != r.total_steps)")
  [ -z "$bad" ] || fail "runs with missing or extra train rows: $bad
$(sql "SELECT run_id, status, total_steps, (SELECT COUNT(*) FROM metrics m WHERE m.run_id = r.run_id AND split = 'train'),
              (SELECT MAX(step) FROM metrics m WHERE m.run_id = r.run_id AND split = 'train') FROM runs r")"
}

# test_loss RUN_DIR: the test loss its end event reports
test_loss() { grep '"status":"done"' "$1/events.jsonl" | sed 's/.*"test_loss":\([^,]*\).*/\1/'; }

# pid of the worker process training run $1
worker_pid() { pgrep -f "worker /.*/res/runs/$1/config.yaml" | sed -n 1p; }

wait_for_train_events() {  # wait_for_train_events FILE COUNT
  for _ in $(seq 1 600); do
    [ "$(count '"event":"train"' "$1" 2>/dev/null)" -ge "$2" ] && return 0
    sleep 0.05
  done
  fail "$1 never reached $2 train events"
}

# preempt_train DIR EVENTS ARGS...: `sweep train ARGS --run-dir DIR` stopped by SIGTERM once DIR
# has EVENTS train events; fails unless it exits 75 (preempted: it checkpointed, to resume).
preempt_train() {
  local dir=$1 events=$2 pid rc
  shift 2
  "$SWEEP" train "$@" --run-dir "$dir" > /dev/null 2>&1 &
  pid=$!
  wait_for_train_events "$dir/events.jsonl" "$events"
  kill -TERM "$pid"
  set +e; wait "$pid"; rc=$?; set -e
  [ "$rc" -eq 75 ] || fail "SIGTERM to sweep train $* in $dir: exit $rc, expected 75"
}

# A process that runs (a zombie waiting for its parent to reap it does not).
alive() { [ -r "/proc/$1/stat" ] && [ "$(cut -d' ' -f3 "/proc/$1/stat" 2>/dev/null)" != Z ]; }

# signal_rank LAUNCHER RANK SIGNAL: sends SIGNAL to that rank of a `sweep train --nproc` launcher
# (found by the RANK in its environment), waits for the launcher and sets $rc (its exit status)
# and $elapsed (seconds since the signal). Fails if any of its ranks outlives it: the ranks are
# these pids, not a command-line pattern another test's run could match.
signal_rank() {
  local launcher=$1 ranks target="" p start
  ranks=$(pgrep -P "$launcher" || true)
  for p in $ranks; do
    grep -qx "RANK=$2" <<< "$(tr '\0' '\n' < "/proc/$p/environ")" && target=$p
  done
  [ -n "$target" ] || fail "rank $2 not found among the launcher's children"
  start=$(date +%s)
  kill -"$3" "$target"
  set +e; wait "$launcher"; rc=$?; set -e
  elapsed=$(( $(date +%s) - start ))
  for p in $ranks; do
    if alive "$p"; then
      kill -9 "$p" 2>/dev/null || true
      fail "rank pid $p outlived its launcher"
    fi
  done
}

# same_curve A B STEPS TOLERANCE [TEST_TOLERANCE]: run folders A and B trained STEPS steps each,
# A's per-step training losses within TOLERANCE of B's (relative), its test loss within
# TEST_TOLERANCE (default: TOLERANCE); prints the worst difference.
same_curve() {
  python3 - "$@" <<'PY'
import json, sys
a, b, steps, tol = sys.argv[1], sys.argv[2], int(sys.argv[3]), float(sys.argv[4])
test_tol = float(sys.argv[5]) if len(sys.argv) > 5 else tol
def events(d):
    return [json.loads(l) for l in open(d + "/events.jsonl")]
ea, eb = events(a), events(b)
# by step, the last event of each (a resumed run trains the steps since its checkpoint again)
la = list({e["step"]: e["loss"] for e in ea if e["event"] == "train"}.values())
lb = list({e["step"]: e["loss"] for e in eb if e["event"] == "train"}.values())
assert len(la) == len(lb) == steps, (len(la), len(lb))
worst = max(abs(x - y) / abs(y) for x, y in zip(la, lb))
assert worst < tol, f"per-step losses differ by {worst:.2e} relative"
ta = [e["test_loss"] for e in ea if e["event"] == "end" and "test_loss" in e][-1]  # not a preempted end's
tb = [e["test_loss"] for e in eb if e["event"] == "end" and "test_loss" in e][-1]
assert abs(ta - tb) / tb < test_tol, (ta, tb)
print(f"{a} = {b}: {steps} steps, worst relative loss difference {worst:.1e}, test loss {ta:.7f} / {tb:.7f}")
PY
}
