# The deepseek family end to end: a DeepSeek-V2-style run (MLA + MoE with bias balancing) trains
# from the CLI with MoE statistics in its events, resumes after kill -9 to the uninterrupted result, `sweep plan` states total and active
# parameters, `sweep sample` prints the same text for a seed from a run of either family, and
# bad input (a gpt2 run with MoE keys, sampling a folder without a checkpoint) is a one-line
# error with exit 2 and nothing written.
source "$(dirname "$0")/lib.bash"
prepare_bytes
tiny_config gpt2.yaml 30
cat > ds.yaml <<YAML
data: {dataset: data/bytes}
model: {family: deepseek, n_layer: 2, n_head: 2, n_embd: 32, block_size: 32, kv_lora_rank: 16,
        n_routed_experts: 4, n_shared_experts: 1, moe_top_k: 2, moe_intermediate_size: 16,
        first_k_dense: 1, balance: bias}
train: {micro_batch: 8, tokens: $(( 30 * 8 * 32 )), lr: 3e-3, min_lr: 3e-4, schedule: cosine, warmup: 5}
eval: {every: 10, val_tokens: 2K}
resources: {threads: 1}
YAML

"$SWEEP" train ds.yaml --run-dir runs/ds > /dev/null
grep -q '"event":"end".*"status":"done"' runs/ds/events.jsonl || fail "the deepseek run did not finish"
[ "$(grep '"event":"train"' runs/ds/events.jsonl | grep -c '"moe":{"aux_loss":null,"entropy":\[[0-9.e-]*\],"load_max":\[[0-9.e-]*\]}')" -eq 30 ] ||
  fail "every train event should carry the one MoE layer's load and entropy (no aux loss with bias balancing): $(grep -m1 '"event":"train"' runs/ds/events.jsonl)"
grep '"event":"start"' runs/ds/events.jsonl | grep -q '"active_params":' || fail "the start event has no active parameters"
grep -q "family: deepseek" runs/ds/config.yaml || fail "config.yaml holds the family"

# kill -9 mid-run, then --resume: the same test loss as straight through (the experts' balancing
# biases come back with the weights from the checkpoint)
sed -e "s/tokens: $(( 30 * 8 * 32 ))/tokens: $(( 400 * 8 * 32 ))/" -e "s/eval: {every: 10, val_tokens: 2K}/eval: {every: 50, val_tokens: 2K, checkpoint_every: 20}/" ds.yaml > long.yaml
grep -q "checkpoint_every: 20" long.yaml || fail "long.yaml was not made"
"$SWEEP" train long.yaml --run-dir runs/straight > /dev/null
"$SWEEP" train long.yaml --run-dir runs/killed > /dev/null &
pid=$!
wait_for_train_events runs/killed/events.jsonl 150
kill -9 "$pid"
set +e; wait "$pid"; set -e
grep -q '"status":"done"' runs/killed/events.jsonl && fail "the kill came too late to test anything"
"$SWEEP" train long.yaml --run-dir runs/killed --resume > /dev/null
loss() { grep '"status":"done"' "$1" | sed 's/.*"test_loss":\([^,]*\).*/\1/'; }
[ -n "$(loss runs/straight/events.jsonl)" ] && [ "$(loss runs/killed/events.jsonl)" = "$(loss runs/straight/events.jsonl)" ] ||
  fail "killed and resumed: test loss $(loss runs/killed/events.jsonl), straight $(loss runs/straight/events.jsonl)"

# sample: text, the same for a seed, from either family
"$SWEEP" train gpt2.yaml --run-dir runs/gpt2 > /dev/null
for run in runs/ds runs/gpt2; do
  "$SWEEP" sample "$run" --prompt "The " --tokens 40 --seed 3 > a.txt
  "$SWEEP" sample "$run" --prompt "The " --tokens 40 --seed 3 > b.txt
  "$SWEEP" sample "$run" --prompt "The " --tokens 40 --seed 4 > c.txt
  [ "$(head -c 4 a.txt)" = "The " ] || fail "$run: the sample should start with its prompt: $(cat a.txt)"
  [ "$(wc -c < a.txt)" -ge 40 ] || fail "$run: 40 byte tokens expected after the prompt: $(cat a.txt)"
  cmp -s a.txt b.txt || fail "$run: one seed gave two texts"
  cmp -s a.txt c.txt && fail "$run: seeds 3 and 4 gave the same text"
  "$SWEEP" sample "$run" --tokens 10 --temperature 0 > /dev/null || fail "$run: greedy sampling without a prompt failed"
done

# bad input
expect_rc 2 "$SWEEP" sample runs/missing 2> err.txt
[ "$(wc -l < err.txt)" -eq 1 ] && grep -q "not a run directory with a checkpoint" err.txt || fail "sample without a checkpoint: $(cat err.txt)"
mkdir -p runs/no-ckpt && cp runs/ds/config.yaml runs/no-ckpt/
expect_rc 2 "$SWEEP" sample runs/no-ckpt 2> err.txt
grep -q "checkpoint" err.txt || fail "sample of a run without its checkpoint: $(cat err.txt)"
expect_rc 2 "$SWEEP" sample runs/ds --temperature -1 2> /dev/null
expect_rc 2 "$SWEEP" sample runs/ds --temperature nan 2> /dev/null
# a checkpoint of another architecture than its config.yaml: one line, not LibTorch's backtrace
mkdir -p runs/mixed/checkpoint && cp runs/ds/config.yaml runs/mixed/ && cp runs/gpt2/checkpoint/ckpt.pt runs/mixed/checkpoint/
expect_rc 2 "$SWEEP" sample runs/mixed 2> err.txt
[ "$(wc -l < err.txt)" -eq 1 ] && grep -q "does not hold this model" err.txt || fail "a mismatched checkpoint: $(cat err.txt)"
printf 'data: {dataset: data/bytes}\ntrain: {tokens: 1M}\nmodel: {n_routed_experts: 4}\n' > bad.yaml
expect_rc 2 "$SWEEP" train bad.yaml --run-dir runs/bad 2> err.txt
grep -q "bad.yaml:3:27: 'model.n_routed_experts' is an option of the deepseek family" err.txt || fail "gpt2 with MoE keys: $(cat err.txt)"
[ ! -e runs/bad ] || fail "a refused config must write nothing"

# plan states total and active parameters
cat > s.yaml <<YAML
sweep: ds
baseline: moe
seeds: [1]
base:
$(sed 's/^/  /' ds.yaml)
interventions:
  moe: {}
  dense: {model.n_routed_experts: 0}
YAML
"$SWEEP" plan s.yaml > plan.txt
grep -E "^moe .* \(" plan.txt | grep -q "k (" || fail "plan should state an MoE variant's active parameters: $(cat plan.txt)"
grep -E "^dense " plan.txt | grep -q "(" && fail "a dense variant has no separate active count: $(cat plan.txt)"
echo "ok"
