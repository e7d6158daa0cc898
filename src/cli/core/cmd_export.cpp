// `sweep export`: a run's weights as a PyTorch state dict with nanoGPT's names (the deepseek
// family: DeepSeek-V2's inside each block).
#include <cstdio>

#include "cli/core/commands.h"
#include "cli/core_handoff.h"
#include "train/export.h"

namespace sweep {

CLI::App* setup_export(CLI::App& app, ExportOptions& o) {
  CLI::App* cmd = app.add_subcommand("export", core_description("export"));
  cmd->add_option("run-dir", o.run_dir, "Run directory (with config.yaml and checkpoint/)")->required();
  cmd->add_option("--out", o.out, "Output file, e.g. model.pt")->required();
  return cmd;
}

Exit run_export(const ExportOptions& o) {
  RunConfig cfg;
  GPT model = load_run_model(o.run_dir, &cfg);
  export_state_dict(model, o.out);
  const bool gpt2 = cfg.model.family == Family::gpt2;
  std::printf("wrote %s: %lld parameters, %s%s\n", o.out.c_str(), static_cast<long long>(model->num_params()),
              gpt2 ? "nanoGPT names" : "nanoGPT's container, Hugging Face DeepSeek-V2's names inside each block",
              !gpt2 || cfg.model.tie_weights ? ""
                                            : " (untied head: nanoGPT's GPT ties wte and lm_head — untie it before loading)");
  return Exit::ok;
}

}  // namespace sweep
