# Bad input: a clear message naming file, line and key; exit code 2; nothing written.
source "$(dirname "$0")/lib.bash"

cat > bad.yaml <<'YAML'
data: {dataset: data/bytes}
model:
  n_embd: 100
  n_head: 3
train:
  lrr: 1e-3
  tokens: 1M
YAML
expect_rc 2 "$SWEEP" train bad.yaml 2> err.txt
grep -q "bad.yaml:6:3: unknown key 'train.lrr' — did you mean 'lr'?" err.txt || fail "unknown key: $(cat err.txt)"
[ ! -e results ] || fail "a bad config must write nothing"

expect_rc 2 "$SWEEP" train bad.yaml --set model.n_head=4 --set train.lrr=1 2> err.txt
grep -q "^--set train.lrr=1: unknown key 'train.lrr'" err.txt || fail "a bad --set is reported at the option: $(cat err.txt)"

# a grid's values: a wrong one is reported where it is written (a list may span lines), an unknown
# axis key — or one its config does not take — at the key, once for all its values
tiny_sweep grid.yaml grid 10
printf 'grid:\n  train.lr: [1e-3,\n             fast]\n  train.lrr: [1, 2]\n' >> grid.yaml
expect_rc 2 "$SWEEP" plan grid.yaml 2> err.txt
grep -q "^grid.yaml:13:14: 'train.lr' must be a number, got 'fast'" err.txt || fail "a grid's wrong value: $(cat err.txt)"
[ "$(grep -c "^grid.yaml:14:3: unknown key 'train.lrr'" err.txt)" -eq 1 ] || fail "a grid's unknown key: $(cat err.txt)"
tiny_sweep grid2.yaml grid2 10
printf 'grid:\n  train.muon_lr: [0.01, 0.02]\n' >> grid2.yaml
expect_rc 2 "$SWEEP" plan grid2.yaml 2> err.txt
[ "$(grep -c "^grid2.yaml:12:3: 'train.muon_lr' is an option of Muon" err.txt)" -eq 1 ] || fail "a grid's key out of place: $(cat err.txt)"

# a config that is valid but names a dataset that does not exist
prepare_bytes
tiny_config run.yaml 10
expect_rc 2 "$SWEEP" train run.yaml --set data.dataset=nowhere 2> err.txt
grep -q "no dataset 'nowhere' in $PWD or any folder above it" err.txt || fail "missing dataset: $(cat err.txt)"

# a vocabulary smaller than the data's: refused before the run directory exists, in a sweep too
expect_rc 2 "$SWEEP" train run.yaml --set model.vocab_size=100 --run-dir runs/v 2> err.txt
grep -q "run.yaml: 'model.vocab_size' (100) is smaller than the dataset's 256" err.txt || fail "small vocab: $(cat err.txt)"
[ ! -e runs/v ] || fail "a vocabulary below the data's must write nothing"
tiny_sweep vocab.yaml vocab 10 "small-vocab: {model.vocab_size: 100}"
expect_rc 2 "$SWEEP" plan vocab.yaml 2> err.txt
grep -q "vocab.yaml:.*'model.vocab_size' (100) is smaller than dataset 'data/bytes''s 256" err.txt || fail "small vocab in a sweep: $(cat err.txt)"

# a corrupt shard: named in the error, nothing written
head -c 2000 data/bytes/val_000.bin > short.bin && mv short.bin data/bytes/val_000.bin
expect_rc 2 "$SWEEP" train run.yaml --run-dir runs/x 2> err.txt
grep -q "data/bytes/val_000.bin: truncated" err.txt || fail "truncated shard: $(cat err.txt)"
[ ! -e runs/x ] || fail "a bad dataset must write nothing"

# command-line mistakes
expect_rc 2 "$SWEEP" train 2> /dev/null
expect_rc 2 "$SWEEP" frobnicate 2> /dev/null
expect_rc 2 "$SWEEP" data prepare --input corpus --out d2 --tokenizer words 2> err.txt
grep -q "expected bytes, bpe:<vocab> (e.g. bpe:4096) or gpt2" err.txt || fail "bad tokenizer: $(cat err.txt)"
[ ! -e d2 ] || fail "a failed prepare must write nothing"
# a sweep whose names try to reach a shell or another folder: rejected, nothing run or written
cat > evil.yaml <<'YAML'
sweep: evil
baseline: base
base:
  data: {dataset: data/bytes}
  train: {tokens: 64K}
interventions:
  base: {}
  "x; touch PWNED": {}
  "$(touch PWNED2)": {}
YAML
expect_rc 2 "$SWEEP" run evil.yaml --results evil-results 2> err.txt
grep -q "invalid intervention name 'x; touch PWNED'" err.txt || fail "unsafe names: $(cat err.txt)"
[ ! -e PWNED ] && [ ! -e PWNED2 ] && [ ! -e evil-results ] || fail "a rejected sweep must run and write nothing"

# the datasets of a sweep, checked before anything runs or is written: a missing one at its key,
# a truncated shard by name (data/bytes' val shard was cut above)
tiny_sweep ds.yaml ds 10 "elsewhere: {data.dataset: data/nowhere}"
expect_rc 2 "$SWEEP" run ds.yaml --results ds-results 2> err.txt
grep -q "^ds.yaml:11:15: data.dataset 'data/nowhere': not found in the sweep file's folder or any folder above it" err.txt ||
  fail "a sweep's missing dataset: $(cat err.txt)"
grep -q "^ds.yaml:5:19: data.dataset 'data/bytes': token shard $PWD/data/bytes/val_000.bin: truncated" err.txt ||
  fail "a sweep's truncated shard: $(cat err.txt)"
[ ! -e ds-results ] || fail "a sweep with a bad dataset must write nothing"
# a dataset not prepared yet: `sweep plan` plans without it (a memory plan needs the shapes, not
# the data) and says so; `sweep run` refuses
tiny_sweep unprepared.yaml unprepared 10 "more: {model.n_embd: 64}"
sed -i 's|dataset: data/bytes|dataset: data/later|' unprepared.yaml
"$SWEEP" plan unprepared.yaml --results un-results > plan.txt 2> err.txt || fail "plan without its dataset: $(cat plan.txt err.txt)"
grep -q "^dataset 'data/later' is not prepared yet .*'-' below" plan.txt || fail "plan does not say the dataset is missing: $(cat plan.txt)"
grep -q "^more  *2  *-  *-  *2.6k  *-  *-  *.* + the vocabulary's" plan.txt || fail "plan without its dataset: $(cat plan.txt)"
grep -q "^4 runs planned; none can run until its dataset is prepared" plan.txt || fail "$(cat plan.txt)"
expect_rc 2 "$SWEEP" run unprepared.yaml --results un-results 2> err.txt
grep -q "data.dataset 'data/later': not found" err.txt || fail "run without its dataset: $(cat err.txt)"
[ ! -e un-results ] || fail "a plan or a refused run wrote a results folder"

# Slurm options are written into a script: one plain value each, refused before anything else
rm -rf data/bytes corpus && prepare_bytes
tiny_sweep ok.yaml ok 10
expect_rc 2 "$SWEEP" run ok.yaml --results slurm-results --executor slurm --partition $'debug\n#SBATCH --uid=0' 2> err.txt
grep -q "^sweep: --partition 'debug" err.txt || fail "a partition with a newline: $(cat err.txt)"
expect_rc 2 "$SWEEP" run ok.yaml --results slurm-results --executor slurm --time '1:00; rm -rf ~' 2> err.txt
grep -q "a Slurm time limit is minutes" err.txt || fail "a time with a command: $(cat err.txt)"
expect_rc 2 "$SWEEP" run ok.yaml --results slurm-results --executor slurm --time forever 2> /dev/null
expect_rc 2 "$SWEEP" run ok.yaml --results slurm-results --retries -5 2> /dev/null
[ ! -e slurm-results ] || fail "refused Slurm options must write nothing"

# number options: one readable line (CLI11's own check printed the largest double, 309 digits)
expect_rc 2 "$SWEEP" bench --steps 0 2> err.txt
[ "$(sed -n 1p err.txt)" = "--steps: '0' is not a number above 0" ] || fail "--steps 0: $(cat err.txt)"
expect_rc 2 "$SWEEP" run ok.yaml --results stall-results --stall-timeout nan 2> err.txt
[ "$(sed -n 1p err.txt)" = "--stall-timeout: 'nan' is not a number of at least 0" ] || fail "--stall-timeout nan: $(cat err.txt)"
expect_rc 2 "$SWEEP" run ok.yaml --results stall-results --stall-timeout 1e7 2> err.txt
grep -q "^sweep: --stall-timeout 1e+07: from 1 to 999999 seconds" err.txt || fail "--stall-timeout 1e7: $(cat err.txt)"
expect_rc 2 "$SWEEP" run ok.yaml --results stall-results --stall-timeout 0.001 2> err.txt
grep -q "^sweep: --stall-timeout 0.001: from 1 to 999999 seconds" err.txt || fail "--stall-timeout 0.001: $(cat err.txt)"
[ ! -e stall-results ] || fail "a refused --stall-timeout must write nothing"
expect_rc 2 "$SWEEP" sample nowhere --seed 99999999999999999999 2> err.txt  # not saturated to 2^64 - 1
[ "$(sed -n 1p err.txt)" = "--seed: '99999999999999999999' is not a whole number from 0 to 18446744073709551615" ] ||
  fail "--seed 1e20: $(cat err.txt)"
expect_rc 2 "$SWEEP" data prepare --input corpus --val nan --out nan-data 2> err.txt
[ "$(sed -n 1p err.txt)" = "--val: 'nan' is not a number from 0 to 1" ] || fail "--val nan: $(cat err.txt)"
expect_rc 2 "$SWEEP" data prepare --input /dev/null --out null-data 2> err.txt
grep -q "^sweep: --input /dev/null: neither a file nor a folder of documents" err.txt || fail "--input /dev/null: $(cat err.txt)"
[ ! -e nan-data ] && [ ! -e null-data ] || fail "a refused prepare must write nothing"
# a run over resources.device_memory: refused before anything is written, with the layouts that fit
tiny_sweep mem.yaml mem 10 "wide: {model.n_embd: 64}"
sed -i 's/^  eval: .*/&\n  resources: {device_memory: 0.004}/' mem.yaml
"$SWEEP" plan mem.yaml --results mem-results --memory > plan.txt || fail "plan: $(cat plan.txt)"
grep -q "does not fit resources.device_memory 0.004 GiB; layouts that would, with 10% to spare: 1 rank, micro-batch 4 × accumulation 2: " plan.txt ||
  fail "plan should name a smaller micro-batch: $(cat plan.txt)"
grep -q "^    .*residual stream (fp32)" plan.txt || fail "plan --memory lists the activations: $(cat plan.txt)"
expect_rc 2 "$SWEEP" run mem.yaml --results mem-results 2> err.txt
grep -q "^sweep: mem.yaml: 2 run(s) need more memory per device than resources.device_memory (wide seed 1: 5 MiB, wide seed 2: 5 MiB)" err.txt && grep -q "train.activation_checkpointing: true" err.txt ||
  fail "a run over device_memory: $(cat err.txt)"
[ ! -e mem-results ] || fail "a sweep refused for memory must write nothing"
tiny_config run.yaml 10
expect_rc 2 "$SWEEP" train run.yaml --set train..lr=1 2> err.txt
[ "$(sed -n 1p err.txt)" = "--set train..lr=1: 'train..lr' is not a key path — names joined by single dots, e.g. train.lr" ] ||
  fail "--set train..lr: $(cat err.txt)"
# sweep calibrate: what it is given, each value within its bound and each option in its mode (issue 59)
calibrate_refuses() {  # calibrate_refuses EXPECTED-LINE ARGS...
  local want=$1; shift
  expect_rc 2 "$SWEEP" calibrate "$@" 2> err.txt
  grep -qF -- "$want" err.txt || fail "calibrate $*: $(cat err.txt)"
}
calibrate_refuses "--tune-grid -1,0,1,1024: 1024 is beyond ±10" --tune --tune-grid=-1,0,1,1024
calibrate_refuses "--tune-grid 0,1e-300,2e-300: 0 and 1e-300 are less than 0.05 apart" --tune --tune-grid=0,1e-300,2e-300
calibrate_refuses "--tune-grid -1,1,2: 0, the base value, is not among them" --tune --tune-grid=-1,1,2
calibrate_refuses "--tune-grid 0,1: 3 values at least" --tune --tune-grid=0,1
calibrate_refuses "--better-by-alpha is the level of --better-by's claim, and no margin is given" \
  --sigma .01 --rho .5 --min-effect .01 --better-by-alpha 0.1
calibrate_refuses "--effects 0,1e306: 1e+306 is beyond ±1000" --sigma .01 --rho .5 --min-effect 1 --effects 0,1e306
"$SWEEP" calibrate --tune --tune-grid 0,0.3,0.35 --replicates 1 --interventions 1 > /dev/null 2> err.txt ||
  fail "0.3 and 0.35 are 0.05 apart: $(cat err.txt)"
calibrate_refuses "--sigma: '1e308' is above 100, the most it may be" --sigma 1e308 --rho 0.5 --min-effect 0.01
calibrate_refuses "--rungs does not apply to the plain calibration (it is --backtest's) — drop it, or pass --backtest" \
  --sigma 0.01 --rho 0.5 --min-effect 0.01 --rungs 5
calibrate_refuses "--rho does not apply to --backtest" --backtest --rho 0.5
calibrate_refuses "--effects does not apply to --tune (it is the plain calibration's)" --tune --effects 0,1
calibrate_refuses "--tune-grid does not apply to the plain calibration" --sigma 0.01 --rho 0.5 --min-effect 0.01 --tune-grid=0,1,2
# a long calibration says what it simulates at once, and how far it is every 10 s
set +e
timeout 12 "$SWEEP" calibrate --sigma 0.01 --rho 0.5 --min-effect 0.01 --replicates 1000000 > long.md 2> long.err
set -e
grep -q "^Synthetic studies: .* 1000000 studies per row" long.md || fail "no header before the studies: $(cat long.md)"
grep -qE "^sweep calibrate: [0-9]+ of 4000000 studies, 0m1[0-9]s in, about .* left$" long.err || fail "no progress line: $(cat long.err)"
echo "bad_input: ok"
