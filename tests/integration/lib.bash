# Shared set-up of the integration tests (sourced, not a test): a temp dir as the working
# directory, a small corpus, a prepared bytes dataset and a tiny run config.
set -euo pipefail
: "${SWEEP:?SWEEP must point at the sweep binary}"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"

fail() { echo "FAIL: $*" >&2; exit 1; }
expect_rc() {  # expect_rc CODE command...
  local want=$1; shift
  set +e; "$@"; local got=$?; set -e
  [ "$got" -eq "$want" ] || fail "'$*' exited $got, expected $want"
}
count() { grep -c "$1" "$2" || true; }

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
