// A bench row for a script to read (`sweep bench --rows FILE`): each timed row of the step — sweep's
// with a lever of it, or nanoGPT's — appended to FILE as one JSON line the moment it is measured, so
// that a bench cut off (a GPU window that ends, a crash in a later row) leaves every row before it.
// scripts/test-gpu.sh builds its Markdown table from these lines (scripts/bench-table.py).
#pragma once

#include <optional>
#include <string>

namespace sweep {

struct BenchRow {
  std::string device;     // cpu, cuda:0
  std::string model;      // reference, gpt2-small, a config's path
  std::string precision;  // fp32, bf16, tf32
  std::string who;        // "sweep", a lever ("cuda-graph"), "nanogpt", "nanogpt-compile"
  double tokens_per_s = 0, step_ms = 0;
  double flops_per_s = 0;                 // the model's FLOPs per token × tokens/s
  double mfu = 0;                         // of the matmul peak measured in the same run (0: none)
  std::optional<double> peak_mib;         // peak tensor memory of the step
  std::optional<double> optimizer_ms;     // the optimizer's part of a step, timed apart
  std::optional<double> reads_per_step;   // host reads of the device per step
  std::string note;                       // "AdamW foreach, replayed", "capture failed: …", "no figure — …"
};

// Appends `row` to `file` as one JSON line (nothing where `file` is ""); an Error naming the file
// when it cannot be written.
void append_bench_row(const std::string& file, const BenchRow& row);

}  // namespace sweep
