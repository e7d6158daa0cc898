// Data parallel over a real c10d process group (TCPStore + ProcessGroupGloo on loopback), its
// ranks as threads of this process: world 2 × accum 1 trains exactly as world 1 × accum 2, a
// non-finite loss on one rank ends the step as non-finite on every rank, a rank that leaves makes
// the other fail instead of hanging, and the environment of torchrun and Slurm is read right.
#include <thread>

#include "parallel/parallel.h"
#include "helpers.h"
#include "train/checkpoint.h"

using namespace sweep;

namespace {

std::vector<std::unique_ptr<Communicator>> connect_local(int world, std::chrono::milliseconds timeout = std::chrono::seconds(30)) {
  const int port = free_port();
  std::vector<std::unique_ptr<Communicator>> comms(static_cast<size_t>(world));
  std::vector<std::thread> threads;
  for (int r = 0; r < world; ++r) {
    threads.emplace_back([&, r] {
      DistEnv env;
      env.rank = r;
      env.world = world;
      env.port = port;
      comms[static_cast<size_t>(r)] = connect(env, torch::kCPU, timeout);
    });
  }
  for (auto& t : threads) {
    t.join();
  }
  return comms;
}

// One optimizer step on every rank at once (collectives need them all), rank 0's stats back.
std::vector<StepStats> step_all(std::vector<std::unique_ptr<Trainer>>& ranks) {
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

void check_data_parallel_equals_accumulation(int world, int accum, RunConfig c = test::tiny_config()) {
  auto data = test::synthetic_data();
  c.train.grad_clip = 1.0;  // the clip sees the averaged gradient: it must match too
  c.train.grad_accum = accum;
  RunConfig single = c;
  single.train.grad_accum = accum * world;
  Trainer reference(single, data);
  auto comms = connect_local(world);
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

}  // namespace

TEST_CASE("data parallel: world 2 × accum 1 equals world 1 × accum 2") { check_data_parallel_equals_accumulation(2, 1); }

TEST_CASE("data parallel: world 2 × accum 2 equals world 1 × accum 4") { check_data_parallel_equals_accumulation(2, 2); }

TEST_CASE("data parallel, deepseek with MoE: world 2 equals accumulation 2 — loads, aux loss and balancing biases too") {
  check_data_parallel_equals_accumulation(2, 1, test::tiny_deepseek_config("aux_loss"));
  check_data_parallel_equals_accumulation(2, 1, test::tiny_deepseek_config("bias"));
}

TEST_CASE("data parallel: the ranks slice one global batch order") {
  auto data = test::synthetic_data();
  RunConfig c = test::tiny_config();
  RunConfig accum2 = c;
  accum2.train.grad_accum = 2;
  Trainer single(accum2, data);
  auto comms = connect_local(2);
  Trainer r0(c, data, comms[0].get()), r1(c, data, comms[1].get());
  // Step 3 of world 2 × accum 1 reads micro-batch 0 on rank 0 and micro-batch 1 on rank 1.
  CHECK(torch::equal(r0.batch(3, 0).first, single.batch(3, 0).first));
  CHECK(torch::equal(r1.batch(3, 0).first, single.batch(3, 1).first));
}

TEST_CASE("data parallel: a non-finite loss on one rank is non-finite on every rank") {
  auto data = test::synthetic_data();
  auto comms = connect_local(2);
  std::vector<std::unique_ptr<Trainer>> ranks;
  for (auto& comm : comms) {
    ranks.push_back(std::make_unique<Trainer>(test::tiny_config(), data, comm.get()));
  }
  {
    torch::NoGradGuard no_grad;
    ranks[1]->model()->parameters()[0].fill_(std::numeric_limits<float>::quiet_NaN());
  }
  const auto before = test::flat_params(ranks[0]->model());
  const std::vector<StepStats> s = step_all(ranks);
  CHECK_FALSE(s[0].finite());
  CHECK_FALSE(s[1].finite());
  CHECK(torch::equal(test::flat_params(ranks[0]->model()), before));  // no step was taken
}

TEST_CASE("data parallel: a rank that leaves makes the other fail, not hang") {
  auto data = test::synthetic_data();
  auto comms = connect_local(2, std::chrono::seconds(10));
  Trainer r0(test::tiny_config(), data, comms[0].get());
  comms[1].reset();  // rank 1 is gone: its sockets close
  const auto start = std::chrono::steady_clock::now();
  CHECK_THROWS(r0.train_step());
  CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(60));
}

TEST_CASE("data parallel: checkpoints hold every rank's RNG and refuse another world size") {
  test::TempDir dir;
  auto data = test::synthetic_data();
  RunConfig c = test::tiny_config();
  c.model.dropout = 0.1;
  auto comms = connect_local(2);
  std::vector<std::unique_ptr<Trainer>> ranks;
  for (auto& comm : comms) {
    ranks.push_back(std::make_unique<Trainer>(c, data, comm.get()));
  }
  step_all(ranks);
  const std::string path = dir.str("ckpt.pt");
  std::vector<std::thread> threads;
  for (auto& r : ranks) {
    threads.emplace_back([&, t = r.get()] { t->save(path); });  // all take part, rank 0 writes
  }
  for (auto& t : threads) {
    t.join();
  }
  Trainer lone(c, data);  // world 1: another tokens-per-step
  CHECK_THROWS_WITH(lone.load(path), doctest::Contains("resume with the ranks that wrote it"));
}

TEST_CASE("the environment: torchrun's variables, Slurm's, and their errors") {
  auto from = [](std::map<std::string, std::string> vars) {
    return dist_env([vars](const std::string& k) -> std::optional<std::string> {
      auto it = vars.find(k);
      return it == vars.end() ? std::nullopt : std::optional<std::string>(it->second);
    });
  };
  const DistEnv none = from({});
  CHECK(none.world == 1);
  CHECK(none.rank == 0);
  const DistEnv torchrun =
      from({{"RANK", "1"}, {"WORLD_SIZE", "4"}, {"LOCAL_RANK", "1"}, {"MASTER_ADDR", "10.0.0.5"}, {"MASTER_PORT", "29400"}});
  CHECK(torchrun.rank == 1);
  CHECK(torchrun.world == 4);
  CHECK(torchrun.master_addr == "10.0.0.5");
  CHECK(torchrun.port == 29400);
  CHECK(torchrun.local_world == 1);  // not said: threads: auto gives this rank every core
  CHECK(from({{"RANK", "0"}, {"WORLD_SIZE", "2"}, {"LOCAL_WORLD_SIZE", "2"}}).local_world == 2);
  const DistEnv slurm = from({{"SLURM_PROCID", "3"},
                              {"SLURM_NTASKS", "4"},
                              {"SLURM_LOCALID", "1"},
                              {"SLURM_JOB_ID", "123456"},
                              {"SLURM_STEP_NODELIST", "gpu[07-08]"}});
  CHECK(slurm.rank == 3);
  CHECK(slurm.local_rank == 1);
  CHECK(slurm.master_addr == "gpu07");
  CHECK(slurm.port == 20000 + 123456 % 20000);
  CHECK(from({{"SLURM_NTASKS", "1"}, {"SLURM_PROCID", "0"}}).world == 1);  // a one-task job: no group
  CHECK(first_host("node1,node2") == "node1");
  CHECK(first_host("a[003-010,12],b1") == "a003");
  CHECK(first_host("c[5,7]") == "c5");
  CHECK_THROWS_WITH(from({{"RANK", "x"}, {"WORLD_SIZE", "2"}}), doctest::Contains("RANK=x"));
  CHECK_THROWS_WITH(from({{"RANK", "2"}, {"WORLD_SIZE", "2"}}), doctest::Contains("not below the world size"));
  CHECK_THROWS_WITH(from({{"RANK", "0"}}), doctest::Contains("WORLD_SIZE"));
}
