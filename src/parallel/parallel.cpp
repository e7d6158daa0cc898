#include "parallel/parallel.h"

#include <unistd.h>

#include <cstdlib>
#include <type_traits>

#include "build_options.h"
// c10d declares its Gloo and NCCL groups only under these macros (set here, not on the command
// line, so that this file shares the precompiled torch header of the other targets).
#ifndef USE_C10D_GLOO
#define USE_C10D_GLOO
#endif
#if defined(SWEEP_WITH_NCCL) && !defined(USE_C10D_NCCL)
#define USE_C10D_NCCL
#endif
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>
#ifdef USE_C10D_NCCL
#include <torch/csrc/distributed/c10d/ProcessGroupNCCL.hpp>
#endif

#include "util/error.h"
#include "util/text.h"

namespace sweep {

namespace {

int64_t int_var(const GetEnv& getenv, const std::string& name, int64_t fallback, int64_t min) {
  const std::optional<std::string> v = getenv(name);
  if (!v) {
    return fallback;
  }
  try {
    size_t used = 0;
    const long long n = std::stoll(*v, &used);
    if (used == v->size() && n >= min) {
      return n;
    }
  } catch (const std::exception&) {
  }
  throw Error("environment variable " + name + "=" + *v + ": expected an integer ≥ " + std::to_string(min),
              Exit::bad_input);
}

// Gloo over the loopback device for a local run; GLOO_SOCKET_IFNAME or the host's name otherwise.
std::shared_ptr<::gloo::transport::Device> gloo_device(const DistEnv& env) {
  if (const char* ifname = std::getenv("GLOO_SOCKET_IFNAME")) {
    return c10d::ProcessGroupGloo::createDeviceForInterface(ifname);
  }
  if (env.master_addr == "127.0.0.1" || env.master_addr == "localhost") {
    return c10d::ProcessGroupGloo::createDeviceForHostname("127.0.0.1");
  }
  return c10d::ProcessGroupGloo::createDefaultDevice();
}

template <typename Group>
class GroupCommunicator : public Communicator {
 public:
  // on: where the group's collectives need their tensors (a GPU for NCCL); nullopt: anywhere.
  GroupCommunicator(c10::intrusive_ptr<c10d::Store> store, c10::intrusive_ptr<Group> group, int64_t rank,
                    int64_t world, std::optional<torch::Device> on, std::chrono::milliseconds timeout)
      : m_store(std::move(store)), m_group(std::move(group)), m_rank(rank), m_world(world), m_on(on),
        m_timeout(timeout) {}
  ~GroupCommunicator() override {
#ifdef USE_C10D_NCCL
    if constexpr (std::is_same_v<Group, c10d::ProcessGroupNCCL>) {
      m_group->shutdown();  // its communicators closed in order, not aborted by the destructor
    }
#endif
  }
  GroupCommunicator(const GroupCommunicator&) = delete;
  GroupCommunicator& operator=(const GroupCommunicator&) = delete;
  int64_t rank() const override { return m_rank; }
  int64_t world() const override { return m_world; }

  void all_reduce_sum(torch::Tensor& t) override {
    std::vector<at::Tensor> one{there(t)};  // c10d: one tensor per device, so one at a time
    finish(m_group->allreduce(one), "all-reduce");
    if (!one[0].is_same(t)) {
      t.copy_(one[0]);
    }
  }

  std::vector<torch::Tensor> all_gather(const torch::Tensor& t) override {
    std::vector<at::Tensor> in{there(t).contiguous()};
    std::vector<std::vector<at::Tensor>> out(1);
    for (int64_t r = 0; r < m_world; ++r) {
      out[0].push_back(torch::empty_like(in[0]));
    }
    finish(m_group->allgather(out, in), "all-gather");
    for (auto& gathered : out[0]) {
      gathered = gathered.to(t.device());
    }
    return out[0];
  }

  void reduce_scatter_sum(torch::Tensor& full, torch::Tensor& piece) override {
    TORCH_CHECK(full.is_contiguous() && full.numel() == piece.numel() * m_world, "reduce_scatter_sum: full must hold world pieces");
#ifdef USE_C10D_NCCL
    if constexpr (std::is_same_v<Group, c10d::ProcessGroupNCCL>) {
      torch::Tensor in = there(full), out = there(piece).contiguous();
      finish(m_group->_reduce_scatter_base(out, in), "reduce-scatter");
      if (!out.is_same(piece)) {
        piece.copy_(out);
      }
      return;
    }
#endif
    all_reduce_sum(full);
    piece.copy_(full.narrow(0, m_rank * piece.numel(), piece.numel()));
  }

  void all_gather_into(const torch::Tensor& piece, torch::Tensor& full) override {
    TORCH_CHECK(full.is_contiguous() && full.numel() == piece.numel() * m_world, "all_gather_into: full must hold world pieces");
#ifdef USE_C10D_NCCL
    if constexpr (std::is_same_v<Group, c10d::ProcessGroupNCCL>) {
      torch::Tensor in = there(piece).contiguous(), out = there(full);
      finish(m_group->_allgather_base(out, in), "all-gather");
      if (!out.is_same(full)) {
        full.copy_(out);
      }
      return;
    }
#endif
    // Gloo copies the gathered pieces into the outputs given: views of `full`.
    std::vector<at::Tensor> in{piece.contiguous()};
    std::vector<std::vector<at::Tensor>> out(1);
    for (int64_t r = 0; r < m_world; ++r) {
      out[0].push_back(full.narrow(0, r * piece.numel(), piece.numel()));
    }
    finish(m_group->allgather(out, in), "all-gather");
  }

  torch::Tensor all_to_all(const torch::Tensor& in, const std::vector<int64_t>& send,
                           const std::vector<int64_t>& recv) override {
    TORCH_CHECK(static_cast<int64_t>(send.size()) == m_world && static_cast<int64_t>(recv.size()) == m_world,
                "all_to_all: a row count per rank");
    int64_t rows = 0;
    for (int64_t n : recv) {
      rows += n;
    }
    std::vector<int64_t> out_shape = in.sizes().vec();
    out_shape[0] = rows;
    at::Tensor input = there(in).contiguous();
    // Gloo (LibTorch 1.13 and 2.6) moves no bf16: those rows travel as fp32, exactly
    const bool widen = std::is_same_v<Group, c10d::ProcessGroupGloo> && input.scalar_type() == at::kBFloat16;
    if (widen) {
      input = input.to(at::kFloat);
    }
    at::Tensor output = torch::empty(out_shape, input.options());
    std::vector<int64_t> in_rows = send, out_rows = recv;
    finish(m_group->alltoall_base(output, input, out_rows, in_rows), "all-to-all");
    return output.to(in.device(), in.scalar_type());
  }

 private:
  // A collective's end; one that fails (a rank died, or stalled past the timeout) is an Error
  // that says which rank saw it and what to do, not c10d's bare message.
  template <typename Work>
  void finish(const Work& work, const char* what) {
    try {
      work->wait();
    } catch (const std::exception& e) {
      const std::string why = e.what();
      throw Error("rank " + std::to_string(m_rank) + " of " + std::to_string(m_world) + ": the " + what +
                  " failed (another rank died, or did not join within the collective timeout of " +
                  std::to_string(m_timeout.count() / 1000) + " s): " + why.substr(0, why.find('\n')) +
                  " — resume from the last checkpoint (sweep run does; sweep train: --resume)");
    }
  }

  torch::Tensor there(const torch::Tensor& t) const { return m_on && t.device() != *m_on ? t.to(*m_on) : t; }

  c10::intrusive_ptr<c10d::Store> m_store;
  c10::intrusive_ptr<Group> m_group;
  int64_t m_rank, m_world;
  std::optional<torch::Device> m_on;
  std::chrono::milliseconds m_timeout;
};

}  // namespace

Backend resolve_backend(Backend backend, const torch::Device& device) {
  if (backend != Backend::automatic) {
    return backend;
  }
#ifdef USE_C10D_NCCL
  return device.is_cuda() ? Backend::nccl : Backend::gloo;
#else
  (void)device;
  return Backend::gloo;
#endif
}

torch::Device rank_device(const DistEnv& env, int64_t visible_gpus, Backend backend) {
  if (visible_gpus < 1) {
    throw Error("rank " + std::to_string(env.rank) + " was asked to train on CUDA but sees no GPU — check "
                "CUDA_VISIBLE_DEVICES, or train on cpu",
                Exit::bad_input);
  }
  if (env.local_world > visible_gpus && resolve_backend(backend, torch::kCUDA) == Backend::nccl) {
    throw Error(std::to_string(env.local_world) + " ranks on this machine but " + plural(visible_gpus, "visible GPU") +
                    ": NCCL needs a GPU of its own for each rank — give each rank a GPU, or set "
                    "resources.backend: gloo to let ranks share one",
                Exit::bad_input);
  }
  return {torch::kCUDA, static_cast<c10::DeviceIndex>(env.local_rank % visible_gpus)};
}

std::string first_host(const std::string& nodelist) {
  const size_t comma = nodelist.find(',');
  const size_t bracket = nodelist.find('[');
  if (bracket == std::string::npos || (comma != std::string::npos && comma < bracket)) {
    return nodelist.substr(0, comma);
  }
  // prefix[03-05,9]: the prefix and the first number as written (zero padding kept)
  const size_t end = nodelist.find_first_of("-,]", bracket + 1);
  return nodelist.substr(0, bracket) + nodelist.substr(bracket + 1, end - bracket - 1);
}

DistEnv dist_env(const GetEnv& getenv) {
  DistEnv env;
  if (getenv("RANK")) {
    env.source = "torchrun environment";
    env.world = int_var(getenv, "WORLD_SIZE", -1, 1);
    if (env.world < 0) {
      throw Error("RANK is set but WORLD_SIZE is not — set both (and MASTER_ADDR, MASTER_PORT)", Exit::bad_input);
    }
    env.rank = int_var(getenv, "RANK", 0, 0);
    env.local_rank = int_var(getenv, "LOCAL_RANK", env.rank, 0);
    env.local_world = int_var(getenv, "LOCAL_WORLD_SIZE", 1, 1);
    env.master_addr = getenv("MASTER_ADDR").value_or("127.0.0.1");
    env.port = static_cast<int>(int_var(getenv, "MASTER_PORT", 29500, 1));
  } else if (int_var(getenv, "SLURM_NTASKS", 1, 1) > 1) {
    env.source = "Slurm environment";
    env.world = int_var(getenv, "SLURM_NTASKS", 1, 1);
    env.rank = int_var(getenv, "SLURM_PROCID", 0, 0);
    env.local_rank = int_var(getenv, "SLURM_LOCALID", 0, 0);
    const auto nodes = getenv("SLURM_STEP_NODELIST") ? getenv("SLURM_STEP_NODELIST") : getenv("SLURM_JOB_NODELIST");
    if (!nodes) {
      throw Error("SLURM_NTASKS > 1 but no SLURM_STEP_NODELIST or SLURM_JOB_NODELIST to find rank 0's host",
                  Exit::bad_input);
    }
    env.master_addr = getenv("MASTER_ADDR").value_or(first_host(*nodes));
    env.port = static_cast<int>(int_var(getenv, "MASTER_PORT", 20000 + int_var(getenv, "SLURM_JOB_ID", 0, 0) % 20000, 1));
  }
  if (env.rank >= env.world) {
    throw Error("rank " + std::to_string(env.rank) + " is not below the world size " + std::to_string(env.world) +
                    " (" + env.source + ")",
                Exit::bad_input);
  }
  if (env.port > 65535) {
    throw Error("MASTER_PORT " + std::to_string(env.port) + " is not a TCP port", Exit::bad_input);
  }
  return env;
}

DistEnv dist_env() {
  return dist_env([](const std::string& name) -> std::optional<std::string> {
    const char* v = std::getenv(name.c_str());
    return v != nullptr ? std::optional<std::string>(v) : std::nullopt;
  });
}

std::unique_ptr<Communicator> connect(const DistEnv& env, const torch::Device& device, Backend backend,
                                      std::chrono::milliseconds timeout) {
  backend = resolve_backend(backend, device);
  if (backend == Backend::nccl && !device.is_cuda()) {
    throw Error("the NCCL backend needs CUDA tensors: set resources.device: cuda, or resources.backend: gloo",
                Exit::bad_input);
  }
  c10d::TCPStoreOptions store_options;
  store_options.port = static_cast<uint16_t>(env.port);
  store_options.isServer = env.rank == 0;
  store_options.numWorkers = static_cast<size_t>(env.world);
  store_options.waitWorkers = true;
  store_options.timeout = timeout;
  c10::intrusive_ptr<c10d::Store> store;
  try {
    store = c10::make_intrusive<c10d::TCPStore>(env.master_addr, store_options);
  } catch (const std::exception& e) {
    throw Error("rank " + std::to_string(env.rank) + " could not meet the others at " + env.master_addr + ":" +
                std::to_string(env.port) + ": " + e.what());
  }
  if (backend == Backend::nccl) {
#ifdef USE_C10D_NCCL
    auto options = c10d::ProcessGroupNCCL::Options::create();
    options->timeout = timeout;
    auto group = c10::make_intrusive<c10d::ProcessGroupNCCL>(store, static_cast<int>(env.rank),
                                                              static_cast<int>(env.world), options);
    return std::make_unique<GroupCommunicator<c10d::ProcessGroupNCCL>>(store, group, env.rank, env.world, device,
                                                                         timeout);
#else
    throw Error("this LibTorch has no NCCL: set resources.backend: gloo (CUDA tensors through the host), or build "
                "against a CUDA PyTorch (scripts/setup.sh --torch cuda)",
                Exit::bad_input);
#endif
  }
  auto options = c10d::ProcessGroupGloo::Options::create();
  options->timeout = timeout;
  options->devices.push_back(gloo_device(env));
  auto group = c10::make_intrusive<c10d::ProcessGroupGloo>(store, static_cast<int>(env.rank),
                                                            static_cast<int>(env.world), options);
  return std::make_unique<GroupCommunicator<c10d::ProcessGroupGloo>>(store, group, env.rank, env.world, std::nullopt,
                                                                   timeout);
}

void average_gradients(Communicator& comm, const std::vector<torch::Tensor>& params, int64_t bucket_bytes) {
  torch::NoGradGuard no_grad;
  std::vector<torch::Tensor> grads;
  for (const auto& p : params) {
    if (p.grad().defined()) {
      grads.push_back(p.grad());
    }
  }
  const double world = static_cast<double>(comm.world());
  size_t begin = 0;
  while (begin < grads.size()) {
    // One bucket: consecutive gradients of one dtype up to bucket_bytes (at least one).
    size_t end = begin;
    int64_t bytes = 0;
    while (end < grads.size() && grads[end].scalar_type() == grads[begin].scalar_type() &&
           (end == begin || bytes + grads[end].numel() * grads[end].element_size() <= bucket_bytes)) {
      bytes += grads[end].numel() * grads[end].element_size();
      ++end;
    }
    std::vector<torch::Tensor> flat;
    for (size_t i = begin; i < end; ++i) {
      flat.push_back(grads[i].reshape({-1}));
    }
    torch::Tensor bucket = torch::cat(flat);
    comm.all_reduce_sum(bucket);
    bucket.div_(world);  // Gloo has no average: sum, then divide
    int64_t offset = 0;
    for (size_t i = begin; i < end; ++i) {
      const int64_t n = grads[i].numel();
      grads[i].copy_(bucket.narrow(0, offset, n).view_as(grads[i]));
      offset += n;
    }
    begin = end;
  }
}


}  // namespace sweep
