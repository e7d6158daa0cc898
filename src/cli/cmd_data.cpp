// `sweep data prepare`: text → token shards + dataset.yaml; `sweep data import`: llm.c's shards as they are.
#include <cstdio>

#include "cli/commands.h"
#include "data/prepare.h"

namespace sweep {

CLI::App* setup_data(CLI::App& app, DataOptions& d) {
  CLI::App* data = app.add_subcommand("data", "Prepare or import datasets");
  data->require_subcommand(1);
  PrepareOptions& o = d.prepare;
  CLI::App* prep = data->add_subcommand("prepare", "Tokenize text into train/val/test token shards");
  d.prepare_cmd = prep;
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
  prep->add_option("--val", o.val_fraction, "Fraction of documents for validation")->check(between(0, 1))->capture_default_str();
  prep->add_option("--test", o.test_fraction, "Fraction of documents for test")->check(between(0, 1))->capture_default_str();
  prep->add_option("--seed", o.seed, "Seed of the document split")->capture_default_str();
  prep->add_flag("--strip-tags", o.strip_tags, "Turn word/TAG tokens into word (POS-tagged corpora such as Brown)");
  prep->add_flag("--force", o.force, "Replace an existing dataset in --out");
  prep->add_option("--threads", o.threads, "Threads for BPE training")->capture_default_str();

  ImportOptions& i = d.import;
  CLI::App* imp = data->add_subcommand(
      "import", "Use llm.c's prepared shards (*_train*.bin, *_val*.bin, GPT-2 tokens) where they are: writes "
                "dataset.yaml in the folder and carves a test split from val");
  d.import_cmd = imp;
  imp->add_option("dir", i.dir, "The folder of llm.c shards, e.g. llm.c/dev/data/fineweb10B")->required();
  imp->add_option("--test", i.test_shards, "Shards (file names in the folder) that are the test split, instead of "
                                           "carving one from val");
  imp->add_option("--test-fraction", i.test_fraction, "Fraction of val's documents carved into the test split")
      ->check(between(0, 1))
      ->capture_default_str();
  imp->add_option("--seed", i.seed, "Seed of the carving (which val documents go to test)")->capture_default_str();
  imp->add_option("--tokenizer-dir", i.tokenizer_dir,
                  "A folder with GPT-2's encoder.json and vocab.bpe (default: fetched once into ~/.cache/sweep)");
  imp->add_flag("--force", i.force, "Import again over an existing dataset.yaml");
  return data;
}

namespace {

void print_splits(const DatasetInfo& info) {
  for (const auto& [name, s] : info.splits) {
    std::printf("  %-5s %9lld documents %12lld tokens %13lld bytes  %.3f bytes/token  %zu shard%s\n", name.c_str(),
                static_cast<long long>(s.documents), static_cast<long long>(s.tokens),
                static_cast<long long>(s.bytes), info.bytes_per_token(name), s.shards.size(),
                s.shards.size() == 1 ? "" : "s");
  }
}

}  // namespace

Exit run_data(const DataOptions& d) {
  if (*d.import_cmd) {
    ImportStats stats;
    const DatasetInfo info = import_llmc(d.import, &stats);
    std::printf("imported %s: gpt2 tokenizer, vocab %lld; checked %lld tokens in %.1f s (%.0f M tokens/s)\n",
                d.import.dir.c_str(), static_cast<long long>(info.vocab_size),
                static_cast<long long>(stats.scanned_tokens), stats.seconds,
                stats.seconds > 0 ? static_cast<double>(stats.scanned_tokens) / 1e6 / stats.seconds : 0.0);
    print_splits(info);
    return Exit::ok;
  }
  const PrepareOptions& o = d.prepare;
  double seconds = 0;
  DatasetInfo info = prepare_dataset(o, &seconds);
  int64_t bytes = 0;
  for (const auto& [name, s] : info.splits) {
    bytes += s.bytes;
  }
  std::printf("prepared %s: %s tokenizer, vocab %lld; encoded %.1f MB in %.2f s (%.1f MB/s)\n", o.out.c_str(),
              to_string(info.tokenizer).c_str(), static_cast<long long>(info.vocab_size), static_cast<double>(bytes) / 1e6, seconds,
              seconds > 0 ? static_cast<double>(bytes) / 1e6 / seconds : 0.0);
  print_splits(info);
  return Exit::ok;
}

}  // namespace sweep
