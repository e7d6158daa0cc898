// `sweep eval MODEL --data DIR`: a state dict scored on a dataset's split as runs are.
#include <torch/torch.h>

#include <cstdio>
#include <nlohmann/json.hpp>

#include "cli/core/commands.h"
#include "cli/core_handoff.h"

namespace sweep {

CLI::App* setup_eval(CLI::App& app, EvalCliOptions& o) {
  ScoreOptions& s = o.score;
  CLI::App* cmd = app.add_subcommand("eval", core_description("eval"));
  cmd->add_option("model", s.model, "The state dict file, e.g. gpt2-124M.pt")->required();
  cmd->add_option("--data", s.data, "The prepared dataset's folder (its tokenizer must be the model's)")->required();
  cmd->add_option("--split", s.split, "train, val or test")->check(CLI::IsMember({"train", "val", "test"}))->capture_default_str();
  cmd->add_option("--config", s.config,
                  "A run's config.yaml for the architecture (default: GPT-2's, read from the tensors' names and shapes)")
      ->check(CLI::ExistingFile);
  cmd->add_flag("--ignore-extra", s.ignore_extra, "Score it although the file holds tensors the model does not have");
  cmd->add_option("--n-head", s.n_head,
                  "Attention heads, without --config (default: a nanoGPT checkpoint's model_args, or 64-wide heads "
                  "for GPT-2's published shapes)")
      ->check(CLI::Range(1, 4096));
  cmd->add_option_function<std::string>(
         "--precision", [&s](const std::string& spelled) { s.precision = choice_of<Precision>(spelled); }, "fp32 or bf16")
      ->check(CLI::IsMember({"fp32", "bf16"}))
      ->default_str(to_string(s.precision));
  cmd->add_option("--batch", s.batch, "Windows per forward pass")->check(CLI::Range(1, 4096))->capture_default_str();
  cmd->add_option("--tokens", s.tokens, "Score only the split's first N tokens (no bits per byte then)")
      ->check(at_least(0));
  cmd->add_option("--threads", o.threads, "Threads (default: all cores)")->check(CLI::Range(1, 1024));
  cmd->add_flag("--json", o.json, "Print the score as one JSON object (loss, bpb, tokens, parameters, block_size)");
  return cmd;
}

Exit run_eval(const EvalCliOptions& o) {
  if (o.threads > 0) {
    at::set_num_threads(o.threads);
  }
  const Score s = score_model(o.score);
  if (o.json) {
    nlohmann::ordered_json j{{"model", o.score.model}, {"data", o.score.data}, {"split", o.score.split},
                             {"loss", s.loss}, {"bpb", s.bpb >= 0 ? nlohmann::ordered_json(s.bpb) : nlohmann::ordered_json()},
                             {"tokens", s.tokens}, {"parameters", s.parameters}, {"block_size", s.model.block_size}};
    std::printf("%s\n", j.dump().c_str());
    return Exit::ok;
  }
  std::printf("%s on %s (%s split): loss %.4f nats/token", o.score.model.c_str(), o.score.data.c_str(),
              o.score.split.c_str(), s.loss);
  if (s.bpb >= 0) {
    std::printf(", %.4f bits/byte", s.bpb);
  }
  std::printf(" over %lld tokens, context %lld; %s, %lld layers × %lld heads × %lld wide, %lld parameters\n",
              static_cast<long long>(s.tokens), static_cast<long long>(s.model.block_size),
              to_string(s.model.family).c_str(), static_cast<long long>(s.model.n_layer), static_cast<long long>(s.model.n_head),
              static_cast<long long>(s.model.n_embd), static_cast<long long>(s.parameters));
  return Exit::ok;
}

}  // namespace sweep
