# llm.c's data as it comes, end to end: a folder of FineWeb-style shards (llm.c's real format and
# names, GPT-2 token ids, documents starting with <|endoftext|>) is imported with `sweep data
# import`, trains with resident memory that does not grow with the dataset (a 16× larger train
# split costs no more), an exported run scores the same with `sweep eval` as the run's own test
# loss, a sweep names that export as a reference the report shows beside the baseline, plan and
# report state epochs, and bad input is a one-line error with exit 2 and nothing written.
source "$(dirname "$0")/lib.bash"

# shards DIR TRAIN_SHARDS TOKENS_PER_SHARD: fineweb_val_000000.bin + fineweb_train_%06d.bin
shards() {
  /usr/bin/python3 - "$@" <<'PY'
import array, os, random, sys
out, n_train, per = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
os.makedirs(out, exist_ok=True)
rng = random.Random(5)
words = [262, 286, 290, 284, 257, 287, 318, 373, 326, 340, 15496, 995, 11, 13, 198]  # " the", " of", ...
base = array.array('H')  # 2^20 tokens of documents, each starting with <|endoftext|> as llm.c's do
while len(base) < 1 << 20:
    base.append(50256)
    for _ in range(rng.randint(20, 200)):
        prev = base[-1]
        base.append(words[(words.index(prev) + 1) % len(words)] if prev in words and rng.random() < 0.7 else rng.choice(words))
del base[1 << 20:]
def shard(path, count, offset):
    tokens = (base * (count // len(base) + 2))[offset:offset + count]  # llm.c cuts the last document
    header = array.array('i', [20240520, 1, count] + [0] * 253)
    with open(path, 'wb') as f:
        f.write(header.tobytes()); f.write(tokens.tobytes())
shard(f"{out}/fineweb_val_000000.bin", 20000, 0)
for k in range(1, n_train + 1):
    shard(f"{out}/fineweb_train_{k:06d}.bin", per, 7919 * k)
PY
}
shards small 2 250000
shards large 8 16000000  # 244 MiB of train tokens: loaded whole, they would add as much to the peak
for d in small large; do
  "$SWEEP" data import $d > import-$d.txt || fail "import $d: $(cat import-$d.txt)"
done
grep -q "imported small: gpt2 tokenizer, vocab 50257" import-small.txt || fail "import says: $(cat import-small.txt)"
[ -f small/dataset.yaml ] && [ -f small/sweep-import-*/test_000.bin ] && [ -f small/sweep-import-*/val_000.bin ] ||
  fail "import wrote no dataset.yaml or carved split: $(ls -R small)"
grep -q "tokenizer: gpt2" small/dataset.yaml && grep -q "vocab_size: 50257" small/dataset.yaml || fail "$(cat small/dataset.yaml)"
grep -A6 "train:" small/dataset.yaml | grep -q "fineweb_train_000001.bin" || fail "train shards not where they lie"

# Train on each with the same model and steps. The proof that a split is read a window at a time:
# the bytes the training process reads (/proc/PID/io rchar, sampled until it exits) are the same
# for a 16x larger split — loading it would read 244 MiB more. Its peak resident memory is printed
# and bounded by the split's size: it varies from run to run and between CPUs by up to 212 MiB
# (the allocator's doing: the process never trims its heap, util/process.h), far from a proof.
for d in small large; do
  cat > $d.yaml <<YAML
data: {dataset: $d}
model: {n_layer: 2, n_head: 2, n_embd: 32, block_size: 32}
train: {micro_batch: 4, tokens: $(( 30 * 4 * 32 )), lr: 3e-3}
eval: {every: 15, val_tokens: 2K}
resources: {threads: 1}
YAML
done
measure() {  # "peak-resident-KiB bytes-read" of a command
  /usr/bin/python3 -c 'import resource, subprocess, sys, time
p = subprocess.Popen(sys.argv[1:], stdout=subprocess.DEVNULL)
rchar = 0
while p.poll() is None:
    try:
        with open(f"/proc/{p.pid}/io") as f:
            rchar = max(rchar, int(next(l for l in f if l.startswith("rchar:")).split()[1]))
    except (OSError, StopIteration, ValueError):
        pass
    time.sleep(0.01)
if p.returncode:
    sys.exit(p.returncode)
print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, rchar)' "$@"
}
read -r small_kib small_read <<< "$(measure "$SWEEP" train small.yaml --run-dir runs/small)" ||
  fail "training on the imported shards failed"
read -r large_kib large_read <<< "$(measure "$SWEEP" train large.yaml --run-dir runs/large)" ||
  fail "training on the large shards failed"
echo "peak resident memory: $small_kib KiB on 0.5M train tokens, $large_kib KiB on 128M; read: $small_read and $large_read bytes"
[ "$small_read" -gt 0 ] || fail "no bytes read measured"
[ $(( large_read - small_read )) -lt $(( 4 * 1024 * 1024 )) ] ||
  fail "the 243 MiB larger train split made training read $(( (large_read - small_read) / 1024 )) KiB more"
[ $(( large_kib - small_kib )) -lt $(( 243 * 1024 )) ] ||
  fail "the 243 MiB larger train split raised the peak from $small_kib to $large_kib KiB"
grep -q '"status":"done"' runs/large/events.jsonl || fail "the large run did not finish"

# sweep eval of the exported run = the run's own test loss (the same windows, batch and kernels)
"$SWEEP" export runs/small --out small.pt > /dev/null
"$SWEEP" eval small.pt --data small --n-head 2 --batch 4 --json > eval.json || fail "eval: $(cat eval.json)"
run_loss=$(grep '"status":"done"' runs/small/events.jsonl | sed 's/.*"test_loss":\([^,}]*\).*/\1/')
eval_loss=$(/usr/bin/python3 -c 'import json,sys; print(repr(json.load(open(sys.argv[1]))["loss"]))' eval.json)
/usr/bin/python3 -c 'import sys; a, b = float(sys.argv[1]), float(sys.argv[2]); sys.exit(abs(a - b) > 1e-9)' "$run_loss" "$eval_loss" ||
  fail "sweep eval gave $eval_loss, the run's test loss is $run_loss"
"$SWEEP" eval small.pt --data small --config runs/small/config.yaml --batch 4 > eval.txt
grep -q "loss $(printf %.4f "$run_loss") nats/token, [0-9.]* bits/byte" eval.txt || fail "eval with --config: $(cat eval.txt)"

# A sweep names the export as a reference: scored before the runs, shown beside the baseline.
cat > study.yaml <<YAML
sweep: llmc
baseline: base
seeds: [1, 2]
references:
  tiny export: {model: small.pt, n_head: 2}
base:
  data: {dataset: small}
  model: {n_layer: 2, n_head: 2, n_embd: 32, block_size: 32}
  train: {micro_batch: 4, tokens: $(( 20 * 4 * 32 )), lr: 3e-3}
  eval: {every: 10, val_tokens: 2K}
  resources: {threads: 1}
interventions:
  base: {}
  long: {train.tokens: 2M}
YAML
"$SWEEP" plan study.yaml --results res > plan.txt
grep -q "epochs" plan.txt && grep -Eq "base .* 0\.01 " plan.txt || fail "plan shows no epochs per run: $(cat plan.txt)"
grep -q "warning: 2 of 4 runs train more tokens than their train split holds (up to 4.00 epochs)" plan.txt ||
  fail "plan does not warn of repeated data: $(cat plan.txt)"
grep -q "reference tiny export (.*small.pt): to be scored" plan.txt || fail "plan does not list the reference: $(cat plan.txt)"
sed -i 's/  long: {train.tokens: 2M}/  lr: {train.lr: 1e-3}/' study.yaml
"$SWEEP" run study.yaml --results res > run.txt || fail "sweep run: $(cat run.txt)"
grep -q "scoring reference 'tiny export'" run.txt || fail "the reference was not scored: $(cat run.txt)"
"$SWEEP" run study.yaml --results res > again.txt
grep -q "scoring reference" again.txt && fail "an unchanged reference was scored again"
"$SWEEP" report llmc --results res --out rep > report.txt
grep -q "reference tiny export: test_loss $(printf %.4f "$eval_loss") .* against the baseline's" report.txt ||
  fail "the report shows no reference line: $(cat report.txt)"
grep -q "epochs: each run trains 0.01 epochs of its train split, small (.* train tokens) — single-epoch" report.txt ||
  fail "the report states no epochs: $(cat report.txt)"
grep -q "tiny export: $(printf %.4f "$eval_loss")" rep/seeds.svg || fail "the seeds plot has no reference line"
/usr/bin/python3 -c 'import json,sys; r = json.load(open("rep/report.json"))["references"]; sys.exit(not (len(r) == 1 and r[0]["name"] == "tiny export" and abs(r[0]["test_loss"] - float(sys.argv[1])) < 1e-9))' "$eval_loss" ||
  fail "report.json has not the reference's score"

# Bad input: one line, exit 2, nothing written.
"$SWEEP" export runs/small --out other.pt > /dev/null
expect_rc 2 "$SWEEP" eval small.pt --data small 2> err.txt  # no head count in a tensor: never guessed
[ "$(wc -l < err.txt)" -eq 1 ] && grep -q "its head count is in none of its tensors .* pass it: --n-head N" err.txt ||
  fail "eval without heads: $(cat err.txt)"
sed 's/n_embd: 32/n_embd: 64/' small.yaml > wide.yaml
"$SWEEP" train wide.yaml --run-dir runs/wide > /dev/null
"$SWEEP" export runs/wide --out wide.pt > /dev/null
# 64 wide with 2 heads: once scored silently as one 64-wide GPT-2 head, a wrong loss
expect_rc 2 "$SWEEP" eval wide.pt --data small 2> err.txt
grep -q "wide.pt: its head count is in none of its tensors (2 layers, width 64" err.txt || fail "64 wide, 2 heads: $(cat err.txt)"
expect_rc 2 "$SWEEP" eval wide.pt --data small --config runs/small/config.yaml 2> err.txt
[ "$(wc -l < err.txt)" -eq 1 ] && grep -q "has shape \[50304, 64\], the model expects \[50304, 32\]" err.txt ||
  fail "a misshaped tensor: $(cat err.txt)"
sed '/tiny export/s/, n_head: 2//' study.yaml > headless.yaml  # a reference that cannot be scored: before anything is written
expect_rc 2 "$SWEEP" run headless.yaml --results res2 2> err.txt
[ "$(wc -l < err.txt)" -eq 1 ] && grep -q "headless.yaml: references.tiny export: small.pt: its head count is in none of its tensors" err.txt ||
  fail "a reference that does not load: $(cat err.txt)"
[ -e res2 ] && fail "a refused reference left a results folder"
head -c 5000 /dev/urandom > junk.pt
expect_rc 2 "$SWEEP" eval junk.pt --data small --n-head 2 2> err.txt
grep -q "junk.pt: not a zip archive" err.txt || fail "a file that is no state dict: $(cat err.txt)"
cp -r small lying && printf 'xx' >> lying/fineweb_train_000002.bin && rm lying/dataset.yaml
expect_rc 2 "$SWEEP" data import lying 2> err.txt
[ "$(wc -l < err.txt)" -eq 1 ] && grep -q "fineweb_train_000002.bin: has trailing bytes" err.txt || fail "lying header: $(cat err.txt)"
[ -f lying/dataset.yaml ] && fail "a refused import wrote dataset.yaml"
sed -e 's/block_size: 32/block_size: 600000/' -e 's/micro_batch: 4, tokens: [0-9]*/micro_batch: 1, tokens: 600000/' small.yaml > huge.yaml
expect_rc 2 "$SWEEP" train huge.yaml --run-dir runs/huge 2> err.txt
[ "$(wc -l < err.txt)" -eq 1 ] && grep -q "small/dataset.yaml: the train split has 500000 tokens, fewer than one window" err.txt ||
  fail "a split smaller than one window: $(cat err.txt)"
[ -e runs/huge ] && fail "a refused run left its folder"
echo "ok"
