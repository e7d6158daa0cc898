// nanoGPT side by side with sweep in `sweep bench`: its model.py (given by path; not part of
// sweep) trained on the same shapes by a Python driver embedded in the binary, run with the
// Python that has torch. One result per (precision, torch.compile on or off).
#pragma once

#include <optional>
#include <string>

#include "config/run_config.h"

namespace sweep {

struct NanoGptRun {
  std::string python = "python3";
  std::string model_py;  // nanoGPT's model.py
  std::string device = "cpu";
  Precision precision = Precision::fp32;
  bool compile = false;
  int64_t steps = 20, warmup = 3;
  int threads = 0;
};

struct NanoGptResult {
  std::string error;  // why there is no figure ("" when there is one)
  std::string torch;  // the torch version that ran it
  double tokens_per_s = 0, step_ms = 0;
  std::optional<double> peak_mib;  // CUDA: the peak tensor memory
};

// Error(bad_input) when the model file or the Python (a name in PATH, or a path) is missing.
void check_nanogpt(const std::string& model_py, const std::string& python);

// nanoGPT's step at the config's shapes (check_nanogpt first); a run that fails gives a result
// with its error.
NanoGptResult run_nanogpt(const RunConfig& config, const NanoGptRun& run);

// The label of a result's row: "nanoGPT (torch 2.11.0, compile on)".
std::string nanogpt_label(const NanoGptResult& r, bool compile);

}  // namespace sweep
