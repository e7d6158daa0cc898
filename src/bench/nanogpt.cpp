#include "bench/nanogpt.h"

#include <unistd.h>

#include <nlohmann/json.hpp>

#include "nanogpt_bench.h"
#include "util/error.h"
#include "util/fs.h"
#include "util/process.h"
#include "util/text.h"

namespace sweep {

void check_nanogpt(const std::string& model_py, const std::string& python) {
  if (!fs::is_regular_file(model_py)) {
    throw Error("--nanogpt " + model_py + ": no such file — give the path of nanoGPT's model.py", Exit::bad_input);
  }
  const bool found = python.find('/') != std::string::npos ? ::access(python.c_str(), X_OK) == 0
                                                          : find_program(python).has_value();
  if (!found) {
    throw Error("--python " + python + ": not found — name the Python that has torch", Exit::bad_input);
  }
}

NanoGptResult run_nanogpt(const RunConfig& config, const NanoGptRun& run) {
  check_nanogpt(run.model_py, run.python);
  const ModelConfig m = config.model.resolved();
  const fs::path script = fs::temp_directory_path() / ("sweep-nanogpt-bench-" + std::to_string(::getpid()) + ".py");
  write_file_atomic(script, k_nanogpt_bench_py);
  struct Remove {
    fs::path p;
    ~Remove() {
      std::error_code ignored;
      fs::remove(p, ignored);
    }
  } remove{script};
  const Captured c = run_capture({run.python, script.string(), "--model", run.model_py, "--device", run.device,
                                  "--precision", to_string(run.precision), "--compile", run.compile ? "1" : "0",
                                  "--n-layer", std::to_string(m.n_layer), "--n-head", std::to_string(m.n_head),
                                  "--n-embd", std::to_string(m.n_embd), "--block", std::to_string(m.block_size),
                                  "--batch", std::to_string(config.train.micro_batch), "--vocab",
                                  std::to_string(m.padded_vocab()), "--data-vocab", std::to_string(m.vocab_size),
                                  "--steps", std::to_string(run.steps), "--warmup", std::to_string(run.warmup),
                                  "--threads", std::to_string(run.threads)});
  NanoGptResult r;
  // The result is the last line that is a JSON object; anything else is what went wrong.
  const auto lines = split(trim(c.output), '\n');
  for (auto it = lines.rbegin(); it != lines.rend(); ++it) {
    if (it->rfind("{", 0) != 0) {
      continue;
    }
    try {
      const auto j = nlohmann::json::parse(*it);
      r.torch = j.value("torch", "");
      r.error = j.value("error", "");
      r.tokens_per_s = j.value("tokens_per_s", 0.0);
      r.step_ms = j.value("step_ms", 0.0);
      if (j.contains("peak_mib") && j["peak_mib"].is_number()) {
        r.peak_mib = j["peak_mib"].get<double>();
      }
      return r;
    } catch (const nlohmann::json::exception&) {
    }
  }
  r.error = "it exited " + std::to_string(c.code) + ": " + (lines.empty() ? std::string("no output") : lines.back());
  return r;
}

std::string nanogpt_label(const NanoGptResult& r, bool compile) {
  return "nanoGPT (torch " + (r.torch.empty() ? std::string("?") : r.torch) + ", compile " + (compile ? "on" : "off") + ")";
}

}  // namespace sweep
