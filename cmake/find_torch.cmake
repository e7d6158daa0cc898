# find_package(Torch) for the LibTorch at Torch_DIR, and only it. TorchConfig.cmake finds its
# Caffe2 config with find_dependency(Caffe2 PATHS <its own folder>), which CMake searches after
# CMAKE_PREFIX_PATH and the system's prefixes: where Debian's libtorch-dev is installed
# (/usr/lib/x86_64-linux-gnu/cmake/Caffe2), or a conda torch is on CMAKE_PREFIX_PATH, that other
# Caffe2 was taken — its CUDA empty, the build broken at the first CUDA header. Caffe2_DIR is set
# to the one beside Torch_DIR, which find_package takes before any search.
if(Torch_DIR)
  get_filename_component(sweep_caffe2_dir "${Torch_DIR}/../Caffe2" ABSOLUTE)
  if(EXISTS "${sweep_caffe2_dir}/Caffe2Config.cmake" AND NOT Caffe2_DIR STREQUAL sweep_caffe2_dir)
    set(Caffe2_DIR "${sweep_caffe2_dir}" CACHE PATH "The Caffe2 config of the LibTorch at Torch_DIR" FORCE)
  endif()
endif()
find_package(Torch REQUIRED)
