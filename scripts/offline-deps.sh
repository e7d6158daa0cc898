#!/usr/bin/env bash
# Downloads, on a Debian 12 machine, the .deb files of everything sweep's build needs besides
# LibTorch and the build tools, into DIR (default .gpu-kit/, which git ignores): for a machine
# with no package registry — a GPU box with a Python PyTorch, CMake, Ninja and a compiler — where
#   scripts/setup.sh --torch cuda --deps DIR     (or scripts/test-gpu.sh --deps DIR)
# unpacks them into the build's own prefix instead of installing them. About 40 MiB.
# Nothing is installed here. Idempotent: files already in DIR are not fetched again.
#   scripts/offline-deps.sh DIR --pack FILE   also packs them as one prefix, FILE (a .tar.xz):
#   unpacked, without what a build does not read — the static libraries a shared one stands beside,
#   the documentation (46 MiB of .deb files: about 30 MiB) —, which `scripts/setup.sh --deps` takes as
#   FOLDER/deps.tar.xz; packed again only when the .deb files change (scripts/gpu-carry.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
dir=${1:-.gpu-kit}
pack=""
[ "${2:-}" = --pack ] && pack=${3:?--pack needs the file to write}
# headers, CMake files and libraries of the build (scripts/setup.sh's list, less LibTorch and
# the tools), then the shared libraries they load at run time (and those load in turn)
packages=(libyaml-cpp-dev libcli11-dev doctest-dev nlohmann-json3-dev libfmt-dev libsentencepiece-dev
  zlib1g-dev libssl-dev libicu-dev libsqlitecpp-dev libsqlite3-dev libboost-math1.74-dev libboost1.74-dev
  libgloo-dev libdnnl-dev libcpp-httplib-dev libbrotli-dev libpcre2-dev
  libyaml-cpp0.7 libfmt9 libsentencepiece0 libicu72 libsqlite3-0 libboost-math1.74.0 libssl3 zlib1g
  libpcre2-8-0 libgloo0 libcpp-httplib0.11 libbrotli1 libhiredis0.14 libibverbs1 libnl-3-200 libnl-route-3-200 libdnnl2 ocl-icd-libopencl1)
mkdir -p "$dir"
missing=()
for p in "${packages[@]}"; do
  compgen -G "$dir/${p}_*.deb" >/dev/null || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  (cd "$dir" && { apt-get download "${missing[@]}" >/dev/null 2>&1 ||
    { apt-get update -qq >/dev/null && apt-get download "${missing[@]}" >/dev/null; }; })
fi
echo "offline-deps: $(ls "$dir"/*.deb | wc -l) packages, $(du -sh "$dir" | cut -f1) in $dir"
[ -n "$pack" ] || exit 0
stamp=$(cd "$dir" && ls -l -- *.deb | awk '{print $5, $NF}' | sha256sum | cut -c1-16)
[ "$(cat "$pack.stamp" 2>/dev/null)" != "$stamp" ] || [ ! -f "$pack" ] || { echo "offline-deps: $pack is up to date"; exit 0; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
for f in "$dir"/*.deb; do dpkg-deb -x "$f" "$work/prefix"; done
# a static library beside its shared one is not linked (SQLiteCpp's, which has none, is kept)
find "$work/prefix" -name '*.a' | while read -r a; do [ ! -e "${a%.a}.so" ] || rm -f "$a"; done
rm -rf "$work/prefix/usr/share/doc" "$work/prefix/usr/share/man" "$work/prefix/usr/share/lintian"
mkdir -p "$(dirname "$pack")"
tar -C "$work/prefix" -cf - . | xz -6 -T0 > "$work/deps.tar.xz"
mv "$work/deps.tar.xz" "$pack"
echo "$stamp" > "$pack.stamp"
echo "offline-deps: packed $(du -sh "$pack" | cut -f1) in $pack"
