// `sweep data prepare`: text → token shards + dataset.yaml.
#include <cstdio>

#include "cli/commands.h"
#include "data/prepare.h"

namespace sweep {

CLI::App* setup_data(CLI::App& app, PrepareOptions& o) {
  CLI::App* data = app.add_subcommand("data", "Prepare datasets");
  data->require_subcommand(1);
  CLI::App* prep = data->add_subcommand("prepare", "Tokenize text into train/val/test token shards");
  prep->add_option("--input", o.input, "A .txt or .txt.gz file (documents separated by blank lines) or a folder "
                                       "(one document per file)")
      ->required();
  prep->add_option("--tokenizer", o.tokenizer,
                   "bytes (vocab 256), bpe:<vocab> (SentencePiece trained on the corpus, e.g. bpe:4096) or gpt2 "
                   "(GPT-2's byte-level BPE, vocab 50257)")
      ->capture_default_str();
  prep->add_option("--tokenizer-dir", o.tokenizer_dir,
                   "gpt2: a folder with encoder.json and vocab.bpe (default: fetched once into ~/.cache/sweep)");
  prep->add_option("--out", o.out, "Output folder")->required();
  prep->add_option("--val", o.val_fraction, "Fraction of documents for validation")->capture_default_str();
  prep->add_option("--test", o.test_fraction, "Fraction of documents for test")->capture_default_str();
  prep->add_option("--seed", o.seed, "Seed of the document split")->capture_default_str();
  prep->add_flag("--strip-tags", o.strip_tags, "Turn word/TAG tokens into word (POS-tagged corpora such as Brown)");
  prep->add_flag("--force", o.force, "Replace an existing dataset in --out");
  prep->add_option("--threads", o.threads, "Threads for BPE training")->capture_default_str();
  return data;
}

Exit run_data_prepare(const PrepareOptions& o) {
  double seconds = 0;
  DatasetInfo info = prepare_dataset(o, &seconds);
  int64_t bytes = 0;
  for (const auto& [name, s] : info.splits) {
    bytes += s.bytes;
  }
  std::printf("prepared %s: %s tokenizer, vocab %lld; encoded %.1f MB in %.2f s (%.1f MB/s)\n", o.out.c_str(),
              info.tokenizer.c_str(), static_cast<long long>(info.vocab_size), static_cast<double>(bytes) / 1e6, seconds,
              seconds > 0 ? static_cast<double>(bytes) / 1e6 / seconds : 0.0);
  for (const auto& [name, s] : info.splits) {
    std::printf("  %-5s %5lld documents %10lld tokens %10lld bytes  %.3f bytes/token\n", name.c_str(),
                static_cast<long long>(s.documents), static_cast<long long>(s.tokens),
                static_cast<long long>(s.bytes), info.bytes_per_token(name));
  }
  return Exit::ok;
}

}  // namespace sweep
