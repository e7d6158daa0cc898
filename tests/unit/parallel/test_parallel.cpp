// Data parallel over a real c10d process group (TCPStore + ProcessGroupGloo on loopback), its
// ranks as threads of this process: world 2 × accum 1 trains exactly as world 1 × accum 2, a
// non-finite loss on one rank ends the step as non-finite on every rank, a rank that leaves makes
// the other fail instead of hanging, and the environment of torchrun and Slurm is read right.
#include <thread>

#include "parallel_helpers.h"
#include "train/device.h"
#include "train/checkpoint.h"

using namespace sweep;

TEST_CASE("data parallel: world 2 × accum 1 equals world 1 × accum 2") { test::check_data_parallel_equals_accumulation(2, 1); }

TEST_CASE("data parallel: world 2 × accum 2 equals world 1 × accum 4") { test::check_data_parallel_equals_accumulation(2, 2); }

TEST_CASE("data parallel in bf16: world 2 × accum 1 equals world 1 × accum 2") {
  RunConfig c = test::tiny_config();
  c.train.precision = Precision::bf16;
  test::check_data_parallel_equals_accumulation(2, 1, c);
}

TEST_CASE("data parallel, deepseek with MoE: world 2 equals accumulation 2 — loads, aux loss and balancing biases too") {
  test::check_data_parallel_equals_accumulation(2, 1, test::tiny_deepseek_config(Balance::aux_loss));
  test::check_data_parallel_equals_accumulation(2, 1, test::tiny_deepseek_config(Balance::bias));
}

TEST_CASE("data parallel, the speedrun's switches (rope, QK-norm, ReLU², zero-init, soft-cap): world 2 equals accumulation 2") {
  test::check_data_parallel_equals_accumulation(2, 1, test::tiny_speedrun_config());
}

TEST_CASE("data parallel with Muon: world 2 equals accumulation 2 (Muon orthogonalises the averaged gradient)") {
  test::check_data_parallel_equals_accumulation(2, 1, test::tiny_muon_config());
}

TEST_CASE("data parallel: the ranks slice one global batch order") {
  auto data = test::synthetic_data();
  RunConfig c = test::tiny_config();
  RunConfig accum2 = c;
  accum2.train.grad_accum = 2;
  Trainer single(accum2, data);
  auto comms = test::connect_local(2);
  Trainer r0(c, data, comms[0].get()), r1(c, data, comms[1].get());
  // Step 3 of world 2 × accum 1 reads micro-batch 0 on rank 0 and micro-batch 1 on rank 1.
  CHECK(torch::equal(r0.batch(3, 0).first, single.batch(3, 0).first));
  CHECK(torch::equal(r1.batch(3, 0).first, single.batch(3, 1).first));
}

TEST_CASE("data parallel: a non-finite loss on one rank is non-finite on every rank") {
  auto data = test::synthetic_data();
  auto comms = test::connect_local(2);
  std::vector<std::unique_ptr<Trainer>> ranks;
  for (auto& comm : comms) {
    ranks.push_back(std::make_unique<Trainer>(test::tiny_config(), data, comm.get()));
  }
  {
    torch::NoGradGuard no_grad;
    ranks[1]->model()->parameters()[0].fill_(std::numeric_limits<float>::quiet_NaN());
  }
  const auto before = test::flat_params(ranks[0]->model());
  const std::vector<StepStats> s = test::step_all(ranks);
  CHECK_FALSE(s[0].finite());
  CHECK_FALSE(s[1].finite());
  CHECK(torch::equal(test::flat_params(ranks[0]->model()), before));  // no step was taken
}

TEST_CASE("data parallel: a rank that leaves makes the other fail, not hang") {
  auto data = test::synthetic_data();
  auto comms = test::connect_local(2, std::chrono::seconds(10));
  Trainer r0(test::tiny_config(), data, comms[0].get());
  comms[1].reset();  // rank 1 is gone: its sockets close
  const auto start = std::chrono::steady_clock::now();
  CHECK_THROWS(r0.train_step());
  CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(60));
}

TEST_CASE("data parallel: checkpoints hold every rank's RNG, and resume at other ranks only with the same batch") {
  test::TempDir dir;
  auto data = test::synthetic_data();
  RunConfig c = test::tiny_config();
  c.model.dropout = 0.1;
  auto comms = test::connect_local(2);
  std::vector<std::unique_ptr<Trainer>> ranks;
  for (auto& comm : comms) {
    ranks.push_back(std::make_unique<Trainer>(c, data, comm.get()));
  }
  test::step_all(ranks);
  const std::string path = dir.str("ckpt.pt");
  std::vector<std::thread> threads;
  for (auto& r : ranks) {
    threads.emplace_back([&, t = r.get()] { t->save(path); });  // all take part, rank 0 writes
  }
  for (auto& t : threads) {
    t.join();
  }
  Trainer lone(c, data);  // world 1: another tokens-per-step
  CHECK_THROWS_WITH(lone.load(path), doctest::Contains("set train.grad_accum so that the product is the same"));
  RunConfig accumulating = c;
  accumulating.train.grad_accum = 2;  // one rank, the same batch of a step: the same run
  Trainer one(accumulating, data);
  CHECK(one.load(path).empty());  // rank 0's dropout stream goes on
  CHECK(one.step() == 1);
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

TEST_CASE("backends: a GPU for each rank (ranks share GPUs only through Gloo)") {
  DistEnv env;
  env.world = 4;
  env.local_world = 4;
  env.rank = env.local_rank = 3;
  CHECK(rank_device(env, 4, Backend::automatic) == torch::Device(torch::kCUDA, 3));
  CHECK(rank_device(env, 2, Backend::gloo) == torch::Device(torch::kCUDA, 1));  // 4 ranks take 2 GPUs in turn
  const std::string nccl = test::bad_input_message([&] { rank_device(env, 2, Backend::nccl); });
  CHECK(nccl.find("4 ranks on this machine but 2 visible GPUs") != std::string::npos);
  CHECK(nccl.find("resources.backend: gloo") != std::string::npos);
  // auto is NCCL on CUDA where this build has NCCL, Gloo (sharing allowed) where it has not
  const bool nccl_built = build_devices().nccl_built;
  CHECK(resolve_backend(Backend::automatic, torch::kCUDA) == (nccl_built ? Backend::nccl : Backend::gloo));
  CHECK(resolve_backend(Backend::automatic, torch::kCPU) == Backend::gloo);
  CHECK(resolve_backend(Backend::nccl, torch::kCPU) == Backend::nccl);
  CHECK(test::bad_input_message([&] { rank_device(env, 2, Backend::automatic); }) == (nccl_built ? nccl : ""));
  CHECK(test::bad_input_message([&] { rank_device(env, 0, Backend::gloo); }).find("sees no GPU") != std::string::npos);
  // NCCL on CPU tensors: refused before any rendezvous
  CHECK(test::bad_input_message([] {
          DistEnv one;
          one.port = free_port();
          connect(one, torch::kCPU, Backend::nccl, std::chrono::seconds(5));
        }).find("the NCCL backend needs CUDA tensors") != std::string::npos);
}
