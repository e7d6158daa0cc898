# `sweep train` end to end: a run directory with config, events, log and checkpoint; falling
# validation loss; refusing to overwrite a run; `sweep worker`; export; divergence.
source "$(dirname "$0")/lib.bash"
prepare_bytes
tiny_config run.yaml 60

"$SWEEP" train run.yaml --run-dir runs/a > stdout.jsonl
for f in config.yaml events.jsonl train.log checkpoint/ckpt.pt; do
  [ -f "runs/a/$f" ] || fail "runs/a/$f is missing"
done
cmp -s stdout.jsonl runs/a/events.jsonl || fail "stdout (not a terminal) should carry the same events as events.jsonl"
[ "$(count '"event":"start"' runs/a/events.jsonl)" -eq 1 ] || fail "one start event"
# provenance: the start event names the commit the binary was built from and the numerics version
code=$(grep '"event":"start"' runs/a/events.jsonl | sed 's/.*"code":"\([^"]*\)".*/\1/')
head=$(git -C "$(dirname "$0")" rev-parse --short=12 HEAD 2>/dev/null || echo unknown)
case $code in "$head" | "$head+dirty") ;; *) fail "the start event says code '$code', the tree is at '$head'" ;; esac
grep '"event":"start"' runs/a/events.jsonl | grep -q '"numerics":[1-9]' || fail "the start event has no numerics version"
[ "$(count '"event":"train"' runs/a/events.jsonl)" -eq 60 ] || fail "60 train events"
grep -q '"event":"end".*"status":"done"' runs/a/events.jsonl || fail "end event with status done"
grep -q '"test_bpb"' runs/a/events.jsonl || fail "bits per byte in the end event"
first_val=$(grep '"split":"val"' runs/a/events.jsonl | sed -n 1p | sed 's/.*"loss":\([0-9.]*\).*/\1/')
last_val=$(grep '"split":"val"' runs/a/events.jsonl | tail -1 | sed 's/.*"loss":\([0-9.]*\).*/\1/')
awk -v a="$first_val" -v b="$last_val" 'BEGIN { exit !(b < a - 0.5) }' || fail "val loss did not fall: $first_val -> $last_val"
grep -q "vocab_size: 256" runs/a/config.yaml || fail "config.yaml holds the resolved vocab_size"

# an existing run is never overwritten
before=$(wc -l < runs/a/events.jsonl)
expect_rc 2 "$SWEEP" train run.yaml --run-dir runs/a 2> err.txt
grep -q -- "--resume" err.txt || fail "the error should suggest --resume: $(cat err.txt)"
[ "$(wc -l < runs/a/events.jsonl)" -eq "$before" ] || fail "a refused run must not touch events.jsonl"

# worker: the same code path, same result for the same config and threads
"$SWEEP" worker run.yaml --run-dir runs/w > /dev/null
test_loss() { grep '"event":"end"' "$1" | sed 's/.*"test_loss":\([^,]*\).*/\1/'; }
[ "$(test_loss runs/a/events.jsonl)" = "$(test_loss runs/w/events.jsonl)" ] ||
  { grep -h '"event":"end"' runs/a/events.jsonl runs/w/events.jsonl >&2; fail "worker and train disagree"; }

# export
"$SWEEP" export runs/a --out model.pt > /dev/null
[ -s model.pt ] || fail "export wrote nothing"
expect_rc 2 "$SWEEP" export runs/missing --out x.pt 2> /dev/null

# divergence: exit code 3, end status diverged, no checkpoint of the broken weights
expect_rc 3 "$SWEEP" train run.yaml --set train.lr=1e3 --set train.min_lr=0 --set train.grad_clip=0 --run-dir runs/d > /dev/null
grep -q '"status":"diverged"' runs/d/events.jsonl || fail "diverged run must end with status diverged"
echo "train_cli: ok"
