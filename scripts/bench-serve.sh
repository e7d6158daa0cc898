#!/usr/bin/env bash
# How fast `sweep serve` answers at scale: a results database of VARIANTS × SEEDS finished runs of
# STEPS training steps each (a validation point every 20 steps), written straight into SQLite
# with the current schema, then each route timed with curl — the first request of a sweep as
# serve starts (waiting for its read of the sweep), the next (cached), the curves thinned to 1000
# buckets, and the first request to a server started 5 s before. Then, with
# --wall, whether a page left open slows a sweep: a small sweep (4 runs, one slot of one thread)
# trained ROUNDS times alone and ROUNDS times with `sweep serve` and the sweep's page open in
# headless Chromium (polling, redrawing), alternating. Prints the figures; asserts nothing.
#
#   scripts/bench-serve.sh [VARIANTS=100] [SEEDS=10] [STEPS=2000] [--wall ROUNDS]
set -euo pipefail
cd "$(dirname "$0")/.."
wall=0
args=()
while [ $# -gt 0 ]; do
  case $1 in
    --wall) wall=${2:?--wall needs a number of rounds}; shift ;;
    *) args+=("$1") ;;
  esac
  shift
done
variants=${args[0]:-100} seeds=${args[1]:-10} steps=${args[2]:-2000}
sweep=$PWD/build/sweep
[ -x "$sweep" ] || { echo "bench-serve: build sweep first (scripts/setup.sh)" >&2; exit 2; }
work=$(mktemp -d)
trap 'kill $server 2>/dev/null || true; rm -rf "$work"' EXIT
mkdir -p "$work/results/runs"
"$sweep" ingest "$work/results" > /dev/null  # an empty database with the current schema

start=$(date +%s%N)
sqlite3 "$work/results/sweep.db" <<SQL
BEGIN;
INSERT INTO sweeps(name, file, spec, baseline, updated_at) VALUES ('big', 'big.yaml', 'sweep: big', 'v0', 0);
WITH RECURSIVE v(k) AS (SELECT 0 UNION ALL SELECT k + 1 FROM v WHERE k + 1 < $variants)
INSERT INTO variants(sweep, name, position, overrides) SELECT 'big', 'v' || k, k, '{}' FROM v;
WITH RECURSIVE v(k) AS (SELECT 0 UNION ALL SELECT k + 1 FROM v WHERE k + 1 < $variants),
               s(seed) AS (SELECT 1 UNION ALL SELECT seed + 1 FROM s WHERE seed < $seeds)
INSERT INTO runs(run_id, config, init_seed, data_seed, status, steps, total_steps, tokens, test_loss, wall_seconds,
                 tokens_per_s, run_dir, updated_at)
  SELECT printf('r%04ds%03d', k, seed), 'x', seed, seed, 'done', $steps, $steps, $steps * 4096,
         3 + k / 1000.0 + (abs(random()) % 1000) / 100000.0, 600, 10000, 'runs/x', 0 FROM v, s;
INSERT INTO sweep_runs SELECT 'big', 'v' || CAST(substr(run_id, 2, 4) AS INTEGER), run_id FROM runs;
WITH RECURSIVE t(step) AS (SELECT 1 UNION ALL SELECT step + 1 FROM t WHERE step < $steps)
INSERT INTO metrics(run_id, split, step, tokens, loss, loss_status, lr, grad_norm, grad_norm_status, tokens_per_s)
  SELECT run_id, 'train', step, step * 4096, 3 + 1000.0 / (step + 100) + (abs(random()) % 1000) / 10000.0, 'finite',
         0.001, 1 + (abs(random()) % 1000) / 1000.0, 'finite', 10000 FROM runs, t;
INSERT INTO metrics(run_id, split, step, tokens, loss, loss_status)
  SELECT run_id, 'val', step, tokens, loss + 0.05, 'finite' FROM metrics WHERE split = 'train' AND step % 20 = 0;
COMMIT;
SQL
echo "bench-serve: $((variants * seeds)) runs × $steps steps written in $(( ($(date +%s%N) - start) / 1000000 )) ms" \
     "($(du -h "$work/results/sweep.db" | cut -f1) database)"

start_server() {  # start_server RESULTS: sets server (its pid) and url once it listens
  "$sweep" serve --results "$1" --port 0 > "$work/serve.txt" &
  server=$!
  for _ in $(seq 100); do grep -q "http://" "$work/serve.txt" && break; sleep 0.1; done
  url=$(grep -o 'http://[^ ]*' "$work/serve.txt")
}
start_server "$work/results"
time_route() {  # time_route LABEL PATH
  curl -s -o "$work/body" -w "%{http_code} %{time_total} %{size_download}" "$url$2" |
    { read -r code seconds bytes || true; printf '  %-44s %s  %6.3f s  %8d bytes\n' "$1" "$code" "$seconds" "$bytes"; }
}
time_route "page (/sweeps/big)" "sweeps/big"
time_route "sweeps list (/api/sweeps)" "api/sweeps"
time_route "sweep, first request as serve starts" "api/sweeps/big"
time_route "sweep, again (cached)" "api/sweeps/big"
time_route "validation curves, 1000 buckets" "api/sweeps/big/curves?metric=val_loss&px=1000"
time_route "training curves, 1000 buckets" "api/sweeps/big/curves?metric=train_loss&px=1000"
time_route "training curves + every seed, 1000 buckets" "api/sweeps/big/curves?metric=train_loss&px=1000&seeds=1"
time_route "one run" "api/runs/r0000s001"
echo "  peak resident memory of the server: $(grep VmHWM /proc/$server/status | awk '{print $2, $3}')"
kill $server; wait $server 2>/dev/null || true
# serve reads the newest sweep as it starts: a page opened a few seconds later finds it read
start_server "$work/results"
sleep 5
time_route "sweep, first request 5 s after serve started" "api/sweeps/big"
kill $server; wait $server 2>/dev/null || true

[ "$wall" -gt 0 ] || exit 0
# ---- a sweep's wall time, alone and with its page open ----
mkdir -p "$work/corpus" && cp /usr/share/common-licenses/* "$work/corpus/" 2>/dev/null || true
"$sweep" data prepare --input "$work/corpus" --tokenizer bytes --out "$work/data/bytes" --val 0.1 --test 0.1 > /dev/null
cat > "$work/wall.yaml" <<YAML
sweep: wall
baseline: base
seeds: [1, 2]
base:
  data: {dataset: data/bytes}
  model: {n_layer: 2, n_head: 2, n_embd: 64, block_size: 64}
  train: {micro_batch: 8, tokens: $(( 150 * 8 * 64 )), lr: 3e-3}
  eval: {every: 10, val_tokens: 4K}
interventions:
  base: {}
  lr: {train.lr: 1e-3}
YAML
sweep_wall() {  # sweep_wall RESULTS: the sweep's own wall time, from its summary line
  "$sweep" run "$work/wall.yaml" --results "$1" --devices cpu:1x1 | sed -n 's/.* runs finished, .* \([0-9]*m[0-9]*s\)$/\1/p'
}
for round in $(seq "$wall"); do
  alone=$(sweep_wall "$work/alone-$round")
  mkdir -p "$work/open-$round/runs" && "$sweep" ingest "$work/open-$round" > /dev/null
  start_server "$work/open-$round"
  python3 - "$url" <<'PY' &
import sys, time
sys.path.insert(0, "tests/integration")
from browser_check import Browser
b = Browser()
try:
    b.open_page(sys.argv[1] + "sweeps/wall")  # before the sweep is recorded: it comes alive when it is
    time.sleep(3600)  # until killed: the page polls and redraws meanwhile
finally:
    b.close()
PY
  browser=$!
  sleep 3
  open=$(sweep_wall "$work/open-$round")
  kill $browser $server; wait $browser $server 2>/dev/null || true
  echo "  round $round: the sweep alone $alone, with its page open $open"
done
