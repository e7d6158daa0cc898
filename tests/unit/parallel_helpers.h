// Data parallel in one process, for the unit tests (CPU) and the GPU tests: ranks as threads of
// this process meeting over a real c10d process group on loopback.
#pragma once

#include <thread>

#include "helpers.h"
#include "parallel/parallel.h"
#include "util/process.h"

namespace sweep::test {

// `world` ranks of one process group, each connected from a thread of this process. Tensors on
// `device`; Gloo unless said.
inline std::vector<std::unique_ptr<Communicator>> connect_local(int world,
                                                                std::chrono::milliseconds timeout = std::chrono::seconds(30),
                                                                const torch::Device& device = torch::kCPU,
                                                                Backend backend = Backend::gloo) {
  const int port = free_port();
  std::vector<std::unique_ptr<Communicator>> comms(static_cast<size_t>(world));
  std::vector<std::thread> threads;
  for (int r = 0; r < world; ++r) {
    threads.emplace_back([&, r] {
      DistEnv env;
      env.rank = r;
      env.world = world;
      env.port = port;
      comms[static_cast<size_t>(r)] = connect(env, device, backend, timeout);
    });
  }
  for (auto& t : threads) {
    t.join();
  }
  return comms;
}

// |a − b| ÷ |b|: how far a sharded layout's figure is from plain data parallel's.
inline double relative(double a, double b) { return std::abs(a - b) / std::max(std::abs(b), 1e-30); }

// One optimizer step on every rank at once (collectives need them all), rank 0's stats back.
inline std::vector<StepStats> step_all(std::vector<std::unique_ptr<Trainer>>& ranks) {
  std::vector<StepStats> stats(ranks.size());
  std::vector<std::exception_ptr> errors(ranks.size());
  std::vector<std::thread> threads;
  for (size_t r = 0; r < ranks.size(); ++r) {
    threads.emplace_back([&, r] {
      try {
        stats[r] = ranks[r]->train_step();
      } catch (...) {
        errors[r] = std::current_exception();
      }
    });
  }
  for (auto& t : threads) {
    t.join();
  }
  for (auto& e : errors) {
    if (e) {
      std::rethrow_exception(e);
    }
  }
  return stats;
}

// World `world` × accumulation `accum` against one process with accumulation world × accum, on
// c.resources.device (Gloo, whatever the device: ranks may share one GPU).
inline void check_data_parallel_equals_accumulation(int world, int accum, RunConfig c = test::tiny_config()) {
  auto data = test::synthetic_data();
  c.train.grad_clip = 1.0;  // the clip sees the averaged gradient: it must match too
  c.train.grad_accum = accum;
  RunConfig single = c;
  single.train.grad_accum = accum * world;
  Trainer reference(single, data);
  auto comms = connect_local(world, std::chrono::seconds(30), torch::Device(c.resources.device));
  std::vector<std::unique_ptr<Trainer>> ranks;
  for (auto& comm : comms) {
    ranks.push_back(std::make_unique<Trainer>(c, data, comm.get()));
  }
  REQUIRE(ranks[0]->config().tokens_per_step() == reference.config().tokens_per_step());
  for (int step = 0; step < 6; ++step) {
    const std::vector<StepStats> s = step_all(ranks);
    const StepStats ref = reference.train_step();
    CAPTURE(step);
    CHECK(s[0].loss == doctest::Approx(ref.loss).epsilon(1e-5));
    CHECK(s[0].grad_norm == doctest::Approx(ref.grad_norm).epsilon(1e-5));
    for (const auto& other : s) {
      CHECK(other.loss == s[0].loss);  // every rank logs the same averaged loss
      CHECK(other.grad_norm == s[0].grad_norm);
      CHECK(other.moe.load_max == ref.moe.load_max);  // the load over the global batch, on every rank
    }
    if (!std::isnan(ref.moe.aux_loss)) {
      CHECK(s[0].moe.aux_loss == doctest::Approx(ref.moe.aux_loss).epsilon(1e-5));
    }
  }
  // Final weights: the same criterion as the accumulation test (test_trainer.cpp).
  const auto pa = test::flat_params(reference.model()), pb = test::flat_params(ranks[0]->model());
  CHECK((pa - pb).norm().item<double>() / pa.norm().item<double>() < 1e-5);
  CHECK((pa - pb).abs().max().item<double>() < 1e-6);
  for (auto& r : ranks) {
    CHECK(torch::equal(test::flat_params(r->model()), pb));  // the ranks never drift apart
    for (size_t l = 0; l < r->model()->moe_layers().size(); ++l) {  // nor do their balancing biases
      const auto& bias = r->model()->moe_layers()[l]->expert_bias;
      if (bias.defined()) {
        CHECK(torch::equal(bias, reference.model()->moe_layers()[l]->expert_bias));
      }
    }
  }
}

// `f(rank)` on every rank at once (collectives need them all); the first error rethrown.
template <typename F>
void on_all(std::vector<std::unique_ptr<Trainer>>& ranks, F f) {
  std::vector<std::exception_ptr> errors(ranks.size());
  std::vector<std::thread> threads;
  for (size_t r = 0; r < ranks.size(); ++r) {
    threads.emplace_back([&, r] {
      try {
        f(*ranks[r]);
      } catch (...) {
        errors[r] = std::current_exception();
      }
    });
  }
  for (auto& t : threads) {
    t.join();
  }
  for (auto& e : errors) {
    if (e) {
      std::rethrow_exception(e);
    }
  }
}

struct Group {
  std::vector<std::unique_ptr<Communicator>> comms;
  std::vector<std::unique_ptr<Trainer>> ranks;
};

inline Group start(const RunConfig& c, std::shared_ptr<TrainData> data, int world = 2) {
  Group g;
  g.comms = test::connect_local(world);
  g.ranks.resize(g.comms.size());
  // Stage 3 cuts the weights into pieces as it starts: every rank's constructor at once.
  std::vector<std::thread> threads;
  for (size_t r = 0; r < g.comms.size(); ++r) {
    threads.emplace_back([&, r] { g.ranks[r] = std::make_unique<Trainer>(c, data, g.comms[r].get()); });
  }
  for (auto& t : threads) {
    t.join();
  }
  return g;
}

// Rank r's whole weights (ZeRO-3 and expert parallelism gather them on every rank for the look).
inline torch::Tensor weights(Group& g, size_t r = 0) {
  on_all(g.ranks, [](Trainer& t) { t.gather_weights(); });
  torch::Tensor w = test::flat_params(g.ranks[r]->model()).clone();
  on_all(g.ranks, [](Trainer& t) { t.release_weights(); });
  return w;
}

}  // namespace sweep::test
