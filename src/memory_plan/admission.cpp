#include "memory_plan/admission.h"

#include "util/error.h"
#include "util/text.h"

namespace sweep {

namespace {

constexpr double k_gib = 1024.0 * 1024 * 1024;

}  // namespace

MemoryPlan run_memory(const RunConfig& c) {
  return plan_memory(c, Layout{c.resources.ranks, c.parallel.zero, c.parallel.expert, 0}, step_path_here(c));
}

MemoryCheck check_memory(const SweepSpec& spec, bool items, const std::set<std::string>& done) {
  MemoryCheck out;
  const PlannedRun* largest = nullptr;
  MemoryPlan most;
  double worst = 0;  // the largest total ÷ device memory (or total, without one)
  for (const auto& r : spec.runs) {
    if (r.config.trainer || done.count(r.run_id)) {
      continue;  // a trainer of the user's: its memory is its own; a finished run needs none
    }
    const MemoryPlan p = run_memory(r.config);
    const double device = r.config.resources.device_memory * k_gib;
    const double measure = device > 0 ? p.total() / device : p.total() / 1e30;
    if (!largest || measure > worst) {
      largest = &r;
      most = p;
      worst = measure;
    }
    const std::string name =
        r.variant + " " + seeds_in_words(r.config.seeds.init, r.config.seeds.data, r.repeat);
    if (device > 0 && p.total() > device) {
      out.too_big.push_back(name + ": " + format_bytes(p.total()));
    }
  }
  if (!largest) {
    return out;
  }
  const RunConfig& c = largest->config;
  const MemoryPlan& p = most;
  out.lines.push_back("memory per device (the plan, docs/parallel.md#memory), the most of any run (" + largest->variant +
                      ": " + c.resources.device + ", " + p.layout.describe() + ", sequences of " +
                      std::to_string(c.model.block_size) + " tokens, " + to_string(c.train.precision) + "):");
  out.lines.push_back("  weights " + format_bytes(p.weights) + ", gradients " + format_bytes(p.gradients) +
                      (c.train.optimizer == Optimizer::muon ? ", AdamW moments and Muon's momentum " : ", AdamW moments ") +
                      format_bytes(p.optimizer) + ", activations " + format_bytes(p.activations) +
                      ", temporaries " + format_bytes(p.transient) +
                      (p.communication > 0 ? ", collectives " + format_bytes(p.communication) : "") + ": " +
                      format_bytes(p.total()));
  if (items) {
    out.lines.push_back("  activations of one micro-batch, kept for backward (all layers):");
    for (const auto& item : p.activation_items) {
      out.lines.push_back("    " + format_bytes(item.bytes) + "  " + item.what);
    }
  }
  const double device = c.resources.device_memory * k_gib;
  if (device <= 0) {
    return out;
  }
  const std::string gib = format_number("%g", c.resources.device_memory) + " GiB";
  if (p.total() <= device) {
    out.lines.push_back("  fits resources.device_memory " + gib);
    return out;
  }
  const std::vector<MemoryPlan> fit = layouts_that_fit(c, step_path_here(c), 0.9 * device);
  std::string alternatives;
  for (const auto& f : fit) {
    alternatives += (alternatives.empty() ? "" : "; ") + f.layout.describe() + ": " + format_bytes(f.total());
  }
  out.lines.push_back("  does not fit resources.device_memory " + gib + "; " +
                      (fit.empty() ? "no layout of up to 8× the ranks fits 90% of it: each rank still computes whole "
                                     "layers of a micro-batch (activations " + format_bytes(p.activations) +
                                         ") — that needs tensor or sequence parallelism, which sweep does not have "
                                         "(docs/parallel.md#beyond-zero): shorter sequences, a smaller model, or a "
                                         "device with more memory"
                                   : "layouts that would, with 10% to spare: " + alternatives));
  return out;
}

void refuse_over_memory(const SweepSpec& spec, const std::set<std::string>& done) {
  if (const MemoryCheck memory = check_memory(spec, false, done); !memory.too_big.empty()) {
    // the plan is within about 15% of what a step takes (docs/performance.md#memory): a run over
    // its device's memory would run out of it, after its start had been paid for
    std::string runs;
    for (const auto& r : memory.too_big) {
      runs += (runs.empty() ? "" : ", ") + r;
    }
    std::string plan;
    for (const auto& line : memory.lines) {
      plan += "\n" + line;
    }
    throw Error(spec.file + ": " + std::to_string(memory.too_big.size()) + " run(s) need more memory per device than " +
                    "resources.device_memory (" + runs + ")" + plan +
                    "\nset train.micro_batch lower with train.grad_accum higher (the same batch), or "
                    "train.activation_checkpointing: true, or shard the state (parallel.zero, parallel.expert: "
                    "the layouts above); or raise resources.device_memory if the device has more",
                Exit::bad_input);
  }
}

}  // namespace sweep
