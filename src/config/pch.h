// The precompiled header of the libraries and the front that do not include LibTorch (the training
// core's reuse train/torch_pch.h): the standard library, nlohmann/json and yaml-cpp, which
// config/run_config.h brings into almost every file (~4 MB preprocessed, most of a file's compile).
#pragma once

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>
#include <yaml-cpp/yaml.h>
