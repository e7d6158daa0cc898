#include "memory_plan/memory.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <optional>

#include "util/cpu_isa.h"

namespace sweep {

namespace {

constexpr double k_f32 = 4, k_i64 = 8;
constexpr double k_bucket = 25 << 20;  // parallel/'s gradient bucket (average_gradients)
// An MoE layer pads each expert's rows to a multiple of k_expert_rows (train/model.h): half of it
// on average per expert.
constexpr double k_expert_padding = 64 / 2.0;

// The (token, slot) rows an MoE layer sends through its experts for N tokens.
double expert_rows(const ModelConfig& m, double N) {
  return N * static_cast<double>(m.moe_top_k) + static_cast<double>(m.n_routed_experts) * k_expert_padding;
}

// The tensors one micro-batch's forward keeps for backward, summed by what they are.
struct Tally {
  std::map<std::string, double> kept;
  void keep(const std::string& what, double bytes) { kept[what] += bytes; }
  double sum() const {
    double s = 0;
    for (const auto& [k, v] : kept) {
      s += v;
    }
    return s;
  }
};

// The accounting of one micro-batch of `c` (resolved) on `p`, N = B·T tokens. Mirrors the
// forward of src/train/model.cpp: what each module makes, and which of it a backward keeps.
struct Walk {
  const ModelConfig& m;
  const StepPath& p;
  double B, T, N, C, cd;  // cd: the bytes of the compute dtype (bf16 under autocast)
  Tally t;
  double logits = 0;  // what the loss keeps of the logits (freed at the start of backward)

  bool recompute;          // activation checkpointing: a block keeps its input only, and runs again in backward
  double largest_block = 0;  // what the block that keeps most keeps (what its rerun makes again)

  Walk(const ModelConfig& model, const StepPath& path, int64_t micro_batch, bool checkpointing)
      : m(model), p(path), B(static_cast<double>(micro_batch)), T(static_cast<double>(model.block_size)),
        N(B * T), C(static_cast<double>(model.n_embd)), cd(path.autocast ? 2 : 4), recompute(checkpointing) {}

  bool fused_cpu() const { return p.fused && !p.cuda; }

  // The fp32 input a linear layer keeps: the tensor itself without autocast (its producer's
  // entry counts it); under autocast, its bf16 copy, one per consuming linear (autocast caches
  // the casts of weights, not of activations). `width` features per token.
  void linear_input(const std::string& what, double width) {
    if (p.autocast) {
      t.keep(what + ": bf16 copy of the input", N * width * 2);
    }
  }

  // A norm over `width` features of an fp32 (or, for MLA's latent, compute-dtype) input it keeps.
  // Its fp32 output is kept by the linear layers after it without autocast (with it, their bf16
  // copies are: linear_input).
  void norm(const std::string& what, double width, bool input_fp32) {
    if (m.norm == Norm::rmsnorm) {
      // x32 (the input itself when fp32), x32² (LibTorch 1.13's mean keeps its input: measured),
      // x32·rsqrt (kept by ·weight), rsqrt (N)
      if (!input_fp32) {
        t.keep(what + ": fp32 copy of the input", N * width * k_f32);
      }
      t.keep(what + ": squared, normalised", 2 * N * width * k_f32 + N * k_f32);
    } else {
      t.keep(what + ": mean, rstd", 2 * N * k_f32);  // LayerNorm keeps its input (counted by its producer)
      if (!input_fp32) {
        t.keep(what + ": fp32 copy of the input", N * width * k_f32);
      }
    }
    if (!p.autocast) {
      t.keep(what + ": output", N * width * k_f32);
    }
  }

  // Dropout on an (N, width) tensor of `bytes` per element: the CPU's noise tensor, CUDA's mask.
  void dropout(const std::string& what, double width, double bytes) {
    if (m.dropout > 0) {
      t.keep(what + ": dropout " + (p.cuda ? "mask" : "noise"), N * width * (p.cuda ? 1 : bytes));
    }
  }

  // Causal attention of (N, heads·dq) queries and keys over (N, heads·dv) values. Rotary
  // positions add nothing kept on the fused path: the rotated q and k are packed again.
  void attention(const std::string& what, double H, double dq, double dv) {
    const double d = std::max(dq, dv);
    if (p.fused) {  // kernels/' attention; else LibTorch's scaled_dot_product_attention
      t.keep(what + ": packed q, k, v", N * 3 * H * d * cd);
      t.keep(what + ": output", N * H * d * cd);
      t.keep(what + ": log-sum-exp", N * H * k_f32);
      if (d != dv) {
        t.keep(what + ": output narrowed to the value width", N * H * dv * cd);
      }
    } else {  // sdpa
      t.keep(what + ": q, k, v", N * H * (2 * dq + dv) * cd);
      t.keep(what + ": output", N * H * dv * cd);
      t.keep(what + ": log-sum-exp", N * H * k_f32);
      t.keep(what + ": output in token order", N * H * dv * cd);
    }
  }

  // A feed-forward of `hidden` units over `rows` tokens (its input kept by its first linears
  // as linear_input says); `name` labels it.
  void mlp(const std::string& name, double rows, double hidden) {
    if (m.mlp_activation == MlpActivation::swiglu) {
      // gate (kept by silu), silu(gate) and up (kept by the product), the product (kept by down)
      t.keep(name + ": gate, silu, up, product", rows * hidden * 4 * cd);
    } else {
      // the pre-activation (kept by GELU or the fused bias + activation; ReLU²'s reference keeps
      // relu's output instead) and the activation's output (kept by c_proj)
      t.keep(name + ": pre-activation, activation", rows * hidden * 2 * cd);
    }
  }

  int layer_inputs() const { return m.mlp_activation == MlpActivation::swiglu ? 2 : 1; }

  void block(int64_t layer) {
    // The residual stream: the layer's input (kept by ln_1) and after attention (kept by ln_2),
    // fp32.
    t.keep("residual stream (fp32)", 2 * N * C * k_f32);
    const double H = static_cast<double>(m.n_head);
    if (m.attention == Attention::mla) {
      const double r = static_cast<double>(m.kv_lora_rank), dr = static_cast<double>(m.qk_rope_head_dim),
                   dn = static_cast<double>(m.qk_nope_head_dim), dv = static_cast<double>(m.v_head_dim),
                   dq = dn + dr, qr = static_cast<double>(m.q_lora_rank);
      norm("attention norm", C, true);
      // the query path (and its low-rank bottleneck) and kv_a_proj each take ln_1's output
      linear_input("attention projections", C);
      linear_input("attention projections (kv)", C);
      if (qr > 0) {
        t.keep("query bottleneck", N * qr * cd);
        norm("query bottleneck norm", qr, !p.autocast);
        linear_input("query up-projection", qr);
      }
      // the compressed latent and rotary key (N, r + dr): its norm keeps it (fp32 path) or an
      // fp32 copy of the latent (autocast)
      if (!p.autocast) {
        t.keep("latent and rotary key", N * (r + dr) * k_f32);
      }
      norm("latent norm", r, !p.autocast);
      linear_input("key/value up-projection", r);
      attention("attention", H, dq, dv);
    } else {
      const double hs = C / H;
      norm("attention norm", C, true);
      linear_input("attention qkv projection", C);
      if (m.qk_norm) {
        // q and k to unit RMS in fp32: the fp32 input (a copy under autocast; without, the qkv
        // tensor, which its views keep), its square (kept by the mean) and the rsqrt per head
        t.keep("attention: QK-norm", (p.autocast ? 2 * N * C : 3 * N * C) * k_f32 + 2 * N * C * k_f32 + 2 * N * H * k_f32);
      }
      attention("attention", H, hs, hs);
      if (m.position == Position::rope && !p.fused) {
        t.keep("attention: rotated q, k", 2 * N * C * cd);  // sdpa keeps them beside the qkv v is a view of
      }
    }
    dropout("attention output", C, cd);
    // the feed-forward
    norm("feed-forward norm", C, true);
    if (m.moe_layer(layer)) {
      moe();
    } else {
      for (int i = 0; i < layer_inputs(); ++i) {
        linear_input("feed-forward input", C);
      }
      mlp("feed-forward", N, static_cast<double>(m.intermediate_size));
    }
    dropout("feed-forward output", C, m.moe_layer(layer) ? k_f32 : cd);
  }

  void moe() {
    const double E = static_cast<double>(m.n_routed_experts), K = static_cast<double>(m.moe_top_k),
                 hidden = static_cast<double>(m.moe_intermediate_size);
    const double rows = expert_rows(m, N);
    linear_input("router", C);
    t.keep("router: scores (softmax, fp32)", N * E * k_f32);
    t.keep("routing indices and weights", N * K * k_i64 + rows * (2 * k_i64 + k_f32));
    // the tokens gathered by expert (fp32, from ln_2's output), each expert's bf16 copy
    t.keep("experts: gathered tokens (fp32)", rows * C * k_f32);
    if (p.autocast) {
      t.keep("experts: bf16 copies of their tokens", rows * C * 2 * layer_inputs());
    }
    mlp("experts", rows, hidden);
    t.keep("experts: outputs, weighted (fp32)", rows * C * k_f32 + (p.autocast ? rows * C * 2 : 0));
    if (m.n_shared_experts > 0) {
      for (int i = 0; i < layer_inputs(); ++i) {
        linear_input("shared experts input", C);
      }
      mlp("shared experts", N, hidden * static_cast<double>(m.n_shared_experts));
    }
  }

  void model() {
    // embeddings: the token ids (int64, kept by the lookup), the first residual after dropout
    t.keep("token ids", N * k_i64);
    dropout("embeddings", C, k_f32);
    const Tally before = t;
    for (int64_t l = 0; l < m.n_layer; ++l) {
      const double at = t.sum();
      block(l);
      largest_block = std::max(largest_block, t.sum() - at);
    }
    if (recompute) {  // each block's input (the residual before it), fp32
      t = before;
      t.keep("block inputs (activation checkpointing)", static_cast<double>(m.n_layer) * N * C * k_f32);
    }
    // the final norm's input (the last residual) and its output, kept by the head
    t.keep("residual stream (fp32)", N * C * k_f32);
    norm("final norm", C, true);
    linear_input("head", C);
    const double V = static_cast<double>(m.padded_vocab());
    logits = fused_cpu() ? N * V * cd : N * V * k_f32;
    t.keep(fused_cpu() ? "logits (their gradient is written over them)" : "log-softmax of the logits (fp32)", logits);
    if (m.logit_softcap > 0 && !fused_cpu()) {  // the fused loss caps each row in its own pass
      t.keep("soft-capped logits: tanh (fp32)", N * V * k_f32);
    }
  }
};

// The parameters a forward multiplies by (the linear layers and the head; with their biases and
// norms, which are few).
double matmul_params(const ModelConfig& m, const ModelSize& size) {
  return static_cast<double>(size.total - size.embedding) +
         (m.tie_weights ? static_cast<double>(m.padded_vocab() * m.n_embd) : 0);
}

// The largest buffers the step makes beside what the forward kept: bf16 copies of the weights
// (autocast keeps one per matmul weight until backward; none when `kept_copies` are held between
// steps); then whichever is larger of the backward's first buffers (the head's and the loss's
// gradients, beside everything kept) and the last layer's backward (its feed-forward's gradients,
// and with activation checkpointing the block's rerun `rerun`, once the logits are freed).
double step_transient(const ModelConfig& m, const StepPath& p, double N, const ModelSize& size, double expert_share,
                      double logits_kept, double rerun, bool block_copies, bool kept_copies) {
  const double V = static_cast<double>(m.padded_vocab()), C = static_cast<double>(m.n_embd);
  const double cd = p.autocast ? 2 : 4;
  // autocast's bf16 copies: of every matmul weight until the forward ends (with checkpointing, the
  // rerun's scope then holds one block's)
  double copies = 0, rerun_copies = 0;
  if (p.autocast && !kept_copies) {
    copies = matmul_params(m, size) * 2 * expert_share;
    rerun_copies = rerun > 0 ? copies / static_cast<double>(std::max<int64_t>(m.n_layer, 1)) : copies;
    if (block_copies) {  // ZeRO-3 clears them with each block's gathered weights
      copies = rerun_copies;
    }
  }
  // the loss and the head: the fused loss wrote dlogits over the logits already; the reference
  // loss makes the gradient of its log-softmax output (nll_loss's, full size) and of its input
  // beside the log-softmax it kept, all fp32. Then the head weight's gradient before it is added
  // to .grad, and d(final norm output).
  double head = (p.fused && !p.cuda ? 0 : 2 * N * V * k_f32) + V * C * k_f32 + N * C * (cd + k_f32);
  if (p.widened_block > 0) {  // the head's widened backward: its fp32 weight, a block of dY, X and dX
    const double rows = std::clamp(std::floor(p.widened_block / (k_f32 * (V + C))), std::min(64.0, N), N);
    head += V * C * k_f32 + rows * (V + 2 * C) * k_f32;
  }
  // the last layer's feed-forward: a gradient of its hidden activations more than the saved
  // tensors each backward frees as it goes, and an MoE layer's routed tokens (the weighted
  // outputs' and the gathered tokens' gradients, fp32)
  double layer = 0;
  if (m.moe_layer(m.n_layer - 1)) {
    const double rows = expert_rows(m, N);
    layer = rows * static_cast<double>(m.moe_intermediate_size) * cd + 2 * rows * C * k_f32;
  } else {
    layer = N * static_cast<double>(m.intermediate_size) * cd;
  }
  // (with activation checkpointing, the last layer's backward starts with its rerun: everything
  // the block keeps, made again)
  return std::max(copies + head, rerun_copies + rerun + layer + N * C * k_f32 - logits_kept);
}

// The parameters the routed experts hold (what expert parallelism partitions).
double routed_expert_params(const ModelConfig& m) {
  if (!m.moe()) {
    return 0;
  }
  const double C = static_cast<double>(m.n_embd), h = static_cast<double>(m.moe_intermediate_size);
  const double per_expert = (m.mlp_activation == MlpActivation::swiglu ? 3 : 2) * C * h + (m.linear_bias() ? h + C : 0);
  int64_t moe_layers = 0;
  for (int64_t l = 0; l < m.n_layer; ++l) {
    moe_layers += m.moe_layer(l) ? 1 : 0;
  }
  return per_expert * static_cast<double>(m.n_routed_experts * moe_layers);
}

// The weights outside the blocks (embeddings, an untied head, the final norm): ZeRO-3 keeps them
// whole for a step (train/sharded/zero.h).
double resident_params(const ModelConfig& m, const ModelSize& size) {
  const double V = static_cast<double>(m.padded_vocab()), C = static_cast<double>(m.n_embd);
  return static_cast<double>(size.embedding) + (m.tie_weights ? 0 : V * C) + 2 * C;
}

}  // namespace

std::string Layout::describe() const {
  std::string s = std::to_string(ranks) + (ranks == 1 ? " rank" : " ranks");
  if (zero > 0) {
    s += ", ZeRO-" + std::to_string(zero);
  }
  if (expert > 1) {
    s += ", experts over " + std::to_string(expert);
  }
  if (micro_batch > 0) {
    s += ", micro-batch " + std::to_string(micro_batch);
  }
  if (grad_accum > 0) {
    s += " × accumulation " + std::to_string(grad_accum);
  }
  if (checkpointing) {
    s += ", activation checkpointing";
  }
  return s;
}

StepPath step_path(const RunConfig& config, bool bf16_copies, double widened_block) {
  StepPath p;
  p.cuda = config.resources.device.rfind("cuda", 0) == 0;
  p.fused = config.train.fused && !p.cuda;
  p.autocast = config.train.precision == Precision::bf16;
  p.bf16_copies = p.fused && p.autocast && bf16_copies;
  p.widened_block = p.fused && p.autocast && !bf16_copies ? widened_block : 0;
  return p;
}

StepPath step_path_here(const RunConfig& config) {
  const StepPath p = step_path(config, false);
  if (!p.fused || !p.autocast) {
    return p;  // the CPU's kernels make no difference
  }
  const CpuIsa isa = cpu_isa();
  return step_path(config, isa == CpuIsa::avx512_bf16,
                   isa == CpuIsa::avx512 ? static_cast<double>(k_widened_block_bytes) : 0);  // AVX2: sweep's own GEMM
}

MemoryPlan plan_memory(const RunConfig& config, const Layout& given, const StepPath& path) {
  MemoryPlan plan;
  plan.layout = given;
  Layout& l = plan.layout;
  l.ranks = std::max<int64_t>(l.ranks, 1);
  if (l.ranks == 1) {
    l.zero = 0;  // nothing to shard: the run trains unsharded
  }
  // ZeRO-3 frees a block's weights after its forward: the block runs again in backward
  l.checkpointing = config.train.activation_checkpointing || l.zero >= 3;
  l.expert = std::max<int64_t>(l.expert, 1);
  if (l.micro_batch <= 0) {
    l.micro_batch = config.train.micro_batch;
  }
  const ModelConfig m = config.model.resolved();
  const ModelSize size = model_size(m);
  const double P = static_cast<double>(size.total);
  const double experts = routed_expert_params(m);
  // Parameters on a rank before ZeRO: the dense part, and its share of the routed experts; ZeRO
  // shards each over the ranks that hold a copy of it (all ranks for the dense part, ranks ÷
  // expert for an expert).
  const double dense = P - experts, mine_experts = experts / static_cast<double>(l.expert);
  const double dense_ranks = static_cast<double>(l.ranks);
  const double expert_ranks = std::max(1.0, static_cast<double>(l.ranks) / static_cast<double>(l.expert));
  auto sharded = [&](bool shard) {
    return shard ? dense / dense_ranks + mine_experts / expert_ranks : dense + mine_experts;
  };
  plan.weights = k_f32 * sharded(l.zero >= 3);
  // The fused bf16 step keeps bf16 copies of the matmul weights a rank holds whole between steps
  // (kernels/linear.h)
  const bool kept_copies = path.bf16_copies && l.zero < 3;
  if (kept_copies) {
    plan.weights += 2 * matmul_params(m, size) * (dense + mine_experts) / P;
  }
  plan.gradients = k_f32 * sharded(l.zero >= 2);
  plan.optimizer = 2 * k_f32 * sharded(l.zero >= 1);
  if (config.train.optimizer == Optimizer::muon) {  // one momentum buffer for the blocks' matrices (no ZeRO with it)
    const double head = static_cast<double>(m.padded_vocab() * m.n_embd);
    plan.optimizer -= k_f32 * std::max(0.0, matmul_params(m, size) - head);
  }

  Walk w(m, path, l.micro_batch, l.checkpointing);
  w.model();
  plan.activations = w.t.sum();
  for (const auto& [what, bytes] : w.t.kept) {
    plan.activation_items.push_back({what, bytes});
  }
  std::sort(plan.activation_items.begin(), plan.activation_items.end(),
            [](const MemoryItem& a, const MemoryItem& b) { return a.bytes > b.bytes; });
  const double share = (dense + mine_experts) / P;  // the weights this rank computes with
  plan.transient = step_transient(m, path, w.N, size, share, w.logits, w.recompute ? w.largest_block : 0,
                                  l.zero >= 3, kept_copies);
  // Sharded gradients are whole for a while in backward: ZeRO-2's all of them until the step's
  // reduce-scatter; ZeRO-3's those of the weights outside the blocks (whole for the step, like
  // those weights) and of the block being rerun (with its gathered weights). They grow as the
  // activations are freed, so at accumulation 1 the step's peak is the larger of the two
  // (measured in docs/performance.md#zero), not their sum.
  // (Experts over the ranks are not ZeRO's: their weights and gradients are this rank's whole,
  // counted above.)
  const double zeros = l.expert > 1 ? dense : dense + mine_experts;  // the weights ZeRO shards
  // a block's share of them, the mean block (what ZeRO-3 gathers at once)
  const double zero_block = (zeros - resident_params(m, size)) / static_cast<double>(std::max<int64_t>(m.n_layer, 1));
  double whole_gradients = 0;
  if (l.zero == 2) {
    whole_gradients = k_f32 * zeros;
  } else if (l.zero >= 3) {
    whole_gradients = 2 * k_f32 * (resident_params(m, size) + zero_block);
  }
  // With accumulation they stay whole from the first micro-batch's backward, beside the next
  // micro-batch's activations: then they add up.
  plan.transient = config.train.grad_accum > 1 ? plan.transient + whole_gradients
                                               : std::max(plan.transient, whole_gradients - plan.activations);

  if (l.ranks > 1) {
    const double cd = path.autocast ? 2 : 4;
    if (l.zero <= 1) {
      // one flattened bucket (ZeRO-1's gathers of updated weights come after the all-reduce's
      // bucket is freed, when the step's activations are gone: measured, they add nothing)
      plan.communication = std::min(k_bucket, k_f32 * (dense + mine_experts));
    } else {
      // a bucket for the reduce-scatter of gradients, and the gather of updated (ZeRO-2) or
      // in-use (ZeRO-3) weights
      plan.communication = std::min(k_bucket, k_f32 * (dense + mine_experts)) * 2;
      if (l.zero >= 3) {
        // a block's rank-major buffer: its weights' gather, then its gradients' reduce-scatter
        plan.communication += k_f32 * zero_block;
      } else {
        plan.communication += std::min(k_bucket, k_f32 * (dense + mine_experts));
      }
    }
    if (l.expert > 1 && m.moe()) {
      // all-to-all: the tokens sent to other ranks' experts and received back, forward and backward
      const double rows = w.N * static_cast<double>(m.moe_top_k);
      plan.communication += 2 * rows * static_cast<double>(m.n_embd) * cd;
    }
  }
  return plan;
}

std::vector<MemoryPlan> layouts_that_fit(const RunConfig& config, const StepPath& path, double device_bytes,
                                         size_t limit) {
  std::vector<MemoryPlan> out;
  const ModelConfig m = config.model.resolved();
  const int64_t ranks = std::max<int64_t>(config.resources.ranks, 1);
  const int64_t batch = config.train.micro_batch * config.train.grad_accum * ranks;  // sequences a step
  std::vector<bool> recompute{config.train.activation_checkpointing};
  if (!config.train.activation_checkpointing) {
    recompute.push_back(true);
  }
  // The first layout at `r` ranks that fits: checkpointing as it is before on, the largest
  // micro-batch that keeps the global batch, and — where `sharded` — the experts replicated, then
  // over every rank, and the lowest ZeRO stage.
  auto first_fit = [&](int64_t r, bool sharded) -> std::optional<MemoryPlan> {
    for (const bool checkpointing : recompute) {
      RunConfig c = config;
      c.train.activation_checkpointing = checkpointing;
      for (int64_t b = config.train.micro_batch; b >= 1; --b) {
        if (batch % (b * r) != 0) {
          continue;  // this layout would train another batch
        }
        for (const int64_t e : {int64_t{1}, r}) {  // the experts over every rank, as the core trains them
          if (e > 1 && (!sharded || !m.moe() || m.n_routed_experts % e != 0)) {
            continue;
          }
          for (int64_t zero = 0; zero <= (sharded && r > 1 ? 3 : 0); ++zero) {
            const MemoryPlan p = plan_memory(c, Layout{r, zero, e, b, batch / (b * r)}, path);
            if (p.total() <= device_bytes) {
              return p;
            }
          }
        }
      }
    }
    return std::nullopt;
  };
  // What the core trains today first (its ranks replicated: only the micro-batch and
  // checkpointing change what a device holds), then sharded layouts at these ranks and more.
  if (auto p = first_fit(ranks, false)) {
    out.push_back(*p);
  }
  for (int64_t r = ranks; r <= std::max<int64_t>(ranks * 8, 8) && r <= 1024 && out.size() < limit; r *= 2) {
    const auto p = first_fit(r, true);
    if (p && (p->layout.zero > 0 || p->layout.expert > 1)) {
      out.push_back(*p);
    }
  }
  return out;
}

std::string format_bytes(double bytes) {
  char buf[32];
  if (bytes >= 1024.0 * 1024 * 1024) {
    std::snprintf(buf, sizeof buf, "%.1f GiB", bytes / (1024.0 * 1024 * 1024));
  } else if (bytes >= 1024.0 * 1024) {
    std::snprintf(buf, sizeof buf, "%.0f MiB", bytes / (1024.0 * 1024));
  } else {
    std::snprintf(buf, sizeof buf, "%.0f KiB", bytes / 1024.0);
  }
  return buf;
}

}  // namespace sweep
