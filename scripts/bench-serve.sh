#!/usr/bin/env bash
# How fast `sweep serve` answers at scale: a results database of VARIANTS × SEEDS finished runs of
# STEPS training steps each (a validation point every 20 steps), written straight into SQLite
# with the current schema, then each route timed with curl — the first request of a sweep (the
# analysis computed) and the next (cached), and the curves thinned to 1000 buckets. Prints the
# figures; asserts nothing (a benchmark, not a test).
#
#   scripts/bench-serve.sh [VARIANTS=100] [SEEDS=10] [STEPS=2000]
set -euo pipefail
cd "$(dirname "$0")/.."
variants=${1:-100} seeds=${2:-10} steps=${3:-2000}
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

"$sweep" serve --results "$work/results" --port 0 > "$work/serve.txt" &
server=$!
for _ in $(seq 100); do grep -q "http://" "$work/serve.txt" && break; sleep 0.1; done
url=$(grep -o 'http://[^ ]*' "$work/serve.txt")
time_route() {  # time_route LABEL PATH
  curl -s -o "$work/body" -w "%{http_code} %{time_total} %{size_download}" "$url$2" |
    { read -r code seconds bytes; printf '  %-44s %s  %6.3f s  %8d bytes\n' "$1" "$code" "$seconds" "$bytes"; }
}
time_route "page (/sweeps/big)" "sweeps/big"
time_route "sweeps list (/api/sweeps)" "api/sweeps"
time_route "sweep, first request (analysis)" "api/sweeps/big"
time_route "sweep, again (cached)" "api/sweeps/big"
time_route "validation curves, 1000 buckets" "api/sweeps/big/curves?metric=val_loss&px=1000"
time_route "training curves, 1000 buckets" "api/sweeps/big/curves?metric=train_loss&px=1000"
time_route "training curves + every seed, 1000 buckets" "api/sweeps/big/curves?metric=train_loss&px=1000&seeds=1"
time_route "one run" "api/runs/r0000s001"
echo "  peak resident memory of the server: $(grep VmHWM /proc/$server/status | awk '{print $2, $3}')"
