#include "train/checkpoint.h"

#include <mutex>

#include "util/error.h"
#include "util/fs.h"

namespace sweep {

namespace {

at::Generator& rng_for(const torch::Device& device) {
  static at::Generator cpu = at::detail::getDefaultCPUGenerator();
  if (device.is_cpu()) {
    return cpu;
  }
  static at::Generator accel = at::globalContext().defaultGenerator(device);
  return accel;
}

}  // namespace

torch::Tensor rng_state(const torch::Device& device) {
  at::Generator& gen = rng_for(device);
  std::lock_guard<std::mutex> lock(gen.mutex());
  return gen.get_state();
}

void save_checkpoint(const std::string& path, GPT& model, torch::optim::Optimizer& opt,
                     const CheckpointMeta& meta, const torch::Device& device,
                     const std::vector<torch::Tensor>& rng_states) {
  torch::serialize::OutputArchive root, model_archive, optim_archive;
  model->save(model_archive);
  opt.save(optim_archive);
  root.write("model", model_archive);
  root.write("optimizer", optim_archive);
  root.write("step", torch::tensor(meta.step, torch::kLong));
  root.write("tokens_per_step", torch::tensor(meta.tokens_per_step, torch::kLong));
  root.write("config_json", c10::IValue(meta.config_json));
  // Rank 0's state under the single-process name, so that checkpoints of any world size load alike.
  root.write("rng_state", rng_states.empty() ? rng_state(device) : rng_states[0]);
  for (size_t r = 1; r < rng_states.size(); ++r) {
    root.write("rng_state_rank" + std::to_string(r), rng_states[r]);
  }
  replace_file_atomic(path, [&](const fs::path& tmp) { root.save_to(tmp.string()); });
}

CheckpointMeta load_checkpoint(const std::string& path, GPT& model, torch::optim::Optimizer& opt,
                               const torch::Device& device, int64_t rank) {
  torch::serialize::InputArchive root, model_archive, optim_archive;
  try {
    root.load_from(path, device);
  } catch (const c10::Error& e) {
    throw Error("cannot read checkpoint " + path + ": " + e.what_without_backtrace());
  }
  root.read("model", model_archive);
  model->load(model_archive);
  root.read("optimizer", optim_archive);
  opt.load(optim_archive);
  CheckpointMeta meta;
  torch::Tensor t;
  root.read("step", t);
  meta.step = t.item<int64_t>();
  root.read("tokens_per_step", t);
  meta.tokens_per_step = t.item<int64_t>();
  c10::IValue config;
  root.read("config_json", config);
  meta.config_json = config.toStringRef();
  torch::Tensor state;
  const std::string key = rank == 0 ? "rng_state" : "rng_state_rank" + std::to_string(rank);
  if (!root.try_read(key, state)) {
    throw Error("checkpoint " + path + " holds no RNG state for rank " + std::to_string(rank) +
                    " — it was written by fewer ranks; resume with the ranks that wrote it",
                Exit::bad_input);
  }
  at::Generator& gen = rng_for(device);
  std::lock_guard<std::mutex> lock(gen.mutex());
  gen.set_state(state.to(torch::kCPU));
  return meta;
}

void load_checkpoint_weights(const std::string& path, GPT& model) {
  torch::serialize::InputArchive root, model_archive;
  try {
    root.load_from(path, torch::kCPU);
  } catch (const c10::Error& e) {
    throw Error("cannot read checkpoint " + path + ": " + e.what_without_backtrace());
  }
  root.read("model", model_archive);
  model->load(model_archive);
}

}  // namespace sweep
