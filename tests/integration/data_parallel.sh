#!/usr/bin/env bash
# `sweep train --nproc 2`, for real: two processes meeting over a TCPStore with Gloo. The same
# per-step losses and test loss as one process with twice the accumulation; SIGTERM → both ranks
# stop at one step, one checkpoint, exit 75, and --resume finishes with the uninterrupted result;
# kill -9 of one rank → the run fails promptly, no rank is left behind.
source "$(dirname "$0")/lib.bash"
prepare_bytes
tiny_config run.yaml 600
sed -i 's/dropout: 0.1/dropout: 0.0/; s/^train: {/train: {precision: fp32, /' run.yaml

"$SWEEP" train run.yaml --nproc 2 --run-dir w2 > /dev/null 2> w2.err || fail "--nproc 2: $(cat w2.err)"
"$SWEEP" train run.yaml --set train.grad_accum=2 --run-dir w1 > /dev/null 2>&1
grep -q '2 data-parallel ranks' w2/train.log || fail "the run log does not mention its ranks"
# threads: auto shares the machine's cores among its ranks (at least one thread each).
"$SWEEP" train run.yaml --nproc 2 --set resources.threads=auto --set train.tokens=16K --run-dir auto > /dev/null 2>&1 ||
  fail "--nproc 2 with threads auto"
want=$(( $(nproc) / 2 > 0 ? $(nproc) / 2 : 1 ))
grep -q "\"threads\":$want," auto/events.jsonl ||
  fail "--nproc 2, threads auto: $(grep -o '"threads":[0-9]*' auto/events.jsonl) per rank, expected $want"
same_curve w2 w1 300 1e-5 || fail "world 2 × accum 1 differs from world 1 × accum 2"  # 600×8×32 tokens at 512 a step

# Preemption with dropout on (each rank's RNG is in the checkpoint): stop, resume, same result.
sed -i 's/dropout: 0.0/dropout: 0.1/' run.yaml
"$SWEEP" train run.yaml --nproc 2 --run-dir straight > /dev/null 2>&1
preempt_train stopped 50 run.yaml --nproc 2
[ "$(count '"status":"preempted"' stopped/events.jsonl)" -eq 1 ] || fail "one preempted end event"
"$SWEEP" train run.yaml --nproc 2 --run-dir stopped --resume > /dev/null 2>&1
[ "$(test_loss straight)" = "$(test_loss stopped)" ] ||
  fail "resumed test loss $(test_loss stopped) differs from uninterrupted $(test_loss straight)"

# kill -9 of rank 1: the launcher stops rank 0 and fails; nothing hangs.
SWEEP_DIST_TIMEOUT=20 "$SWEEP" train run.yaml --nproc 2 --run-dir killed > /dev/null 2> killed.err &
launcher=$!
wait_for_train_events killed/events.jsonl 20
signal_rank "$launcher" 1 9
[ "$rc" -ne 0 ] && [ "$rc" -ne 75 ] || fail "a killed rank must fail the run (exit $rc)"
[ "$elapsed" -le 40 ] || fail "the run took ${elapsed}s to fail after its rank died"

# In a sweep: resources.ranks 2 takes two slots; with one slot the sweep is refused up front.
tiny_sweep s.yaml dp 40 "two-ranks: {resources.ranks: 2}"
expect_rc 2 "$SWEEP" run s.yaml --results one --devices cpu 2> one.err
grep -q "asks for resources.ranks = 2 but --devices cpu gives 1 slot" one.err || fail "one slot: $(cat one.err)"
[ ! -e one/sweep.db ] || fail "a refused sweep wrote its database"
"$SWEEP" run s.yaml --results res --devices cpu:2x1 > dp.txt || fail "sweep with ranks: $(cat dp.txt)"
grep -q "two-ranks seed 1 .* on cpu:0+cpu:1" dp.txt || fail "the 2-rank run did not get both slots: $(cat dp.txt)"
[ "$(sql "SELECT COUNT(*) FROM runs WHERE status = 'done'")" -eq 4 ] || fail "4 runs done: $(cat dp.txt)"
check_database
# Paused and resumed in a sweep (at the looks of --eliminate): a 2-rank run's folder is its run — its
# start events count both ranks' batches (50 steps of 512 tokens), as planned from resources.ranks.
tiny_sweep el.yaml dpel 100 "two-ranks: {resources.ranks: 2}"
sed -i 's/every: 20/every: 10/' el.yaml
echo "min_effect: 0.01" >> el.yaml
"$SWEEP" run el.yaml --results resel --devices cpu:2x1 --eliminate > el.txt || fail "2 ranks paused: $(cat el.txt)"
grep -q "paused two-ranks seed 1 .* at step 20 for a look" el.txt || fail "the 2-rank run did not pause: $(cat el.txt)"
[ "$(DB=resel/sweep.db sql "SELECT COUNT(*) FROM runs WHERE status = 'done'")" -eq 4 ] ||
  fail "the 2-rank runs did not resume: $(cat el.txt)"
echo "data_parallel: ok (rank killed → exit $rc after ${elapsed}s)"
