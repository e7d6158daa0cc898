#!/usr/bin/env bash
# A machine without Debian's packages — the GPU machines: a Python PyTorch, CMake, Ninja and a
# compiler, no package registry — builds sweep from .deb files unpacked into a prefix:
# scripts/offline-deps.sh downloads them and packs them (--pack, as scripts/gpu-carry.sh does for a
# GPU machine), scripts/setup.sh --deps unpacks the pack and builds. Here
# the -dev packages they stand for are hidden from that build by an overlay over /usr in a mount
# namespace of its own (their headers, CMake and pkg-config files and link-time libraries
# whited out), so every header and library the build uses must come from the prefix; Debian's
# libtorch-dev stands in for the Python's LibTorch, and the runtime libraries stay (the system's
# own tools need them). The binary built then prepares data with SentencePiece and trains a run,
# finding the prefix's libraries through its RPATH alone.
# Skipped (77), saying why, where the .deb files cannot be downloaded or no overlay can be mounted.
source "$(dirname "$0")/lib.bash"
src=$(cd "$(dirname "$0")/../.." && pwd)
[ "$(id -u)" -eq 0 ] || { echo "skipped: a mount namespace with an overlay needs root"; exit 77; }
mkdir -p upper overlay-work probe
unshare --mount --propagation private mount -t overlay overlay \
  -o "lowerdir=$work/probe,upperdir=$work/upper,workdir=$work/overlay-work" "$work/probe" 2>/dev/null ||
  { echo "skipped: this machine cannot mount an overlay in a mount namespace"; exit 77; }
rm -rf upper overlay-work probe && mkdir -p upper overlay-work
# the .deb files, and packed as scripts/gpu-carry.sh packs them for a GPU machine (static libraries
# and documentation left out): the build below takes the packed prefix, which must be enough
"$src/scripts/offline-deps.sh" "$work/kit" --pack "$work/packed/deps.tar.xz" > kit.txt 2>&1 ||
  { echo "skipped: the .deb files could not be downloaded: $(tail -1 kit.txt)"; exit 77; }

# Every file the kit's -dev packages installed on this machine: what the build must not see.
for deb in kit/*-dev_*.deb; do
  dpkg -L "$(dpkg-deb -f "$deb" Package)" 2>/dev/null || true
done | while read -r f; do [ -f "$f" ] || [ -L "$f" ] && echo "$f"; done | grep '^/usr/' > hidden.txt || true
[ "$(wc -l < hidden.txt)" -gt 100 ] || fail "too few files to hide ($(wc -l < hidden.txt)): are the -dev packages installed?"
grep -q '/usr/include/yaml-cpp/yaml.h' hidden.txt || fail "yaml-cpp's headers are not among the files hidden"

# In the namespace: /usr with those files gone, then the offline build (Debug -O0: the build is
# what is tested, not its speed) and a run of the binary.
cat > inside.sh <<EOF
set -euo pipefail
mount -t overlay overlay -o lowerdir=/usr,upperdir=$work/upper,workdir=$work/overlay-work /usr
xargs -d '\n' rm -f < $work/hidden.txt
[ ! -e /usr/include/yaml-cpp/yaml.h ] || { echo "the overlay did not hide yaml-cpp" >&2; exit 1; }
"$src/scripts/setup.sh" --deps $work/packed --build-dir $work/build --target sweep \
  -DCMAKE_BUILD_TYPE=Debug -DCMAKE_CXX_FLAGS_DEBUG=-O0
EOF
unshare --mount --propagation private bash inside.sh > build.log 2>&1 || fail "the build from the prefix failed: $(tail -30 build.log)"
bin=$work/build/sweep
grep -q "yaml-cpp.*$work/build/deps" build/CMakeCache.txt || fail "yaml-cpp was not found in the prefix: $(grep yaml-cpp_DIR build/CMakeCache.txt)"
# grep the output as a string: `ldd | grep -q` under pipefail fails at random (lib.bash says why)
grep -q "libyaml-cpp.so.* => $work/build/deps/" <<< "$(ldd "$bin")" || fail "the binary does not load the prefix's yaml-cpp: $(ldd "$bin")"
grep -q "libsentencepiece.so.* => $work/build/deps/" <<< "$(ldd "$work/build/sweep-sentencepiece")" ||
  fail "sweep-sentencepiece does not load the prefix's SentencePiece: $(ldd "$work/build/sweep-sentencepiece")"

make_corpus
SWEEP=$bin prepare_bytes
"$bin" data prepare --input corpus --tokenizer bpe:1024 --out data/bpe --val 0.1 --test 0.1 > /dev/null ||
  fail "SentencePiece from the prefix could not prepare data"
tiny_config run.yaml 20
"$bin" train run.yaml --run-dir run > /dev/null 2> train.err || fail "the prefix build could not train: $(cat train.err)"
grep -q '"status":"done"' run/events.jsonl || fail "the prefix build's run did not finish"
echo "prefix_build: ok ($(wc -l < hidden.txt) system files hidden, $(ls kit/*.deb | wc -l) packages unpacked)"
