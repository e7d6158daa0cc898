// Expert parallelism (train/sharded/experts.h) over a real c10d process group (Gloo on loopback, ranks
// as threads): the routed experts partitioned over 2 ranks train as plain data parallel at 2
// ranks — the same per-step loss and gradient norm within 1e-6, the same expert loads, aux loss
// and balancing biases, under both balancings and with activation checkpointing; a run resumes
// bitwise from its checkpoint (a shard per rank), and plain data parallel goes on from it too;
// each rank holds only its experts.
#include "parallel_helpers.h"

using namespace sweep;

namespace {

void check_experts_equal_data_parallel(RunConfig c, int steps = 6, int64_t zero = 0) {
  CAPTURE(zero);
  auto data = test::synthetic_data();
  c.train.grad_clip = 1.0;  // the norm counts each expert once, over the ranks
  RunConfig ep = c;
  ep.resources.ranks = 2;
  ep.parallel.expert = 2;
  ep.parallel.zero = zero;
  test::Group plain = test::start(c, data), split = test::start(ep, data);
  for (int step = 0; step < steps; ++step) {
    CAPTURE(step);
    const std::vector<StepStats> ref = test::step_all(plain.ranks), s = test::step_all(split.ranks);
    CHECK(test::relative(s[0].loss, ref[0].loss) <= 1e-6);
    CHECK(test::relative(s[0].grad_norm, ref[0].grad_norm) <= 1e-6);
    CHECK(s[1].loss == s[0].loss);
    CHECK(s[1].grad_norm == s[0].grad_norm);
    CHECK(s[0].moe.load_max == ref[0].moe.load_max);  // routing saw the same tokens
    if (!std::isnan(ref[0].moe.aux_loss)) {
      CHECK(test::relative(s[0].moe.aux_loss, ref[0].moe.aux_loss) <= 1e-6);
    }
  }
  // Between steps a rank holds half the routed experts' weights.
  int64_t held = 0, whole = 0;
  for (const auto& p : split.ranks[0]->model()->parameters()) {
    held += p.numel();
  }
  for (const auto& p : plain.ranks[0]->model()->parameters()) {
    whole += p.numel();
  }
  CHECK(held < whole);
  const torch::Tensor pa = test::weights(plain), pb = test::weights(split);
  CHECK((pa - pb).abs().max().item<double>() < 1e-6);
  CHECK(torch::equal(test::weights(split, 1), pb));
  for (size_t l = 0; l < split.ranks[0]->model()->moe_layers().size(); ++l) {
    const auto& bias = split.ranks[0]->model()->moe_layers()[l]->expert_bias;
    if (bias.defined()) {
      CHECK(torch::allclose(bias, plain.ranks[0]->model()->moe_layers()[l]->expert_bias, 0, 1e-6));
    }
  }
}

}  // namespace

TEST_CASE("expert parallel 2 trains as expert parallel 1 (plain data parallel): aux-loss balancing") {
  check_experts_equal_data_parallel(test::tiny_deepseek_config(Balance::aux_loss));
}

TEST_CASE("expert parallel 2 trains as expert parallel 1: bias balancing, and with activation checkpointing") {
  check_experts_equal_data_parallel(test::tiny_deepseek_config(Balance::bias));
  RunConfig c = test::tiny_deepseek_config(Balance::aux_loss);
  c.train.activation_checkpointing = true;  // the rerun exchanges the tokens again, in backward
  check_experts_equal_data_parallel(c, 3);
}

TEST_CASE("expert parallel with ZeRO 1, 2 and 3 on the dense weights (DeepSeek-V2's layout is ZeRO-1 with it)") {
  for (int64_t zero = 1; zero <= 3; ++zero) {
    check_experts_equal_data_parallel(test::tiny_deepseek_config(zero == 2 ? Balance::bias : Balance::aux_loss), 4, zero);
  }
}

TEST_CASE("expert parallel: a rank whose experts get no token still takes part in both exchanges") {
  // Balancing biases that send every token to experts 0 and 1 (rank 0's): rank 1 runs nothing.
  auto data = test::synthetic_data();
  RunConfig c = test::tiny_deepseek_config(Balance::bias);
  c.model.bias_update_speed = 0;  // the biases stay where they are put
  RunConfig ep = c;
  ep.resources.ranks = 2;
  ep.parallel.expert = 2;
  test::Group plain = test::start(c, data), split = test::start(ep, data);
  for (test::Group* g : {&plain, &split}) {
    for (auto& rank : g->ranks) {
      for (const auto& layer : rank->model()->moe_layers()) {
        torch::NoGradGuard no_grad;
        layer->expert_bias.copy_(torch::tensor({10.0f, 10.0f, -10.0f, -10.0f}));
      }
    }
  }
  for (int step = 0; step < 2; ++step) {
    const std::vector<StepStats> ref = test::step_all(plain.ranks), s = test::step_all(split.ranks);
    CHECK(test::relative(s[0].loss, ref[0].loss) <= 1e-6);
    CHECK(s[0].moe.load_max == ref[0].moe.load_max);
    CHECK(s[0].moe.load_max[0] == doctest::Approx(2.0));  // 2 of 4 experts take every token
  }
}

TEST_CASE("expert parallel: bf16 trains, close to plain data parallel") {
  auto data = test::synthetic_data();
  RunConfig c = test::tiny_deepseek_config(Balance::aux_loss);
  c.train.precision = Precision::bf16;
  RunConfig ep = c;
  ep.resources.ranks = 2;
  ep.parallel.expert = 2;
  test::Group plain = test::start(c, data), split = test::start(ep, data);
  for (int step = 0; step < 3; ++step) {
    const double a = test::step_all(plain.ranks)[0].loss, b = test::step_all(split.ranks)[0].loss;
    CHECK(test::relative(b, a) <= 1e-2);
  }
}

TEST_CASE("expert parallel: resumes bitwise, and plain data parallel goes on from its checkpoint (with ZeRO-3 too)") {
  for (int64_t zero : {0, 3}) {
    CAPTURE(zero);
    test::TempDir dir;
    auto data = test::synthetic_data();
    RunConfig c = test::tiny_deepseek_config(Balance::bias);
    c.resources.ranks = 2;
    c.parallel.expert = 2;
    c.parallel.zero = zero;
    const std::string path = dir.str("ep" + std::to_string(zero) + ".pt");
    test::Group first = test::start(c, data);
    for (int step = 0; step < 3; ++step) {
      test::step_all(first.ranks);
    }
    test::on_all(first.ranks, [&](Trainer& t) { t.save(path); });
    for (int step = 0; step < 3; ++step) {
      test::step_all(first.ranks);
    }
    test::Group resumed = test::start(c, data);
    test::on_all(resumed.ranks, [&](Trainer& t) { t.load(path); });
    for (int step = 0; step < 3; ++step) {
      test::step_all(resumed.ranks);
    }
    CHECK(torch::equal(test::weights(resumed), test::weights(first)));

    RunConfig plain_cfg = c;
    plain_cfg.parallel.expert = 1;
    plain_cfg.parallel.zero = 0;
    test::Group plain = test::start(plain_cfg, data);
    test::on_all(plain.ranks, [&](Trainer& t) { t.load(path); });
    for (int step = 0; step < 3; ++step) {
      test::step_all(plain.ranks);
    }
    CHECK((test::weights(plain) - test::weights(first)).abs().max().item<double>() < 1e-6);
  }
}
