// `sweep sample`: text from a trained run of either family, decoded with the run's tokenizer.
#include <cmath>
#include <cstdio>

#include "cli/core/commands.h"
#include "cli/core_handoff.h"
#include "config/run_config.h"
#include "data/dataset.h"
#include "data/tokenizer.h"
#include "train/export.h"
#include "train/sample.h"
#include "util/fs.h"

namespace sweep {

CLI::App* setup_sample(CLI::App& app, SampleCliOptions& o) {
  CLI::App* cmd = app.add_subcommand("sample", core_description("sample"));
  cmd->add_option("run-dir", o.run_dir, "Run directory (with config.yaml and checkpoint/)")->required();
  cmd->add_option("--prompt", o.prompt, "Text to continue (default: the start of a document)");
  cmd->add_option("--tokens", o.tokens, "Tokens to generate")->check(CLI::Range(1, 1 << 20))->capture_default_str();
  cmd->add_option("--temperature", o.temperature, "Softmax temperature; 0 = always the most likely token")
      ->check(between(0, 100))
      ->capture_default_str();
  cmd->add_option("--top-k", o.top_k, "Draw among the k most likely tokens (0 = all)")
      ->check(CLI::Range(0, 1 << 22))
      ->capture_default_str();
  cmd->add_option("--seed", o.seed, "Seed of the draws: the same seed gives the same text")
      ->check(unsigned_integer())
      ->capture_default_str();
  cmd->add_option("--data", o.data_dir, "The dataset's folder (default: the run config's data.dataset, looked up from the run directory upwards)");
  return cmd;
}

Exit run_sample(const SampleCliOptions& o) {
  if (!std::isfinite(o.temperature)) {  // CLI11's range check lets NaN through
    throw Error("--temperature must be a number in [0, 100], got " + std::to_string(o.temperature), Exit::bad_input);
  }
  RunConfig cfg;
  GPT model = load_run_model(o.run_dir, &cfg);  // a one-line error without a checkpoint
  const std::string data_dir =
      o.data_dir.empty() ? find_dataset(cfg.data.dataset, (fs::path(o.run_dir) / "config.yaml").string()) : o.data_dir;
  if (data_dir.empty()) {
    throw Error("cannot find the run's dataset '" + cfg.data.dataset + "' (its tokenizer decodes the text) — pass --data DIR",
                Exit::bad_input);
  }
  const DatasetInfo info = read_dataset(data_dir);
  const auto tokenizer = open_tokenizer(info.tokenizer, info.dir, info.tokenizer_model);
  std::vector<int64_t> prompt;
  if (o.prompt.empty()) {
    prompt.push_back(info.eot_token);  // a document's start
  } else {
    const Encoded e = tokenizer->encode({o.prompt});
    prompt.assign(e.documents.at(0).begin(), e.documents.at(0).end());
  }
  SampleOptions options;
  options.tokens = o.tokens;
  options.temperature = o.temperature;
  options.top_k = o.top_k;
  options.seed = o.seed;
  const std::vector<int64_t> drawn = generate(model, prompt, info.vocab_size, options);
  // The prompt and what follows, decoded together; documents separated as GPT-2 marks them.
  std::vector<int64_t> all = o.prompt.empty() ? std::vector<int64_t>() : prompt;
  all.insert(all.end(), drawn.begin(), drawn.end());
  std::string text;
  std::vector<int> document;
  for (size_t i = 0; i <= all.size(); ++i) {
    if (i == all.size() || all[i] == info.eot_token) {
      text += tokenizer->decode(document);
      document.clear();
      if (i < all.size()) {
        text += "\n<|endoftext|>\n";
      }
    } else {
      document.push_back(static_cast<int>(all[i]));
    }
  }
  std::fwrite(text.data(), 1, text.size(), stdout);
  std::fputc('\n', stdout);
  return Exit::ok;
}

}  // namespace sweep
