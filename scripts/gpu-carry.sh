#!/usr/bin/env bash
# What a command on a lent GPU machine carries, assembled and sized (run from anywhere, on a Debian 12
# machine with a package registry):
#
#   scripts/gpu-carry.sh [--nanogpt PATH/model.py]
#
# The machine has PyTorch, CUDA, CMake, Ninja and a compiler, no package registry, and takes at most
# 64 MiB with a command: the working tree (tracked files and untracked ones git does not ignore) and
# the ignored folders named to be carried. This puts into .gpu-kit/ (ignored; name it in `carry`):
#   deps.tar.xz       the build's other dependencies — Debian 12's .deb files (kept in .gpu-debs/, which
#                     does not travel) packed as one prefix without their static libraries and
#                     documentation (scripts/offline-deps.sh --pack: 46 MiB of .deb files, about 30 MiB
#                     here); scripts/setup.sh --deps .gpu-kit unpacks it into the build's own prefix
#   nanogpt/model.py  nanoGPT's model, for call2's rows (--nanogpt: a model.py you have; nanoGPT is
#                     not part of this repository)
# and prints the size of all that travels against the 64 MiB. Idempotent: deps.tar.xz is packed
# again only when the .deb files change. Exit 1 when it does not fit.
set -euo pipefail
nanogpt=""
while [ $# -gt 0 ]; do
  case $1 in
    --nanogpt) nanogpt=$(cd "$(dirname "${2:?--nanogpt needs nanoGPT\'s model.py}")" && pwd)/$(basename "$2"); shift ;;
    *) echo "gpu-carry: unknown argument $1 (--nanogpt PATH/model.py)" >&2; exit 2 ;;
  esac
  shift
done
cd "$(dirname "$0")/.."
scripts/offline-deps.sh .gpu-debs --pack .gpu-kit/deps.tar.xz > /dev/null
rm -f .gpu-kit/*.deb  # (an older kit's: the packed prefix replaces them)
if [ -n "$nanogpt" ]; then
  [ -f "$nanogpt" ] || { echo "gpu-carry: --nanogpt $nanogpt: no such file" >&2; exit 2; }
  mkdir -p .gpu-kit/nanogpt && cp "$nanogpt" .gpu-kit/nanogpt/model.py
fi
mib() { awk -v b="$1" 'BEGIN { printf "%.1f", b / 1048576 }'; }
tree=$(git ls-files -co --exclude-standard -z | du -cb --files0-from=- | tail -1 | cut -f1)
kit=$(du -sb .gpu-kit | cut -f1)
total=$((tree + kit)) limit=$((64 * 1048576))
echo "gpu-carry: the tree $(mib "$tree") MiB (of it reports/ $(mib "$(git ls-files -z reports | du -cb --files0-from=- | tail -1 | cut -f1)") MiB)" \
  "+ .gpu-kit $(mib "$kit") MiB (deps.tar.xz $(mib "$(stat -c %s .gpu-kit/deps.tar.xz)")$([ -f .gpu-kit/nanogpt/model.py ] && echo ', nanoGPT model.py' || echo ', no nanoGPT: --nanogpt PATH'))" \
  "= $(mib "$total") MiB of the 64 MiB a command carries: $(mib $((limit - total))) MiB to spare"
[ "$total" -le "$limit" ] || { echo "gpu-carry: it does not fit" >&2; exit 1; }
echo "carry: [\".gpu-kit\"]; on the machine: scripts/test-gpu.sh call1 --out \$OUT, then scripts/test-gpu.sh call2 --nanogpt .gpu-kit/nanogpt/model.py --out \$OUT"
