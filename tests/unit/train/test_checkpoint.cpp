// Resume must be exact: a run stopped at step k and resumed equals the uninterrupted run,
// bitwise on CPU fp32 — dropout (the RNG stream), AdamW moments and the loader position included.
#include <doctest/doctest.h>

#include <functional>

#include "helpers.h"
#include "train/checkpoint.h"
#include "util/error.h"
#include "util/fs.h"
#include "util/text.h"

using namespace sweep;

namespace {

struct Curve {
  std::vector<double> train, val;
  double test = 0;
};

Curve curve_of(const std::string& events_file) {
  Curve c;
  for (const auto& line : split(read_file(events_file), '\n')) {
    if (line.empty()) {
      continue;
    }
    auto ev = nlohmann::json::parse(line);
    if (ev["event"] == "train") {
      c.train.push_back(ev["loss"].get<double>());
    } else if (ev["event"] == "eval" && ev["split"] == "val") {
      c.val.push_back(ev["loss"].get<double>());
    } else if (ev["event"] == "end" && ev["status"] == "done") {
      c.test = ev["test_loss"].get<double>();
    }
  }
  return c;
}

RunConfig resumable_config(RunConfig c = test::tiny_config()) {
  c.model.dropout = 0.1;  // the RNG stream must be restored too
  c.train.schedule = Schedule::cosine;
  c.train.warmup = 2;
  c.train.grad_clip = 1.0;
  c.train.tokens = c.tokens_per_step() * 12;
  c.eval.every = 3;
  return c;
}

}  // namespace

TEST_CASE("resume: k steps, stop, resume for k more == 2k steps straight (bitwise), each family, fp32 and bf16") {
  // deepseek with bias balancing: the experts' biases are resumed with the weights
  for (const RunConfig& family : {test::tiny_config(), test::tiny_deepseek_config(Balance::aux_loss), test::tiny_deepseek_config(Balance::bias),
                                  test::tiny_speedrun_config(), test::tiny_muon_config()}) {
  for (const Precision precision : {Precision::fp32, Precision::bf16}) {
  CAPTURE(family.model.family);
  CAPTURE(family.model.balance);
  CAPTURE(precision);
  auto data = test::synthetic_data();
  RunConfig c = resumable_config(family);
  c.train.precision = precision;
  test::TempDir straight, split_run;

  Trainer a(c, data);
  RunResult ra;
  {
    EventSink ev(straight.str("events.jsonl"), "", false, false);
    ra = a.run({straight.str(), false, &ev});
  }
  REQUIRE(ra.status == RunState::done);

  {
    Trainer first(c, data);
    EventSink ev(split_run.str("events.jsonl"), "", false, false);
    const RunResult r = first.run({split_run.str(), false, &ev, /*max_steps=*/5});
    CHECK(r.status == RunState::preempted);
    CHECK(r.step == 5);
  }
  REQUIRE(fs::exists(split_run.str("checkpoint/ckpt.pt")));
  Trainer second(c, data);  // a fresh process would start exactly like this
  RunResult rb;
  {
    EventSink ev(split_run.str("events.jsonl"), "", false, false);
    rb = second.run({split_run.str(), true, &ev});
  }
  REQUIRE(rb.status == RunState::done);

  const Curve sa = curve_of(straight.str("events.jsonl")), sb = curve_of(split_run.str("events.jsonl"));
  CHECK(sa.train.size() == 12);
  CHECK(sb.train == sa.train);
  CHECK(sb.test == sa.test);
  CHECK(rb.test_loss == ra.test_loss);
  CHECK(torch::equal(test::flat_params(second.model()), test::flat_params(a.model())));
  for (size_t l = 0; l < a.model()->moe_layers().size(); ++l) {
    const auto& bias = a.model()->moe_layers()[l]->expert_bias;
    if (bias.defined()) {
      CHECK(torch::equal(second.model()->moe_layers()[l]->expert_bias, bias));
    }
  }
  }
  }
}

TEST_CASE("a checkpoint of another config is refused") {
  auto data = test::synthetic_data();
  test::TempDir dir;
  RunConfig c = resumable_config();
  Trainer a(c, data);
  a.train_step();
  a.save(dir.str("ckpt.pt"));
  c.train.lr *= 2;
  Trainer b(c, data);
  CHECK_THROWS_WITH_AS(b.load(dir.str("ckpt.pt")), doctest::Contains("another config"), Error);
  // another optimizer, either way round: a one-line error, nothing loaded
  RunConfig muon = resumable_config();
  muon.train.optimizer = Optimizer::muon;
  Trainer m(muon, data);
  CHECK_THROWS_WITH_AS(m.load(dir.str("ckpt.pt")), doctest::Contains("another config.yaml"), Error);
  m.train_step();
  m.save(dir.str("muon.pt"));
  Trainer plain(resumable_config(), data);
  CHECK_THROWS_WITH_AS(plain.load(dir.str("muon.pt")), doctest::Contains("another config.yaml"), Error);

  Trainer same(resumable_config(), data);
  same.load(dir.str("ckpt.pt"));
  CHECK(same.step() == 1);
  CHECK(torch::equal(test::flat_params(same.model()), test::flat_params(a.model())));
}

TEST_CASE("an unreadable checkpoint is a clear error") {
  auto data = test::synthetic_data();
  test::TempDir dir;
  write_file_atomic(dir.str("ckpt.pt"), "not a checkpoint");
  Trainer t(test::tiny_config(), data);
  CHECK_THROWS_WITH_AS(t.load(dir.str("ckpt.pt")), doctest::Contains("is damaged: not a sweep checkpoint"), Error);
}

namespace {

// A run stopped at step 5 (checkpoints at steps 3 and 5), its latest checkpoint then damaged by
// `damage`, resumed to the end: the run's result and the note its resume gave.
std::pair<RunResult, std::string> resume_after(const std::function<void(const test::TempDir&)>& damage,
                                               test::TempDir& dir) {
  auto data = test::synthetic_data();
  const RunConfig c = resumable_config();
  {
    Trainer first(c, data);
    EventSink ev(dir.str("events.jsonl"), "", false, false);
    REQUIRE(first.run({dir.str(), false, &ev, /*max_steps=*/5}).status == RunState::preempted);
  }
  damage(dir);
  Trainer second(c, data);
  EventSink ev(dir.str("events.jsonl"), "", false, false);
  const RunResult r = second.run({dir.str(), true, &ev});
  std::string note;
  for (const auto& line : split(read_file(dir.str("events.jsonl")), '\n')) {
    if (!line.empty() && nlohmann::json::parse(line)["event"] == "start") {
      note = nlohmann::json::parse(line).value("checkpoint_problem", "");
    }
  }
  return {r, note};
}

void flip_byte(const std::string& path, size_t at) {
  std::string bytes = read_file(path);
  bytes[at] = static_cast<char>(bytes[at] ^ 0x20);
  write_file_atomic(path, bytes);
}

double straight_test_loss() {
  test::TempDir straight;
  Trainer a(resumable_config(), test::synthetic_data());
  EventSink ev(straight.str("events.jsonl"), "", false, false);
  return a.run({straight.str(), false, &ev}).test_loss;
}

}  // namespace

TEST_CASE("checkpoints carry a checksum, and the one they replace is kept until they are whole") {
  test::TempDir dir;
  auto data = test::synthetic_data();
  Trainer t(resumable_config(), data);
  EventSink ev(dir.str("events.jsonl"), "", false, false);
  t.run({dir.str(), false, &ev, /*max_steps=*/5});
  const std::string latest = dir.str("checkpoint/ckpt.pt"), previous = dir.str("checkpoint/ckpt.prev.pt");
  CHECK(read_file(latest).rfind("sweep-checkpoint 1 sha256=", 0) == 0);
  CHECK_FALSE(checkpoint_problem(latest));
  CHECK_FALSE(checkpoint_problem(previous));
  flip_byte(latest, read_file(latest).size() / 2);  // one bit, in the middle of the weights
  CHECK(checkpoint_problem(latest).value_or("").find("its bytes changed or were cut") == 0);
  Trainer other(resumable_config(), data);
  CHECK_THROWS_WITH_AS(other.load(latest), doctest::Contains("is damaged: its bytes changed"), Error);
  CHECK(other.step() == 0);
}

TEST_CASE("a damaged latest checkpoint falls back to the previous one, says so, and ends as the straight run") {
  test::TempDir dir;
  const auto [r, note] = resume_after(
      [](const test::TempDir& d) { flip_byte(d.str("checkpoint/ckpt.pt"), 5000); }, dir);
  REQUIRE(r.status == RunState::done);
  CHECK(note.find("its bytes changed or were cut") != std::string::npos);
  CHECK(note.find("resumed from " + dir.str("checkpoint/ckpt.prev.pt") + " at step 3") != std::string::npos);
  CHECK(fs::exists(dir.str("checkpoint/ckpt.pt.damaged")));
  CHECK(r.test_loss == straight_test_loss());
}

TEST_CASE("a truncated checkpoint, a missing one (a save cut between its renames) and two bad ones") {
  SUBCASE("truncated: the previous one") {
    test::TempDir dir;
    const auto [r, note] = resume_after(
        [](const test::TempDir& d) {
          const std::string p = d.str("checkpoint/ckpt.pt");
          write_file_atomic(p, read_file(p).substr(0, 3000));
        },
        dir);
    CHECK(note.find("at step 3") != std::string::npos);
    CHECK(r.test_loss == straight_test_loss());
  }
  SUBCASE("missing beside a previous one: the previous one") {
    test::TempDir dir;
    const auto [r, note] =
        resume_after([](const test::TempDir& d) { fs::remove(d.str("checkpoint/ckpt.pt")); }, dir);
    CHECK(note.find("ckpt.pt: missing") != std::string::npos);
    CHECK(r.test_loss == straight_test_loss());
  }
  SUBCASE("both damaged: from step 0, never from garbage") {
    test::TempDir dir;
    const auto [r, note] = resume_after(
        [](const test::TempDir& d) {
          flip_byte(d.str("checkpoint/ckpt.pt"), 4000);
          write_file_atomic(d.str("checkpoint/ckpt.prev.pt"), "");
        },
        dir);
    CHECK(note.find("no whole checkpoint: the run starts over from step 0") != std::string::npos);
    CHECK(r.test_loss == straight_test_loss());
  }
}

TEST_CASE("a checkpoint from before checksums (a bare LibTorch archive) still resumes") {
  test::TempDir dir;
  auto data = test::synthetic_data();
  Trainer a(resumable_config(), data);
  a.train_step();
  a.save(dir.str("ckpt.pt"));
  const std::string bytes = read_file(dir.str("ckpt.pt"));
  write_file_atomic(dir.str("ckpt.pt"), bytes.substr(bytes.find('\n') + 1));  // the header gone: as written before
  CHECK_FALSE(checkpoint_problem(dir.str("ckpt.pt")));
  Trainer b(resumable_config(), data);
  b.load(dir.str("ckpt.pt"));
  CHECK(b.step() == 1);
  CHECK(torch::equal(test::flat_params(b.model()), test::flat_params(a.model())));
}

TEST_CASE("a checkpoint whose dropout stream is another device's resumes the rest exactly, the stream from the seeds") {
  test::TempDir dir;
  auto data = test::synthetic_data();
  const RunConfig c = resumable_config();
  Trainer a(c, data);
  a.train_step();
  a.train_step();
  // As a GPU run writes it: a CUDA generator's state (seed and offset, 16 bytes), tagged cuda.
  const std::string path = dir.str("ckpt.pt");
  save_checkpoint(path, a.model(), a.optimizer(), {a.step(), c.tokens_per_step(), c.identity_json().dump()},
                  torch::Device(torch::kCUDA, 0), {torch::zeros({16}, torch::kUInt8)});
  auto resumed_curve = [&](std::string& note) {
    Trainer t(c, data);
    note = t.load(path);
    CHECK(t.step() == 2);
    CHECK(torch::equal(test::flat_params(t.model()), test::flat_params(a.model())));
    std::vector<double> losses;
    for (int i = 0; i < 3; ++i) {
      losses.push_back(t.train_step().loss);
    }
    return losses;
  };
  std::string note, again;
  const auto first = resumed_curve(note);
  CHECK(note.find("the dropout stream was written on cuda, this run is on cpu") != std::string::npos);
  CHECK(resumed_curve(again) == first);  // the new stream is a function of (data_seed, rank, step)
  CHECK(again == note);
  // a checkpoint of this device type restores its stream: no note
  a.save(path);
  Trainer same(c, data);
  CHECK(same.load(path).empty());
}
