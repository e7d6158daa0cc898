#include "kernels/onednn.h"

#include <ATen/Parallel.h>
#include <c10/util/Exception.h>
#include <dnnl.h>
#if DNNL_VERSION_MAJOR != 2
#error "kernels/onednn.cpp is written for oneDNN 2.x's C API (Debian 12: libdnnl-dev 2.6); these dnnl.h headers are another version (a PyTorch wheel's? CMakeLists.txt's DNNL_OWN_INCLUDE_DIR should come first)"
#endif

#include <algorithm>
#include <map>
#include <mutex>
#include <tuple>
#include <vector>

namespace sweep::kernels::onednn {

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
  dnnl_memory_desc_t a{}, b{}, c{}, bias{}, scratch{};
};

// A product's shape: m, n, k; A transposed, B transposed; the row strides of A, B and C as they
// lie in memory; C in fp32 (else bf16); a bias; made inside a parallel region (a primitive plans
// its threads when made: one there, all of them outside).
using Shape = std::tuple<int64_t, int64_t, int64_t, bool, bool, int64_t, int64_t, int64_t, bool, bool, bool>;

const Matmul& matmul_for(const Shape& shape) {
  static std::mutex mutex;
  static std::map<Shape, Matmul> made;
  const std::lock_guard<std::mutex> lock(mutex);
  const auto found = made.find(shape);
  if (found != made.end()) {
    return found->second;
  }
  [[maybe_unused]] const auto [m, n, k, ta, tb, lda, ldb, ldc, c_f32, has_bias, in_parallel] = shape;
  Matmul mm;
  dnnl_dims_t da = {m, k}, db = {k, n}, dc = {m, n}, dbias = {1, n};
  dnnl_dims_t sa = {ta ? 1 : lda, ta ? lda : 1}, sb = {tb ? 1 : ldb, tb ? ldb : 1}, sc = {ldc, 1}, sbias = {n, 1};
  ok(dnnl_memory_desc_init_by_strides(&mm.a, 2, da, dnnl_bf16, sa), "memory desc");
  ok(dnnl_memory_desc_init_by_strides(&mm.b, 2, db, dnnl_bf16, sb), "memory desc");
  ok(dnnl_memory_desc_init_by_strides(&mm.c, 2, dc, c_f32 ? dnnl_f32 : dnnl_bf16, sc), "memory desc");
  if (has_bias) {
    ok(dnnl_memory_desc_init_by_strides(&mm.bias, 2, dbias, dnnl_f32, sbias), "memory desc");
  }
  dnnl_matmul_desc_t desc;
  ok(dnnl_matmul_desc_init(&desc, &mm.a, &mm.b, has_bias ? &mm.bias : nullptr, &mm.c), "matmul desc");
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

}  // namespace

void product(int64_t m, int64_t n, int64_t k, const void* a, bool ta, int64_t lda, const void* b, bool tb,
             int64_t ldb, void* c, int64_t ldc, bool c_f32, const float* bias) {
  thread_local ThreadState here;
  const Shape shape{m, n, k, ta, tb, lda, ldb, ldc, c_f32, bias != nullptr, at::in_parallel_region()};
  const Matmul& mm = matmul_for(shape);
  here.scratch.resize(std::max<size_t>(dnnl_memory_desc_get_size(&mm.scratch), 1));
  dnnl_memory_t memories[5] = {};
  dnnl_exec_arg_t args[5];
  int count = 0;
  const auto arg = [&](int which, const dnnl_memory_desc_t& md, const void* data) {
    ok(dnnl_memory_create(&memories[count], &md, engine(), const_cast<void*>(data)), "memory");
    args[count] = {which, memories[count]};
    ++count;
  };
  arg(DNNL_ARG_SRC, mm.a, a);
  arg(DNNL_ARG_WEIGHTS, mm.b, b);
  arg(DNNL_ARG_DST, mm.c, c);
  arg(DNNL_ARG_SCRATCHPAD, mm.scratch, here.scratch.data());
  if (bias != nullptr) {
    arg(DNNL_ARG_BIAS, mm.bias, bias);
  }
  const dnnl_status_t ran = dnnl_primitive_execute(mm.primitive, here.stream, count, args);
  const dnnl_status_t waited = dnnl_stream_wait(here.stream);
  for (int i = 0; i < count; ++i) {
    dnnl_memory_destroy(memories[i]);
  }
  ok(ran, "matmul");
  ok(waited, "stream wait");
}

std::string library_version() {
  const dnnl_version_t* v = dnnl_version();
  return std::to_string(v->major) + "." + std::to_string(v->minor) + "." + std::to_string(v->patch);
}

}  // namespace sweep::kernels::onednn
