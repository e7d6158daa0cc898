// A model's resolved sizes and its parameter and FLOP counts, from the config alone.
#include "config/run_config.h"

#include <cmath>

#include "util/text.h"

namespace sweep {

ModelConfig ModelConfig::resolved() const {
  ModelConfig m = *this;
  const int64_t hd = n_head > 0 ? n_embd / n_head : 0;
  if (m.intermediate_size == 0) {
    m.intermediate_size = m.mlp_activation == MlpActivation::swiglu ? (8 * n_embd / 3 + 7) / 8 * 8 : 4 * n_embd;
  }
  if (m.kv_lora_rank == 0) {
    m.kv_lora_rank = n_embd / 2;
  }
  if (m.qk_nope_head_dim == 0) {
    m.qk_nope_head_dim = hd;
  }
  if (m.qk_rope_head_dim < 0) {
    m.qk_rope_head_dim = m.position == Position::rope ? hd / 2 / 2 * 2 : 0;
  }
  if (m.v_head_dim == 0) {
    m.v_head_dim = hd;
  }
  if (m.moe_intermediate_size == 0) {
    const int64_t share = m.moe_top_k + m.n_shared_experts;
    m.moe_intermediate_size = (m.intermediate_size + share - 1) / share;
  }
  return m;
}

ModelSize model_size(const ModelConfig& given) {
  const ModelConfig m = given.resolved();
  const int64_t C = m.n_embd, H = m.n_head, L = m.n_layer, V = m.padded_vocab(), T = m.block_size;
  // Each count is (weights of matmuls, every other parameter: biases, norms).
  struct Count {
    int64_t matmul = 0, other = 0;
    Count& operator+=(const Count& o) { matmul += o.matmul; other += o.other; return *this; }
    Count times(int64_t n) const { return {matmul * n, other * n}; }
    int64_t all() const { return matmul + other; }
  };
  const bool b = m.linear_bias();
  auto linear = [&](int64_t in, int64_t out, bool bias) { return Count{in * out, bias ? out : 0}; };
  auto norm = [&](int64_t dim) { return Count{0, m.norm == Norm::layernorm ? 2 * dim : dim}; };
  auto mlp = [&](int64_t hidden) {
    Count c = linear(C, hidden, b);
    c += linear(hidden, C, b);
    if (m.mlp_activation == MlpActivation::swiglu) {
      c += linear(C, hidden, b);
    }
    return c;
  };
  Count attention;
  int64_t attention_flops = 0;  // per token, forward + backward: QKᵀ and the weighted sum over T keys
  if (m.attention == Attention::mha) {
    attention = linear(C, 3 * C, m.qkv_bias);
    attention += linear(C, C, b);
    attention_flops = 6 * L * T * 2 * C;
  } else {
    const int64_t dq = m.qk_head_dim();
    if (m.q_lora_rank > 0) {
      attention = linear(C, m.q_lora_rank, false);
      attention += norm(m.q_lora_rank);
      attention += linear(m.q_lora_rank, H * dq, false);
    } else {
      attention = linear(C, H * dq, false);
    }
    attention += linear(C, m.kv_lora_rank + m.qk_rope_head_dim, false);
    attention += norm(m.kv_lora_rank);
    attention += linear(m.kv_lora_rank, H * (m.qk_nope_head_dim + m.v_head_dim), false);
    attention += linear(H * m.v_head_dim, C, false);
    attention_flops = 6 * L * T * H * (dq + m.v_head_dim);
  }
  ModelSize s;
  s.embedding = V * C + (m.position == Position::learned ? T * C : 0);
  Count total = norm(C), active = norm(C);  // ln_f
  const Count head{V * C, 0};               // a matmul every token runs, tied or not
  for (int64_t l = 0; l < L; ++l) {
    Count layer = norm(C).times(2);
    layer += attention;
    Count layer_active = layer;
    if (m.moe_layer(l)) {
      const Count router = linear(C, m.n_routed_experts, false), expert = mlp(m.moe_intermediate_size);
      const Count shared = m.n_shared_experts > 0 ? mlp(m.moe_intermediate_size * m.n_shared_experts) : Count{};
      layer += router;
      layer += expert.times(m.n_routed_experts);
      layer += shared;
      layer_active += router;
      layer_active += expert.times(m.moe_top_k);
      layer_active += shared;
    } else {
      layer += mlp(m.intermediate_size);
      layer_active += mlp(m.intermediate_size);
    }
    total += layer;
    active += layer_active;
  }
  const int64_t untied_head = m.tie_weights ? 0 : V * C;
  s.total = total.all() + s.embedding + untied_head;
  s.active = active.all() + s.embedding + untied_head;
  s.flops_per_token = 6.0 * static_cast<double>(active.matmul + head.matmul) + static_cast<double>(attention_flops);
  return s;
}

}  // namespace sweep
