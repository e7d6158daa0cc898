#include "kernels/attention_amx.h"

#include <ATen/Parallel.h>
#include <dnnl.h>

#include <algorithm>
#include <map>
#include <mutex>
#include <tuple>
#include <vector>

namespace sweep::kernels::amx {

namespace {

void ok(dnnl_status_t status, const char* what) {
  TORCH_CHECK(status == dnnl_success, "oneDNN ", what, " failed with status ", static_cast<int>(status));
}

dnnl_engine_t engine() {
  static const dnnl_engine_t e = [] {
    dnnl_engine_t made = nullptr;
    ok(dnnl_engine_create(&made, dnnl_cpu, 0), "engine");
    return made;
  }();
  return e;
}

// A matmul primitive for one shape, made once and kept (oneDNN's are read-only in execution; the
// scratchpad is the caller's, so that ranks running as threads never share one).
struct Matmul {
  dnnl_primitive_t primitive = nullptr;
  dnnl_memory_desc_t a{}, b{}, c{}, scratch{};
};

// A product's shape: m, n, k; A transposed, B transposed; the row strides of A, B and C as they
// lie in memory; C in fp32 (else bf16).
using Shape = std::tuple<int64_t, int64_t, int64_t, bool, bool, int64_t, int64_t, int64_t, bool>;

const Matmul& matmul_for(const Shape& shape) {
  static std::mutex mutex;
  static std::map<Shape, Matmul> made;
  const std::lock_guard<std::mutex> lock(mutex);
  const auto found = made.find(shape);
  if (found != made.end()) {
    return found->second;
  }
  const auto [m, n, k, ta, tb, lda, ldb, ldc, c_f32] = shape;
  Matmul mm;
  dnnl_dims_t da = {m, k}, db = {k, n}, dc = {m, n};
  dnnl_dims_t sa = {ta ? 1 : lda, ta ? lda : 1}, sb = {tb ? 1 : ldb, tb ? ldb : 1}, sc = {ldc, 1};
  ok(dnnl_memory_desc_init_by_strides(&mm.a, 2, da, dnnl_bf16, sa), "memory desc");
  ok(dnnl_memory_desc_init_by_strides(&mm.b, 2, db, dnnl_bf16, sb), "memory desc");
  ok(dnnl_memory_desc_init_by_strides(&mm.c, 2, dc, c_f32 ? dnnl_f32 : dnnl_bf16, sc), "memory desc");
  dnnl_matmul_desc_t desc;
  ok(dnnl_matmul_desc_init(&desc, &mm.a, &mm.b, nullptr, &mm.c), "matmul desc");
  dnnl_primitive_attr_t attr = nullptr;
  ok(dnnl_primitive_attr_create(&attr), "attr");
  ok(dnnl_primitive_attr_set_scratchpad_mode(attr, dnnl_scratchpad_mode_user), "scratchpad mode");
  dnnl_primitive_desc_t pd = nullptr;
  const dnnl_status_t made_pd = dnnl_primitive_desc_create(&pd, &desc, attr, engine(), nullptr);
  dnnl_primitive_attr_destroy(attr);
  ok(made_pd, "matmul primitive desc");
  mm.scratch = *dnnl_primitive_desc_query_md(pd, dnnl_query_scratchpad_md, 0);
  const dnnl_status_t made_p = dnnl_primitive_create(&mm.primitive, pd);
  dnnl_primitive_desc_destroy(pd);
  ok(made_p, "matmul primitive");
  return made.emplace(shape, mm).first->second;
}

// This thread's stream and scratchpad, made at its first product.
struct ThreadState {
  dnnl_stream_t stream = nullptr;
  std::vector<char> scratch;
  ThreadState() { ok(dnnl_stream_create(&stream, engine(), dnnl_stream_default_flags), "stream"); }
  ~ThreadState() { dnnl_stream_destroy(stream); }
};

// C = op(A) · op(B) for row-major matrices with row strides lda, ldb, ldc: A m × k (k × m when
// ta), B k × n (n × k when tb), C m × n in fp32 or bf16. Called from inside a parallel region, it
// runs on this thread.
void product(int64_t m, int64_t n, int64_t k, const void* a, bool ta, int64_t lda, const void* b, bool tb,
             int64_t ldb, void* c, int64_t ldc, bool c_f32) {
  thread_local ThreadState here;
  const Matmul& mm = matmul_for({m, n, k, ta, tb, lda, ldb, ldc, c_f32});
  here.scratch.resize(std::max<size_t>(dnnl_memory_desc_get_size(&mm.scratch), 1));
  dnnl_memory_t ma = nullptr, mb = nullptr, mc = nullptr, ms = nullptr;
  ok(dnnl_memory_create(&ma, &mm.a, engine(), const_cast<void*>(a)), "memory");
  ok(dnnl_memory_create(&mb, &mm.b, engine(), const_cast<void*>(b)), "memory");
  ok(dnnl_memory_create(&mc, &mm.c, engine(), c), "memory");
  ok(dnnl_memory_create(&ms, &mm.scratch, engine(), here.scratch.data()), "memory");
  const dnnl_exec_arg_t args[] = {
      {DNNL_ARG_SRC, ma}, {DNNL_ARG_WEIGHTS, mb}, {DNNL_ARG_DST, mc}, {DNNL_ARG_SCRATCHPAD, ms}};
  const dnnl_status_t ran = dnnl_primitive_execute(mm.primitive, here.stream, 4, args);
  const dnnl_status_t waited = dnnl_stream_wait(here.stream);
  for (dnnl_memory_t mem : {ma, mb, mc, ms}) {
    dnnl_memory_destroy(mem);
  }
  ok(ran, "matmul");
  ok(waited, "stream wait");
}

// (3, batch · heads, seq, head_size): Q, K and V of each head, each dense.
torch::Tensor split_heads(const cpu::AttentionArgs& s, const torch::Tensor& qkv) {
  return qkv.view({s.batch, s.seq, 3, s.heads, s.head_size}).permute({2, 0, 3, 1, 4}).contiguous();
}

// Query rows a product takes at a time: the rows below see fewer keys, so the products skip the
// scores above the diagonal block by block.
constexpr int64_t k_rows = 256;

// Head bh of a (…, batch · heads, seq, head_size) tensor t of dense heads.
template <typename P>
P* head(P* base, int64_t bh, const cpu::AttentionArgs& s) {
  return base + bh * s.seq * s.head_size;
}

}  // namespace

bool takes(const cpu::AttentionArgs& s, torch::ScalarType dtype) {
  return dtype == torch::kBFloat16 && cpu::ops().amx && head_bytes(s.seq) <= k_thread_bytes;
}

void forward(const cpu::AttentionArgs& s, const torch::Tensor& qkv, torch::Tensor& out, torch::Tensor& lse) {
  using bf16 = c10::BFloat16;
  const int64_t T = s.seq, hs = s.head_size, BH = s.batch * s.heads;
  const torch::Tensor heads = split_heads(s, qkv);
  const bf16* q = heads[0].data_ptr<bf16>();
  const bf16* k = heads[1].data_ptr<bf16>();
  const bf16* v = heads[2].data_ptr<bf16>();
  auto o = torch::empty({BH, T, hs}, qkv.options());
  bf16* o_ptr = o.data_ptr<bf16>();
  float* lse_ptr = lse.data_ptr<float>();
  // One head at a time on each thread: its scores stay in the thread's cache between the products.
  at::parallel_for(0, BH, 1, [&](int64_t begin, int64_t end) {
    std::vector<float> scores(T * T);
    std::vector<bf16> p(T * T);
    for (int64_t bh = begin; bh < end; ++bh) {
      const bf16 *qh = head(q, bh, s), *kh = head(k, bh, s), *vh = head(v, bh, s);
      for (int64_t i0 = 0; i0 < T; i0 += k_rows) {  // Q Kᵀ: query rows i0 .. i1 see keys 0 .. i1
        const int64_t i1 = std::min(T, i0 + k_rows);
        product(i1 - i0, i1, hs, qh + i0 * hs, false, hs, kh, true, hs, scores.data() + i0 * T, T, true);
      }
      cpu::ops().softmax_rows(s, bh, 1, scores.data(), lse_ptr + bh * T, p.data());
      for (int64_t i0 = 0; i0 < T; i0 += k_rows) {  // P̃ V
        const int64_t i1 = std::min(T, i0 + k_rows);
        product(i1 - i0, hs, i1, p.data() + i0 * T, false, T, vh, false, hs, head(o_ptr, bh, s) + i0 * hs, hs, false);
      }
    }
  });
  out.view({s.batch, T, s.heads, hs}).copy_(o.view({s.batch, s.heads, T, hs}).permute({0, 2, 1, 3}));
}

torch::Tensor backward(const cpu::AttentionArgs& s, const torch::Tensor& qkv, const torch::Tensor& out,
                       const torch::Tensor& dout, const torch::Tensor& lse) {
  using bf16 = c10::BFloat16;
  const int64_t B = s.batch, T = s.seq, nh = s.heads, hs = s.head_size, BH = B * nh;
  const torch::Tensor heads = split_heads(s, qkv);
  const bf16* q = heads[0].data_ptr<bf16>();
  const bf16* k = heads[1].data_ptr<bf16>();
  const bf16* v = heads[2].data_ptr<bf16>();
  const torch::Tensor dO = dout.view({B, T, nh, hs}).permute({0, 2, 1, 3}).contiguous();
  const bf16* dO_ptr = dO.data_ptr<bf16>();
  // D = rowsum(dO ∘ O) per head and query, in fp32
  const torch::Tensor d =
      (dout.to(torch::kFloat) * out.to(torch::kFloat)).view({B, T, nh, hs}).sum(-1).permute({0, 2, 1}).contiguous();
  const float* d_ptr = d.data_ptr<float>();
  const float* lse_ptr = lse.data_ptr<float>();
  auto grads = torch::empty({3, BH, T, hs}, qkv.options());  // dQ, dK, dV per head
  bf16* dq = grads[0].data_ptr<bf16>();
  bf16* dk = grads[1].data_ptr<bf16>();
  bf16* dv = grads[2].data_ptr<bf16>();
  at::parallel_for(0, BH, 1, [&](int64_t begin, int64_t end) {
    std::vector<float> scores(T * T), dp(T * T);
    std::vector<bf16> pd(T * T), ds(T * T);
    for (int64_t bh = begin; bh < end; ++bh) {
      const bf16 *qh = head(q, bh, s), *kh = head(k, bh, s), *vh = head(v, bh, s), *dOh = head(dO_ptr, bh, s);
      for (int64_t i0 = 0; i0 < T; i0 += k_rows) {  // query rows i0 .. i1 against keys 0 .. i1
        const int64_t i1 = std::min(T, i0 + k_rows), m = i1 - i0;
        product(m, i1, hs, qh + i0 * hs, false, hs, kh, true, hs, scores.data() + i0 * T, T, true);  // Q Kᵀ
        product(m, i1, hs, dOh + i0 * hs, false, hs, vh, true, hs, dp.data() + i0 * T, T, true);     // dO Vᵀ
      }
      cpu::ops().score_grad_rows(s, bh, 1, scores.data(), dp.data(), lse_ptr + bh * T, d_ptr + bh * T, pd.data(),
                                 ds.data());
      for (int64_t i0 = 0; i0 < T; i0 += k_rows) {
        const int64_t i1 = std::min(T, i0 + k_rows), m = i1 - i0;
        // dQ for query rows i0 .. i1 (keys 0 .. i1); dV and dK for keys i0 .. i1 (query rows i0 .. T)
        product(m, hs, i1, ds.data() + i0 * T, false, T, kh, false, hs, head(dq, bh, s) + i0 * hs, hs, false);  // dS K
        product(m, hs, T - i0, pd.data() + i0 * T + i0, true, T, dOh + i0 * hs, false, hs, head(dv, bh, s) + i0 * hs,
                hs, false);  // P̃ᵀ dO
        product(m, hs, T - i0, ds.data() + i0 * T + i0, true, T, qh + i0 * hs, false, hs, head(dk, bh, s) + i0 * hs,
                hs, false);  // dSᵀ Q
      }
    }
  });
  return grads.view({3, B, nh, T, hs}).permute({1, 3, 0, 2, 4}).reshape({B, T, 3 * nh * hs});
}

}  // namespace sweep::kernels::amx
