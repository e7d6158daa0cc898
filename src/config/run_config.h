// RunConfig: everything that defines one training run (model, data, train, eval, seeds,
// resources), loaded from YAML with full validation. Dotted overrides (`--set train.lr=1e-3`,
// and later a sweep file's interventions) are applied to the YAML tree before validation, so
// they are checked exactly like the file and their errors point at the override.
#pragma once

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "config/choices.h"
#include "config/trainer.h"
#include "config/yaml_reader.h"

namespace sweep {

// The version of the training maths: what a run computes from its config. Bump it with any
// change to the training core that changes results (initialisation, a kernel's numerics, the
// data order, dropout masks); it is part of every run id, so results of older maths are never
// taken for new ones, and every run records it. History:
//   1 (absent from older run ids): weights drawn in one stream from the global generator
//   2: each weight drawn from its own generator, seeded by (init seed, name, shape)
inline constexpr int k_numerics_version = 2;

struct ModelConfig {
  int64_t n_layer = 4;
  int64_t n_head = 4;
  int64_t n_embd = 256;
  int64_t block_size = 256;
  int64_t vocab_size = 0;     // 0: take it from the dataset
  int64_t pad_vocab_to = 64;  // the embedding/head rows are rounded up to a multiple of this
  double dropout = 0.0;
  bool qkv_bias = false;  // mha only
  bool tie_weights = false;

  // ---- the architecture (docs/models.md). gpt2 is GPT-2's choice for each part; deepseek
  // changes the defaults to DeepSeek-V2's (rmsnorm, rope, swiglu, mla, no linear biases). Each
  // part is also a switch of its own. A gpt2 config that leaves them as they are keeps its run id.
  Family family = Family::gpt2;
  Norm norm = Norm::layernorm;
  Position position = Position::learned;
  MlpActivation mlp_activation = MlpActivation::gelu;
  Attention attention = Attention::mha;  // mla: deepseek's
  double rope_theta = 10000;
  int64_t intermediate_size = 0;  // a dense MLP's hidden width; 0: 4C (gelu, relu2), 8C/3 up to a multiple of 8 (swiglu)
  // ---- the NanoGPT speedrun's switches (docs/models.md); off by default, and left out of the run
  // id while off, so the runs before them keep their ids
  bool qk_norm = false;          // mha: each head's query and key RMS-normalised (no gain) before rope
  bool zero_init_proj = false;   // the residual projections (attention's and the MLP's output) start at 0
  double logit_softcap = 0;      // > 0: logits = cap · tanh(logits / cap); 0: off
  // Multi-head latent attention (deepseek): keys and values from one low-rank latent
  int64_t q_lora_rank = 0;        // 0: queries uncompressed
  int64_t kv_lora_rank = 0;       // 0: n_embd / 2
  int64_t qk_nope_head_dim = 0;   // 0: n_embd / n_head
  int64_t qk_rope_head_dim = -1;  // -1: half of n_embd / n_head with rope, 0 with learned positions
  int64_t v_head_dim = 0;         // 0: n_embd / n_head
  // DeepSeekMoE (deepseek): routed experts (softmax top-k) plus always-on shared experts
  int64_t n_routed_experts = 0;  // 0: a dense MLP in every layer
  int64_t n_shared_experts = 0;
  int64_t moe_top_k = 2;
  int64_t moe_intermediate_size = 0;  // 0: intermediate_size / (moe_top_k + n_shared_experts), rounded up
  int64_t first_k_dense = 1;          // the first layers keep a dense MLP
  Balance balance = Balance::aux_loss;
  double aux_loss_alpha = 0.001;      // balance: aux_loss
  double bias_update_speed = 0.001;   // balance: bias

  int64_t padded_vocab() const { return (vocab_size + pad_vocab_to - 1) / pad_vocab_to * pad_vocab_to; }
  int64_t head_dim() const { return n_embd / n_head; }
  bool moe() const { return n_routed_experts > 0; }
  bool moe_layer(int64_t layer) const { return moe() && layer >= first_k_dense; }
  bool linear_bias() const { return family == Family::gpt2; }  // DeepSeek's linear layers have none
  bool aux_loss_on() const { return moe() && balance == Balance::aux_loss && aux_loss_alpha > 0; }
  // Query/key head width under MLA (the non-rotary and rotary parts together).
  int64_t qk_head_dim() const { return qk_nope_head_dim + qk_rope_head_dim; }
  // This config with every derived size (the 0 and -1 above) filled in; idempotent.
  ModelConfig resolved() const;
};

// Parameters of a model, counted from its config alone (no tensors are made): `sweep plan` states
// them for models this machine could not hold. "active": what one token goes through (the
// routed experts it is sent to, not the others).
struct ModelSize {
  int64_t total = 0;
  int64_t active = 0;
  int64_t embedding = 0;        // wte (+ wpe): looked up, no matmul
  double flops_per_token = 0;   // forward + backward: 6 × active matmul weights + attention's 6·L·T·(d_qk + d_v)·heads
};
ModelSize model_size(const ModelConfig& m);

struct DataConfig {
  std::string dataset;  // a folder made by `sweep data prepare`, as the file names it (the identity)
  std::string dir;      // where it is on this machine (find_dataset); not part of the config

  const std::string& location() const { return dir.empty() ? dataset : dir; }
};

struct TrainConfig {
  int64_t micro_batch = 16;
  int64_t grad_accum = 1;
  int64_t tokens = 0;  // the budget; steps = tokens / tokens_per_step
  double lr = 6e-4;
  double min_lr = 6e-5;
  Schedule schedule = Schedule::constant;
  double warmup = 0;                  // steps (>= 1) or a fraction of the steps (< 1)
  double decay = 0.2;                 // wsd: the fraction of steps spent decaying at the end
  double weight_decay = 0.1;
  double beta1 = 0.9;
  double beta2 = 0.95;
  double eps = 1e-8;
  double grad_clip = 0;            // 0 = off
  // Muon (Keller Jordan's; the NanoGPT speedrun's): the blocks' 2-D weight matrices take momentum
  // SGD whose update is orthogonalised by 5 Newton–Schulz steps (train/muon.h), at muon_lr on the
  // same schedule; embeddings, the head, biases and norms stay on AdamW at lr. Named in a run's
  // identity only when on.
  Optimizer optimizer = Optimizer::adamw;
  double muon_lr = 0.02;
  double muon_momentum = 0.95;       // Nesterov
  int64_t muon_momentum_warmup = 0;  // steps over which the momentum rises from 0.85 to muon_momentum
  Precision precision = Precision::fp32;
  bool fused = true;               // kernels/'s fused CPU ops; false = the reference LibTorch ops
  // sweep's own CUDA kernels where ATen is slow (kernels/cuda/: the in-place cross-entropy over
  // bf16 logits, LayerNorm with bf16 output, bias + activation), on a GPU only; off until they have
  // passed their GPU tests on a GPU. Part of the run id only when on.
  bool cuda_kernels = false;
  // The whole step (forward, backward, the clip, AdamW, the loss's copy) captured once as a CUDA
  // graph after a few eager steps and replayed from then on (train/step_graph.h), on a GPU only;
  // off until its GPU tests have passed on a GPU. Part of the run id only when on.
  bool cuda_graph = false;
  // Activation checkpointing: each block keeps only its input in forward and is run again in
  // backward (the same values: dropout's generator state is restored); not part of the run id
  bool activation_checkpointing = false;
};

struct EvalConfig {
  int64_t every = 200;  // optimizer steps between validation evaluations (0 = only at the end)
  int64_t val_tokens = 131072;
  int64_t checkpoint_every = 0;  // steps between checkpoints; 0 = at evals and at the end
};

struct SeedConfig {
  int64_t init = 1;  // weights
  int64_t data = 1;  // batch order and dropout
};

// A run's seeds as the scheduler's log, `sweep plan` and `sweep status` say them — never "2/2",
// which reads as "the second of two": in a sentence "seed 2", or "init seed 1, data seed 3" where
// they differ; in a table column (no spaces) "2", or "init=1,data=3"; a repeat adds its number.
std::string seeds_in_words(int64_t init, int64_t data, int64_t repeat = 0);
std::string seeds_in_column(int64_t init, int64_t data, int64_t repeat = 0);

// The kind of a device: "cuda" for cuda and cuda:N, else "cpu".
inline std::string device_kind(const std::string& device) { return device.rfind("cuda", 0) == 0 ? "cuda" : "cpu"; }

struct ResourceConfig {
  int64_t threads = 0;          // 0 = auto: every core given to the run (per rank)
  std::string device = "cpu";   // cpu | cuda | cuda:N
  int64_t ranks = 1;            // data-parallel processes; the global batch is micro × accum × ranks
  Backend backend = Backend::automatic;  // spelled auto
  // Seconds without an event from the worker after which the scheduler kills it as stuck and
  // retries it from its checkpoint (0 = never). The worker sends heartbeats in long phases.
  double stall_timeout = 600;
  // GiB one device has for a run (0 = unknown): `sweep plan` and `sweep run` check the memory plan
  // (src/memory_plan) against it, and name the layouts that would fit a run that does not.
  double device_memory = 0;
  // How often a busy worker says it is alive: a quarter of the stall timeout, at most 30 s.
  double heartbeat_seconds() const { return stall_timeout > 0 ? std::min(30.0, stall_timeout / 4) : 30.0; }
};

// How the ranks share the training state (src/train/sharded/zero.h): not part of the run id (the same
// maths as plain data parallel), like resources.
struct ParallelConfig {
  int64_t zero = 0;  // ZeRO stage: 0 replicated; 1 optimizer state sharded; 2 + gradients; 3 + weights
  int64_t expert = 1;  // ranks the routed experts are partitioned over (1: none; else resources.ranks)
};

// A run branched from another's checkpoint (a sweep's `branch: {at: f}`, config/branch.h): it
// starts at `step` from the checkpoint its parent, run `from`, had there, and trains its own
// config from then on. Part of the run id only when set (step > 0).
struct BranchConfig {
  std::string from;  // the parent's run id
  int64_t step = 0;  // 0: trained from step 0 (no branch)
  bool on() const { return step > 0; }
};

struct RunConfig {
  ModelConfig model;
  DataConfig data;
  TrainConfig train;
  EvalConfig eval;
  SeedConfig seeds;
  ResourceConfig resources;
  ParallelConfig parallel;
  BranchConfig branch;

  // A user's own training program trains this run (`trainer:` in its sweep file): `values`, its
  // resolved config, stands for model, data, train and eval, which are then unused.
  std::optional<OwnTrainer> trainer;
  nlohmann::json values;

  int64_t world_size = 1;  // the ranks actually running (set by the trainer from its process group)

  int64_t tokens_per_step() const {
    return train.micro_batch * model.block_size * train.grad_accum * world_size;
  }
  int64_t total_steps() const { return train.tokens / tokens_per_step(); }
  int64_t warmup_steps() const;
  int threads() const;  // resolved: `auto` → the cores this process may use

  // The canonical form: every field, fixed key order. Emitted as a run's config.yaml.
  nlohmann::json to_json() const;
  // What defines the run's result: to_json() without `resources` (threads and which device are
  // where it runs, not what it computes) — except `ranks` when it is not 1, since it scales the
  // global batch, and the kind of device when it is a GPU (its kernels and dropout stream are not
  // the CPU's) — plus the numerics version. Run ids hash it.
  nlohmann::json identity_json() const;
  bool trains_on_cuda() const { return device_kind(resources.device) == "cuda"; }
  // An identity without what a checkpoint may be resumed across: the ranks and train.grad_accum
  // (the batch of a step, micro_batch × block_size × grad_accum × ranks, is checked on its own).
  static nlohmann::json across_layouts(nlohmann::json identity);
  // Two identities that differ in the kind of device alone ("cpu", "cuda"): a run that would go on
  // on the other kind, which it may not — refused with `fix` saying how to go on.
  static std::optional<std::string> other_device(nlohmann::json written, nlohmann::json here, const std::string& what);
  std::string to_yaml() const;
};

// A run of `c` as it is planned, by resources.ranks: its tokens per step (micro_batch × block_size ×
// grad_accum × ranks) and its steps (its tokens in whole such steps) — what its worker trains and
// says in its start event. total_steps() and tokens_per_step() count world_size, the ranks a trainer
// runs (1 until a trainer sets it).
int64_t planned_tokens_per_step(const RunConfig& c);
int64_t planned_steps(const RunConfig& c);

// Why train.cuda_graph cannot capture this run's step ("" when it can): a CPU run (`on_cuda` false),
// Muon, a mixture of experts, activation checkpointing or several ranks, each with its reason. The
// trainer refuses such a run before it trains, planning before anything runs.
std::string cuda_graph_problem(const RunConfig& c, bool on_cuda);

// One `key.path=value` override; the value is parsed as YAML ("1e-3", "true", "[1, 2]").
struct Override {
  std::string path;
  YAML::Node value;
  Origin origin;
};

Override parse_set_option(const std::string& option);  // "train.lr=1e-3" from --set

// An override's value as one line of flow YAML ("1e-3", "[1, 2]", "{a: 1}"), as the database records it.
std::string flow_yaml(const YAML::Node& value);

// Applies overrides to a YAML tree (creating sections as needed) and records their origins.
void apply_overrides(YAML::Node& root, const std::vector<Override>& overrides,
                     std::map<std::string, Origin>& origins);

// A run of a user's trainer from a tree of its keys (base with overrides applied) and `resources`:
// every key checked against the trainer's declarations (config/trainer.h). Throws InputErrors.
RunConfig parse_trainer_run(const YAML::Node& tree, const TrainerSpec& spec, const std::string& file,
                            const std::map<std::string, Origin>& origins = {});

// Validates the tree into a RunConfig; every problem is collected, then thrown as InputErrors.
// A tree with `trainer:` is a user trainer's run as config.yaml records it.
RunConfig parse_run_config(const YAML::Node& root, const std::string& file,
                           const std::map<std::string, Origin>& origins = {});

// The largest run or sweep file read (a sweep's grids list values; 1 MiB is thousands of them).
constexpr uintmax_t k_max_config_bytes = 1 << 20;

// Loads a YAML file of one document, at most k_max_config_bytes (syntax errors, a second
// document and a bigger file become file:line:col diagnostics).
YAML::Node load_yaml_file(const std::string& path);

RunConfig load_run_config(const std::string& path, const std::vector<Override>& overrides = {});

// Where the dataset a run or sweep file names is, whatever the working directory: an absolute
// path as it is; a relative one from the file's folder, then each folder above it, the nearest
// that has it. Empty when none has it.
std::string find_dataset(const std::string& dataset, const std::string& file);

}  // namespace sweep
