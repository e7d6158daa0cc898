// A branched run (config/branch.h) starts from its parent's checkpoint at the branch step with its
// own config: a change that acts only after that step trains bitwise as the same change from step
// 0; its optimizer takes its own options, not the checkpoint's; a start that is missing, at another
// step or of a run it may not branch from is refused.
#include <doctest/doctest.h>

#include "config/branch.h"
#include "helpers.h"
#include "train/checkpoint.h"
#include "util/error.h"
#include "util/fs.h"

using namespace sweep;

namespace {

RunConfig parent_config() {
  RunConfig c = test::tiny_config();
  c.model.dropout = 0.1;  // the dropout stream goes on from the parent's
  c.train.grad_clip = 1.0;
  c.train.tokens = c.tokens_per_step() * 12;
  c.eval.every = 3;
  return c;
}

// The parent's late change: constant until step 9 of 12, then a decay (WSD, the last 25%).
RunConfig cooldown(RunConfig c) {
  c.train.schedule = Schedule::wsd;
  c.train.decay = 0.25;
  c.train.min_lr = c.train.lr / 10;
  return c;
}

RunResult train(const RunConfig& c, const test::TempDir& dir, bool resume, int64_t max_steps = -1) {
  Trainer t(c, test::synthetic_data());
  EventSink ev(dir.str("events.jsonl"), "", false, false);
  return t.run({dir.str(), resume, &ev, max_steps});
}

}  // namespace

TEST_CASE("a branch from its parent's checkpoint with a late change trains as that change from step 0, bitwise") {
  auto data = test::synthetic_data();
  test::TempDir parent, scratch, branch;
  const RunConfig p = parent_config();
  REQUIRE(train(p, parent, false, /*max_steps=*/9).step == 9);  // the parent pauses at the branch step
  fs::create_directories(branch.path / "checkpoint");
  fs::copy_file(parent.str("checkpoint/ckpt.pt"), branch_checkpoint(branch.str()));

  RunConfig late = cooldown(p);
  const RunResult from_scratch = train(late, scratch, false);
  late.branch = {"parent-id", 9};
  Trainer b(late, data);
  RunResult branched;
  {
    EventSink ev(branch.str("events.jsonl"), "", false, false);
    branched = b.run({branch.str(), true, &ev});
  }
  REQUIRE(branched.status == RunState::done);
  CHECK(branched.test_loss == from_scratch.test_loss);
  Trainer again(cooldown(p), data);
  again.load(scratch.str("checkpoint/ckpt.pt"));
  CHECK(torch::equal(test::flat_params(b.model()), test::flat_params(again.model())));
  CHECK(read_file(branch.str("events.jsonl")).find("branched from run parent-id at step 9") != std::string::npos);
  // resumed after its own checkpoint, it is a plain resume
  CHECK(train(late, branch, true).test_loss == from_scratch.test_loss);
}

TEST_CASE("a branch's optimizer takes its own options, not those its parent's checkpoint holds") {
  auto data = test::synthetic_data();
  test::TempDir parent, branch;
  const RunConfig p = parent_config();
  train(p, parent, false, 3);
  RunConfig c = p;
  c.train.weight_decay = 0.02;
  c.train.beta2 = 0.99;
  c.train.eps = 1e-6;
  c.branch = {"parent-id", 3};
  Trainer b(c, data);
  b.start_branch(parent.str("checkpoint/ckpt.pt"));
  CHECK(b.step() == 3);
  const auto& groups = b.optimizer().param_groups();
  REQUIRE(groups.size() == 2);
  const auto& decay = static_cast<const torch::optim::AdamWOptions&>(groups[0].options());
  const auto& no_decay = static_cast<const torch::optim::AdamWOptions&>(groups[1].options());
  CHECK(decay.weight_decay() == 0.02);
  CHECK(no_decay.weight_decay() == 0.0);
  CHECK(std::get<1>(decay.betas()) == 0.99);
  CHECK(decay.eps() == 1e-6);
}

TEST_CASE("a branch's start that is missing, at another step or another run's is refused, naming why") {
  auto data = test::synthetic_data();
  test::TempDir parent, other, empty;
  const RunConfig p = parent_config();
  train(p, parent, false, 3);
  RunConfig c = cooldown(p);
  c.branch = {"parent-id", 3};
  const std::string missing = "and its start, " + branch_checkpoint(empty.str()) + ", is not there";
  CHECK_THROWS_WITH_AS(train(c, empty, true), doctest::Contains(missing.c_str()), Error);
  RunConfig at6 = c;
  at6.branch.step = 6;
  Trainer wrong_step(at6, data);
  CHECK_THROWS_WITH_AS(wrong_step.start_branch(parent.str("checkpoint/ckpt.pt")),
                       doctest::Contains("holds step 3, and this run branches at 6"), Error);
  RunConfig seeds = c;
  seeds.seeds.init = 7;  // another seed's baseline: not its parent
  Trainer wrong_run(seeds, data);
  CHECK_THROWS_WITH_AS(wrong_run.start_branch(parent.str("checkpoint/ckpt.pt")),
                       doctest::Contains("is not the checkpoint of a run this one may branch from (run parent-id)"),
                       Error);
  // a plain resume still refuses another config: only a branch's start is read across its keys
  RunConfig plain = cooldown(p);
  Trainer resume(plain, data);
  CHECK_THROWS_WITH_AS(resume.load(parent.str("checkpoint/ckpt.pt")), doctest::Contains("another config"), Error);
}
