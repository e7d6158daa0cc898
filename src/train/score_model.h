// `sweep eval`: a model the harness did not train, scored on a prepared dataset's split with the
// loss and bits per byte a run's final evaluation uses (evaluate_loss over the split's fixed
// windows of the model's block size), so a reference such as GPT-2's weights sits on the same
// scale as the study's runs. Without a run's config the architecture is GPT-2's, read from the
// state dict's names and shapes (layers, width, context, vocabulary, biases, tied head, MLP width).
// No torch in this header: the CLI includes it.
#pragma once

#include <cstdint>
#include <string>

#include "config/run_config.h"

namespace sweep {

struct ScoreOptions {
  std::string model;             // a state dict file (sweep export, torch.save, nanoGPT's ckpt.pt)
  std::string data;              // a prepared dataset's folder
  std::string split = "test";    // train | val | test
  std::string config;            // a run's config.yaml for the architecture ("" = GPT-2's, from the shapes)
  int64_t n_head = 0;            // with no config: 0 = a nanoGPT checkpoint's model_args, or 64-wide heads for
                                 // GPT-2's published shapes; required otherwise
  bool ignore_extra = false;     // score a file that holds tensors the model does not have
  Precision precision = Precision::fp32;
  int64_t batch = 8;             // windows per forward
  int64_t tokens = 0;            // score the split's first `tokens` only (0 = all of it)
};

struct Score {
  ModelConfig model;
  int64_t parameters = 0;
  int64_t tokens = 0;  // predicted tokens
  double loss = 0;     // mean next-token cross-entropy, nats
  double bpb = -1;     // bits per byte; -1 when the dataset does not record the split's bytes
};

// The longest context a model may have to be scored (a window is one forward pass).
constexpr int64_t k_max_score_context = 131072;

Score score_model(const ScoreOptions& options);

}  // namespace sweep
