// Sharded checkpoints (train/sharded/checkpoint_shards.h) over a real c10d process group (Gloo on loopback, ranks as
// threads), fp32, dropout 0: each rank writes its own shard and rank 0 the manifest, the previous
// checkpoint kept and older shards removed; a checkpoint read at other ranks or in another layout
// (resharded) continues the curve of the run that wrote it; a damaged shard sends every rank back
// to the previous checkpoint; a shard that one rank cannot write fails the save on every rank and
// keeps the previous checkpoint; the weights of a sharded checkpoint read whole equal the run's.
#include <fstream>
#include <regex>

#include "parallel_helpers.h"
#include "train/checkpoint.h"
#include "train/sharded/checkpoint_shards.h"
#include "util/fs.h"

using namespace sweep;

namespace {

using test::on_all;
using test::start;
using test::weights;

std::set<std::string> files_in(const std::string& dir) {
  std::set<std::string> out;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    out.insert(e.path().filename().string());
  }
  return out;
}

// The files of `dir` that are shards of step `step` (NAME.step<N>-<save>.rank<R>-of-<W>.pt), and
// the one of rank `rank` among them (of the last save of that step when there are several).
std::vector<std::string> shards_of(const std::string& dir, int64_t step) {
  std::vector<std::string> out;
  const std::regex shard("ckpt\\.step" + std::to_string(step) + "-[0-9a-f]{8}\\.rank[0-9]+-of-2\\.pt");
  for (const auto& f : files_in(dir)) {
    if (std::regex_match(f, shard)) {
      out.push_back(f);
    }
  }
  return out;
}

// The next `steps` losses of a group (rank 0's: every rank logs the same).
std::vector<double> group_losses(test::Group& g, int steps) {
  std::vector<double> out;
  for (int s = 0; s < steps; ++s) {
    out.push_back(test::step_all(g.ranks)[0].loss);
  }
  return out;
}

// `resumed` goes on as `reference` did: per-step loss within `tolerance` relative (the sums of
// another layout: other ranks, another accumulation, pieces summed in another order).
void check_same_curve(const std::vector<double>& resumed, const std::vector<double>& reference, double tolerance) {
  REQUIRE(resumed.size() == reference.size());
  for (size_t s = 0; s < resumed.size(); ++s) {
    CAPTURE(s);
    CHECK(test::relative(resumed[s], reference[s]) <= tolerance);
  }
}

// f(r) for every rank r at once, each catching its own errors (collectives need every rank).
template <typename F>
void each_rank(test::Group& g, F f) {
  std::vector<std::thread> threads;
  for (size_t r = 0; r < g.ranks.size(); ++r) {
    threads.emplace_back([&, r] { f(r); });
  }
  for (auto& t : threads) {
    t.join();
  }
}

}  // namespace

TEST_CASE("sharded checkpoint: a shard per rank, the manifest at the checkpoint's path, the previous kept") {
  test::TempDir dir;
  auto data = test::synthetic_data();
  RunConfig c = test::tiny_config();
  c.parallel.zero = 3;
  const std::string path = dir.str("ckpt.pt");
  test::Group g = start(c, data);
  on_all(g.ranks, [&](Trainer& t) { t.save(path); });  // step 0: no moments yet
  CHECK(files_in(dir.str()).size() == 3);
  CHECK(shards_of(dir.str(), 0).size() == 2);
  for (int step : {1, 2}) {
    test::step_all(g.ranks);
    on_all(g.ranks, [&](Trainer& t) { t.save(path); });
    CAPTURE(step);
    CHECK(files_in(dir.str()).size() == 6);  // this one, the previous one; older shards gone
  }
  CHECK(files_in(dir.str()).count("ckpt.prev.pt") == 1);
  CHECK(shards_of(dir.str(), 1).size() == 2);
  CHECK(shards_of(dir.str(), 2).size() == 2);
  for (const auto& f : files_in(dir.str())) {
    CAPTURE(f);
    CHECK_FALSE(checkpoint_problem(dir.str(f)));  // every file checksummed as a checkpoint is
  }
  const auto reader = ShardReader::open(path);
  REQUIRE(reader);
  CHECK(reader->world() == 2);
  CHECK(reader->adam_steps() == 2);
  CHECK(reader->meta().step == 2);
  CHECK(reader->layout() == "ZeRO-3 over 2 ranks");
  // A second save of the step writes files of its own: both checkpoints stay whole.
  on_all(g.ranks, [&](Trainer& t) { t.save(path); });
  CHECK(shards_of(dir.str(), 2).size() == 4);
  CHECK_FALSE(checkpoint_problem(previous_checkpoint(path)));
  CHECK(ShardReader::open(previous_checkpoint(path))->meta().step == 2);

  // The whole weights, as sweep export reads them: the run's.
  GPT whole(c.model, c.seeds.init);
  load_checkpoint_weights(path, whole);
  CHECK(torch::equal(test::flat_params(whole), weights(g)));
}

TEST_CASE("sharded checkpoint: resharded to one process with accumulation 2, it continues the curve of 2 ranks") {
  test::TempDir dir;
  auto data = test::synthetic_data();
  for (const bool experts : {false, true}) {
    CAPTURE(experts);
    RunConfig c = experts ? test::tiny_deepseek_config(Balance::bias) : test::tiny_config();
    c.parallel.zero = experts ? 2 : 3;
    c.parallel.expert = experts ? 2 : 1;
    c.resources.ranks = 2;
    const std::string path = dir.str(experts ? "ep.pt" : "zero.pt");
    test::Group first = start(c, data);
    group_losses(first, 3);
    on_all(first.ranks, [&](Trainer& t) { t.save(path); });
    const std::vector<double> reference = group_losses(first, 4);

    RunConfig one = c;
    one.resources.ranks = 1;
    one.train.grad_accum = 2;  // the same batch of a step
    one.parallel = {};
    Trainer single(one, data);
    const std::string note = single.load(path);
    CHECK(note.find("resharded") != std::string::npos);
    CHECK(single.step() == 3);
    check_same_curve(test::losses(single, 4), reference, 1e-5);
    const torch::Tensor a = test::flat_params(single.model()), b = weights(first);
    CHECK((a - b).abs().max().item<double>() < 1e-6);
    for (size_t l = 0; l < single.model()->moe_layers().size(); ++l) {  // the balancing biases came too
      CHECK(torch::allclose(single.model()->moe_layers()[l]->expert_bias,
                            first.ranks[0]->model()->moe_layers()[l]->expert_bias, 0, 1e-6));
    }
  }
}

TEST_CASE("sharded checkpoint: 2 ranks to 3 (uneven pieces), and one process's checkpoint to 2 ranks of ZeRO-3") {
  test::TempDir dir;
  auto data = test::synthetic_data();
  RunConfig c = test::tiny_config();
  c.train.micro_batch = 4;
  c.train.grad_accum = 3;
  c.parallel.zero = 3;
  const std::string path = dir.str("ckpt.pt");
  test::Group two = start(c, data, 2);
  group_losses(two, 2);
  on_all(two.ranks, [&](Trainer& t) { t.save(path); });
  const std::vector<double> reference = group_losses(two, 3);
  RunConfig at3 = c;
  at3.train.grad_accum = 2;  // 2 × 3 = 3 × 2 micro-batches a step
  at3.parallel.zero = 1;
  test::Group three = start(at3, data, 3);
  on_all(three.ranks, [&](Trainer& t) { t.load(path); });
  check_same_curve(group_losses(three, 3), reference, 1e-5);
  CHECK((weights(three) - weights(two)).abs().max().item<double>() < 1e-6);

  // The other way: a checkpoint of one process (one file) read by 2 ranks of ZeRO-3.
  RunConfig single_cfg = c;
  single_cfg.train.grad_accum = 6;
  single_cfg.parallel = {};
  Trainer single(single_cfg, data);
  test::losses(single, 2);
  single.save(dir.str("one.pt"));
  const std::vector<double> ahead = test::losses(single, 3);
  test::Group sharded = start(c, data, 2);
  on_all(sharded.ranks, [&](Trainer& t) { t.load(dir.str("one.pt")); });
  check_same_curve(group_losses(sharded, 3), ahead, 1e-5);
}

TEST_CASE("sharded checkpoint: a damaged shard sends every rank back to the previous checkpoint") {
  test::TempDir dir;
  auto data = test::synthetic_data();
  RunConfig c = test::tiny_config();
  c.parallel.zero = 3;  // each rank reads only its own shard: rank 0 finds nothing wrong with its own
  const std::string path = dir.str("ckpt.pt");
  test::Group first = start(c, data);
  group_losses(first, 1);
  on_all(first.ranks, [&](Trainer& t) { t.save(path); });
  group_losses(first, 1);
  on_all(first.ranks, [&](Trainer& t) { t.save(path); });
  const std::string damaged = shards_of(dir.str(), 2).at(1);  // rank 1's
  {  // one byte of rank 1's latest shard changed
    std::fstream f(dir.str(damaged), std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(-100, std::ios::end);
    f.put('\x5a');
  }
  test::Group resumed = start(c, data);
  std::vector<std::pair<bool, std::string>> outcome(2);
  each_rank(resumed, [&](size_t r) { outcome[r] = resumed.ranks[r]->resume(path); });
  for (const auto& [loaded, note] : outcome) {
    CHECK(loaded);
    CHECK(note.find("resumed from " + previous_checkpoint(path) + " at step 1") != std::string::npos);
    CHECK(note.find(damaged) != std::string::npos);  // every rank names what rank 1 found
  }
  CHECK(resumed.ranks[0]->step() == 1);
  CHECK(resumed.ranks[1]->step() == 1);
  CHECK(std::filesystem::exists(path + ".damaged"));  // set aside for a look, with its shards
  on_all(resumed.ranks, [&](Trainer& t) { t.save(path); });
  CHECK(std::filesystem::exists(dir.str(damaged)));
  RunConfig one = c;
  one.parallel = {};
  one.train.grad_accum = 2;
  Trainer single(one, data);  // resumed unsharded: its checkpoints of one file leave no shard behind
  single.load(path);
  test::losses(single, 2);
  single.save(path);
  single.save(path);  // twice: the previous checkpoint is this one's too
  for (const auto& f : files_in(dir.str())) {
    CAPTURE(f);
    CHECK((f.find(".rank") == std::string::npos || f.rfind("ckpt.step2-", 0) == 0));  // the damaged one's kept
  }
}

TEST_CASE("sharded checkpoint: a shard one rank cannot write fails the save on every rank, the previous kept") {
  test::TempDir dir;
  auto data = test::synthetic_data();
  RunConfig c = test::tiny_config();
  c.parallel.zero = 2;
  std::filesystem::create_directories(dir.str("checkpoint"));
  const std::string path = dir.str("checkpoint/ckpt.pt");
  test::Group g = start(c, data);
  group_losses(g, 1);
  on_all(g.ranks, [&](Trainer& t) { t.save(path); });
  group_losses(g, 1);
  write_file_atomic(dir.str("test-fault"), "fail_shard:1");  // rank 1's shard meets a full disk (test builds)
  std::vector<std::string> errors(2);
  std::vector<Exit> codes(2, Exit::ok);
  each_rank(g, [&](size_t r) {
    try {
      g.ranks[r]->save(path);
    } catch (const Error& e) {
      errors[r] = e.what();
      codes[r] = e.code();
    }
  });
  CHECK(codes[0] == Exit::io_error);  // as a file that cannot be written: the run stops, to resume
  CHECK(codes[1] == Exit::io_error);
  CHECK(errors[0].find("rank 1 could not write its shard") != std::string::npos);
  CHECK(errors[1].find("No space left on device") != std::string::npos);
  CHECK(ShardReader::open(path)->meta().step == 1);  // the checkpoint is still the last whole one
  CHECK_FALSE(std::filesystem::exists(previous_checkpoint(path)));
}

TEST_CASE("sharded checkpoint: a manifest sweep would not write is refused, whole as its checksum may be") {
  test::TempDir dir;
  const std::string path = dir.str("ckpt.pt");
  auto manifest = [&](const std::string& shards) {  // a forged manifest, its SHA-256 right
    torch::serialize::OutputArchive root;
    root.write("shards", c10::IValue(shards));
    write_checkpoint_meta(root, CheckpointMeta{3, 128, "{}"});
    write_checkpoint_file(path, root, {}, /*keep_previous=*/false, 3);
  };
  const std::string shard = R"({"file": "ckpt.step3-00000000.rank0-of-1.pt", "sha256": "00", "index": [["w", 0, 4]]})";
  const std::vector<std::pair<std::string, std::string>> forged{
      {"not JSON", "its manifest does not read"},
      {R"({"world": 1, "adam_steps": 2, "shards": [{"file": "../elsewhere.pt", "sha256": "00", "index": []}]})",
       "names a shard outside its folder"},
      {R"({"world": 1, "adam_steps": 2, "shards": [{"file": "a.pt", "sha256": "00", "index": [["w", -4, 4]]}]})",
       "negative range"},
      {R"({"world": 1, "adam_steps": 10, "shards": [)" + shard + "]}", "AdamW steps 10 at step 3"},
      {R"({"world": 1, "adam_steps": 2, "shards": []})", "0 shards"},
  };
  for (const auto& [text, why] : forged) {
    CAPTURE(text);
    manifest(text);
    try {
      ShardReader::open(path);
      FAIL("a forged manifest was accepted");
    } catch (const CheckpointDamaged& e) {
      CHECK(std::string(e.what()).find(why) != std::string::npos);
    }
  }
  // A whole manifest whose shard does not hold what its index says: one line, not LibTorch's.
  torch::serialize::OutputArchive root;
  root.write("0.value", torch::zeros({3}));  // the index says 4 elements
  const std::string sha = write_checkpoint_file(dir.str("ckpt.step3-00000000.rank0-of-1.pt"), root, {}, false, 3);
  manifest(R"({"world": 1, "adam_steps": 0, "shards": [{"file": "ckpt.step3-00000000.rank0-of-1.pt", "sha256": ")" +
           sha + R"(", "index": [["w", 0, 4]]}]})");
  torch::Tensor w = torch::empty({4});
  CHECK_THROWS_WITH(ShardReader::open(path)->load({ShardRead::into("w", 4, 0, w)}, -1, torch::kCPU, nullptr),
                    doctest::Contains("holds value of 'w' unlike its index says"));
}
