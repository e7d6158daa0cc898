#!/usr/bin/env bash
# ZeRO and expert parallelism for real: `sweep train --nproc 2` with parallel.zero or
# parallel.expert, two processes over Gloo. The experts over 2 ranks train as plain data
# parallel does (per-step losses within 1e-5 relative over 100 steps) and write checkpoint shards
# that `sweep export` assembles and `sweep eval` scores as the run's own test loss. Stage 3
# trains as plain data parallel does (per-step losses within 1e-5 relative over 200 steps); SIGTERM → both ranks
# stop at one step, each writes its shard, and --resume finishes with the uninterrupted result;
# stopped at 2 ranks and resumed as one process with accumulation 2, the run ends on the
# uninterrupted curve (1e-5 relative a step); kill -9 of one rank → the
# run fails, no rank is left behind, and --resume goes on from the last checkpoint to the
# uninterrupted result; a rank that stalls (SIGSTOP) → the other fails within the collective
# timeout instead of waiting forever.
source "$(dirname "$0")/lib.bash"
prepare_bytes
tiny_config run.yaml 400
sed -i 's/dropout: 0.1/dropout: 0.0/; s/^train: {/train: {precision: fp32, /' run.yaml

"$SWEEP" train run.yaml --nproc 2 --run-dir plain > /dev/null 2> plain.err || fail "--nproc 2: $(cat plain.err)"
"$SWEEP" train run.yaml --nproc 2 --set parallel.zero=3 --run-dir z3 > /dev/null 2> z3.err ||
  fail "--nproc 2, ZeRO-3: $(cat z3.err)"
grep -q 'ZeRO-3 over 2 ranks' z3/train.log || fail "the run log does not name its ZeRO stage: $(head -3 z3/train.log)"
same_curve z3 plain 200 1e-5 1e-6 || fail "ZeRO-3 differs from plain data parallel"  # 1e-6 over 6 steps: test_zero.cpp

# SIGTERM at ZeRO-2: both ranks stop at one step, each writes its shard; the resume is exact.
preempt_train z2 50 run.yaml --nproc 2 --set parallel.zero=2
ls z2/checkpoint/ckpt.step*.rank0-of-2.pt z2/checkpoint/ckpt.step*.rank1-of-2.pt > /dev/null ||
  fail "no shard per rank: $(ls z2/checkpoint)"
"$SWEEP" train run.yaml --nproc 2 --set parallel.zero=2 --run-dir z2 --resume > /dev/null 2>&1 || fail "ZeRO-2 resume"
"$SWEEP" train run.yaml --nproc 2 --set parallel.zero=2 --run-dir z2straight > /dev/null 2>&1
[ "$(test_loss z2)" = "$(test_loss z2straight)" ] ||
  fail "ZeRO-2 resumed test loss $(test_loss z2) differs from uninterrupted $(test_loss z2straight)"

# kill -9 of rank 1 at ZeRO-3: the launcher sees it die and ends rank 0; the run fails at once.
SWEEP_DIST_TIMEOUT=20 "$SWEEP" train run.yaml --nproc 2 --set parallel.zero=3 --run-dir killed > /dev/null 2> killed.err &
launcher=$!
wait_for_train_events killed/events.jsonl 30
signal_rank "$launcher" 1 9
[ "$rc" -ne 0 ] && [ "$rc" -ne 75 ] || fail "a killed rank must fail the run (exit $rc)"
[ "$elapsed" -le 40 ] || fail "the run took ${elapsed}s to fail after its rank died"
killed=$elapsed killed_rc=$rc
[ -s killed/checkpoint/ckpt.pt ] || fail "no checkpoint before the kill"
"$SWEEP" train run.yaml --nproc 2 --set parallel.zero=3 --run-dir killed --resume > /dev/null 2> resume.err ||
  fail "resume after a killed rank: $(cat resume.err)"
[ "$(test_loss killed)" = "$(test_loss z3)" ] ||
  fail "resumed after kill -9: test loss $(test_loss killed), uninterrupted $(test_loss z3)"
# Resharded: ZeRO-3 over 2 ranks stopped, resumed as one process with accumulation 2 (the same
# batch of a step); it ends on the uninterrupted run's curve.
preempt_train moved 50 run.yaml --nproc 2 --set parallel.zero=3
"$SWEEP" train run.yaml --set train.grad_accum=2 --run-dir moved --resume > /dev/null 2> moved.err ||
  fail "resume of 2 ranks as one process: $(cat moved.err)"
grep -q 'resharded as it was read' moved/train.log || fail "the log does not say the checkpoint was resharded"
same_curve moved z3 200 1e-5 || fail "resharded to one process, the run left its curve"
# SIGSTOP of rank 1: alive but silent. Rank 0 waits in a collective for SWEEP_DIST_TIMEOUT, then fails.
SWEEP_DIST_TIMEOUT=10 "$SWEEP" train run.yaml --nproc 2 --set parallel.zero=3 --run-dir stalled > stalled.out 2> stalled.err &
launcher=$!
wait_for_train_events stalled/events.jsonl 30
signal_rank "$launcher" 1 STOP
[ "$rc" -ne 0 ] && [ "$rc" -ne 75 ] || fail "a stalled rank must fail the run (exit $rc)"
[ "$elapsed" -le 60 ] || fail "the run took ${elapsed}s to fail after its rank stalled (timeout 10 s)"
stalled=$elapsed stalled_rc=$rc
grep -q "rank 0 of 2: the .* failed (another rank died, or did not join within the collective timeout of 10 s)" stalled.err ||
  fail "the stalled run does not say what failed: $(tail -3 stalled.err)"
# Expert parallelism: the routed experts over the 2 ranks against plain data parallel.
cat > ds.yaml <<YAML
data: {dataset: data/bytes}
model: {family: deepseek, n_layer: 2, n_head: 2, n_embd: 32, block_size: 32, kv_lora_rank: 16,
        n_routed_experts: 4, n_shared_experts: 1, moe_top_k: 2, moe_intermediate_size: 16,
        first_k_dense: 1, balance: bias, dropout: 0.0}
train: {micro_batch: 8, tokens: $(( 100 * 8 * 32 * 2 )), lr: 3e-3, precision: fp32, grad_clip: 1.0}
eval: {every: 25, val_tokens: 2K}
resources: {threads: 1}
YAML
"$SWEEP" train ds.yaml --nproc 2 --run-dir dsplain > /dev/null 2> dsplain.err || fail "deepseek --nproc 2: $(cat dsplain.err)"
"$SWEEP" train ds.yaml --nproc 2 --set parallel.expert=2 --run-dir dsep > /dev/null 2> dsep.err ||
  fail "deepseek --nproc 2, experts over 2: $(cat dsep.err)"
grep -q 'routed experts over 2 ranks' dsep/train.log || fail "the run log does not say its experts are partitioned: $(head -3 dsep/train.log)"
same_curve dsep dsplain 100 1e-5 || fail "expert parallel 2 differs from plain data parallel"
# The shards hold every expert: `sweep export` assembles them, and `sweep eval` scores the run's test loss.
"$SWEEP" export dsep --out dsep.pt > /dev/null 2> export.err || fail "sweep export of the expert-parallel run: $(cat export.err)"
"$SWEEP" eval dsep.pt --data data/bytes --config dsep/config.yaml > eval.txt 2> eval.err ||
  fail "sweep eval of the expert-parallel run: $(cat eval.err)"
python3 - "$(test_loss dsep)" <<'PY' || fail "sweep eval: $(cat eval.txt)"
import re, sys
want = float(sys.argv[1])
got = [float(x) for x in re.findall(r"loss ([0-9.]+) nats/token", open("eval.txt").read())]
assert got and abs(got[0] - want) < 1e-4, (got, want)
PY
echo "sharded: ok (stalled rank → exit $stalled_rc after ${stalled}s; rank killed → exit $killed_rc after ${killed}s; resumed to the uninterrupted test loss)"
