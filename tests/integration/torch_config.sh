# The configure takes the Caffe2 CMake config of the LibTorch it was asked for (Torch_DIR), whatever
# else a machine has: a decoy Caffe2 config on CMAKE_PREFIX_PATH (as a conda torch puts it there,
# or as Debian's libtorch-dev puts one in /usr/lib/x86_64-linux-gnu/cmake, which CMake searches the
# same way) fails the configure when taken. A plain find_package(Torch) takes it — the decoy is
# real — and cmake/find_torch.cmake, which CMakeLists.txt configures with, does not.
source "$(dirname "$0")/lib.bash"
src=$(cd "$(dirname "$0")/../.." && pwd)
cache=$(dirname "$SWEEP")/CMakeCache.txt
[ -f "$cache" ] || fail "no CMakeCache.txt beside $SWEEP"
value() { sed -n "s/^$1:[A-Z]*=//p" "$cache" | sed -n 1p; }
torch_dir=$(value Torch_DIR)
[ -n "$torch_dir" ] || { echo "skipped: a build without LibTorch (SWEEP_TORCH=OFF)"; exit 77; }
args=("-DTorch_DIR=$torch_dir" "-DCMAKE_CXX_COMPILER=$(value CMAKE_CXX_COMPILER)")
for key in CUDAToolkit_ROOT CUDA_TOOLKIT_ROOT_DIR CMAKE_CUDA_COMPILER; do  # a CUDA LibTorch's, as setup.sh passes them
  [ -n "$(value $key)" ] && args+=("-D$key=$(value $key)")
done
mkdir -p decoy/lib/cmake/Caffe2
echo 'message(FATAL_ERROR "the decoy Caffe2 config was taken: ${CMAKE_CURRENT_LIST_FILE}")' > decoy/lib/cmake/Caffe2/Caffe2Config.cmake
project() {  # project DIR LINE: a project that finds Torch by LINE
  mkdir -p "$1"
  printf '%s\n' "cmake_minimum_required(VERSION 3.25)" "project(p LANGUAGES CXX)" "set(CMAKE_CUDA_STANDARD 17)" "$2" \
    'message(STATUS "Caffe2 from ${Caffe2_DIR}")' > "$1/CMakeLists.txt"
}
project plain "find_package(Torch REQUIRED)"
project ours "include($src/cmake/find_torch.cmake)"
export CMAKE_PREFIX_PATH=$work/decoy
! cmake -S plain -B plain/build -G Ninja "${args[@]}" > plain.log 2>&1 || fail "the decoy was not taken by a plain find_package: $(tail -5 plain.log)"
grep -q "the decoy Caffe2 config was taken" plain.log || fail "the plain configure failed otherwise: $(tail -20 plain.log)"
cmake -S ours -B ours/build -G Ninja "${args[@]}" > ours.log 2>&1 || fail "find_torch.cmake took the decoy: $(tail -20 ours.log)"
grep -q "Caffe2 from $(dirname "$torch_dir")/Caffe2" ours.log || fail "Caffe2 from elsewhere: $(grep 'Caffe2 from' ours.log)"
# a cache that holds the decoy's folder (a configure before the fix) is corrected too
cmake -S ours -B ours/build -G Ninja "${args[@]}" -DCaffe2_DIR=$work/decoy/lib/cmake/Caffe2 > again.log 2>&1 ||
  fail "a cached decoy Caffe2_DIR: $(tail -20 again.log)"
echo "torch_config: ok"
