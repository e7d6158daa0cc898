// Resume must be exact: a run stopped at step k and resumed equals the uninterrupted run,
// bitwise on CPU fp32 — dropout (the RNG stream), AdamW moments and the loader position included.
#include <doctest/doctest.h>

#include "helpers.h"
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

RunConfig resumable_config() {
  RunConfig c = test::tiny_config();
  c.model.dropout = 0.1;  // the RNG stream must be restored too
  c.train.schedule = "cosine";
  c.train.warmup = 2;
  c.train.grad_clip = 1.0;
  c.train.tokens = c.tokens_per_step() * 12;
  c.eval.every = 3;
  return c;
}

}  // namespace

TEST_CASE("resume: k steps, stop, resume for k more == 2k steps straight (bitwise)") {
  auto data = test::synthetic_data();
  const RunConfig c = resumable_config();
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
  CHECK_THROWS_WITH_AS(t.load(dir.str("ckpt.pt")), doctest::Contains("cannot read checkpoint"), Error);
}
