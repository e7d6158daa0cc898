// Data parallelism on LibTorch's own process groups (c10d): where this process sits in a
// multi-process run (torchrun's or Slurm's environment), and a communicator over a TCPStore
// rendezvous — ProcessGroupGloo on CPU, ProcessGroupNCCL in CUDA builds of LibTorch that have it.
#pragma once

#include <torch/torch.h>

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "config/choices.h"

namespace sweep {

struct DistEnv {
  int64_t rank = 0, world = 1, local_rank = 0;
  int64_t local_world = 1;  // ranks on this machine (LOCAL_WORLD_SIZE; 1 when not said)
  std::string master_addr = "127.0.0.1";
  int port = 29500;
  std::string source = "single process";  // "torchrun environment" or "Slurm environment"
};

using GetEnv = std::function<std::optional<std::string>(const std::string&)>;

// RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR, MASTER_PORT when RANK is set; else Slurm's
// SLURM_PROCID, SLURM_NTASKS, SLURM_LOCALID, the first host of SLURM_STEP_NODELIST (or
// SLURM_JOB_NODELIST) and MASTER_PORT or a port derived from SLURM_JOB_ID, when SLURM_NTASKS > 1;
// else one process. Malformed values are errors naming the variable.
DistEnv dist_env(const GetEnv& getenv);
DistEnv dist_env();  // from this process's environment

// The first host of a Slurm node list: "gpu[03-05,9],cpu1" → "gpu03".
std::string first_host(const std::string& nodelist);

class Communicator {
 public:
  virtual ~Communicator() = default;
  virtual int64_t rank() const = 0;
  virtual int64_t world() const = 0;
  // Sums a contiguous tensor across ranks, in place.
  virtual void all_reduce_sum(torch::Tensor& t) = 0;
  // Every rank's copy of `t` (same shape and dtype on every rank), in rank order.
  virtual std::vector<torch::Tensor> all_gather(const torch::Tensor& t) = 0;
  // ZeRO's collectives over rank-major buffers (`full` holds world() pieces of `piece`'s size,
  // rank r's at r × piece.numel()). Sums every rank's `full` and leaves this rank's piece of the
  // sum in `piece`: NCCL's reduce-scatter; Gloo (LibTorch 1.13 has none) all-reduces `full` in
  // place and takes the piece — the same sums, twice the traffic, and `full` is overwritten.
  virtual void reduce_scatter_sum(torch::Tensor& full, torch::Tensor& piece) = 0;
  // Every rank's `piece` into `full`, in rank order.
  virtual void all_gather_into(const torch::Tensor& piece, torch::Tensor& full) = 0;
  // Expert parallelism's exchange: `in`'s rows cut into world() consecutive parts of send[r] rows,
  // part r sent to rank r; returns the parts received, recv[r] rows from rank r, in rank order.
  virtual torch::Tensor all_to_all(const torch::Tensor& in, const std::vector<int64_t>& send,
                                   const std::vector<int64_t>& recv) = 0;
};

// Backend (config/choices.h): the process group a run's ranks meet in: NCCL (CUDA tensors, one
// GPU per rank), Gloo (CPU tensors, or CUDA tensors copied through the host: ranks may share a
// GPU), or auto (NCCL on CUDA, Gloo on the CPU).
// What `backend` means on `device`: auto is NCCL on CUDA where this build has it, else Gloo.
Backend resolve_backend(Backend backend, const torch::Device& device);

// Joins the process group of `env` (rank 0 hosts the TCPStore). A rank that does not arrive, or
// dies, makes every collective fail within `timeout` instead of hanging. Tensors given to the
// communicator may live on the CPU or on `device`: what NCCL needs on the GPU is moved there
// and back.
std::unique_ptr<Communicator> connect(const DistEnv& env, const torch::Device& device, Backend backend,
                                      std::chrono::milliseconds timeout);

// The GPU of a rank (`cuda:k` for local rank k; ranks beyond the visible GPUs share them in turn,
// which only Gloo allows): an error naming the fix when NCCL (given, or auto resolved to it)
// would get two ranks on one GPU.
torch::Device rank_device(const DistEnv& env, int64_t visible_gpus, Backend backend);

// Averages gradients across ranks: flattened into buckets of at most `bucket_bytes`, one
// all-reduce per bucket, divided by the world size, copied back.
void average_gradients(Communicator& comm, const std::vector<torch::Tensor>& params, int64_t bucket_bytes = 25 << 20);

}  // namespace sweep
