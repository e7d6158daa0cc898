// y = x Wᵀ + b on the CPU: fp32 through the fastest sgemm on this instruction set (cpu::Ops::gemm:
// oneDNN's on AVX-512, ATen's — MKL's — on AVX2); bf16 through oneDNN's matmul (AMX tiles where
// the CPU has them) from a bf16 copy of the fp32 weight that is kept between steps and written by
// the fused AdamW as it updates the weight, where autocast casts every weight at every forward and
// its gradient back at every backward — or, on a CPU without bf16 products, widened to fp32.
#pragma once

#include <torch/torch.h>

#include <string>

namespace sweep::kernels {

// x (..., K) fp32, weight (N, K), bias (N) or undefined → (..., N); forward and backward.
torch::Tensor linear(const torch::Tensor& x, const torch::Tensor& weight, const torch::Tensor& bias = {});

// The same in bf16: x (..., K) fp32 or bf16, weight (N, K) fp32, bias (N) fp32 or undefined →
// (..., N) bf16, as LibTorch's linear under autocast computes it. Backward: dx in bf16, dW and db
// in fp32 straight from the products (no bf16 gradient cast back). On a CPU without bf16
// products (cpu::Ops::bf16_matmul), the bf16 operands widened to fp32: in the packing of sweep's
// own GEMM on AVX2 (cpu::Ops::widened_gemm), else in blocks for the fp32 sgemm.
torch::Tensor linear_bf16(const torch::Tensor& x, const torch::Tensor& weight, const torch::Tensor& bias = {});

// Which GEMM the linear layers take on this CPU, in fp32 and in bf16 (what `sweep bench` says):
// a short name for one precision, and a sentence for both.
std::string linear_path(bool bf16);
std::string linear_paths();

// torch::matmul, except that bf16 CPU matrices on a CPU without bf16 products are widened to fp32
// and the product rounded back to bf16: the numerics of a bf16 matmul (fp32 sums, a bf16 result)
// without LibTorch's slow bf16 path there (Muon's Newton–Schulz iteration in a bf16 step).
torch::Tensor matmul(const torch::Tensor& a, const torch::Tensor& b);

// bf16 copies kept for these fp32 weights while this lives: made now, written by the fused AdamW
// in the pass that updates the weight, and made again by linear_bf16 whenever the weight changed in
// any other way (an in-place op: its version counter; new storage). A weight without one is cast
// at each use. Only for weights that stay whole and resident between steps. None on a CPU without
// bf16 products, where linear_bf16 does not read them.
class KeptBf16Copies {
 public:
  explicit KeptBf16Copies(const std::vector<torch::Tensor>& weights);
  ~KeptBf16Copies();
  KeptBf16Copies(const KeptBf16Copies&) = delete;
  KeptBf16Copies& operator=(const KeptBf16Copies&) = delete;

 private:
  std::vector<const c10::TensorImpl*> m_weights;
};

// Whether KeptBf16Copies keeps any on this CPU (one with bf16 products).
bool linear_bf16_keeps_copies();

// On a CPU without bf16 products or sweep's GEMM, the most fp32 bytes linear_bf16 widens at once
// (a block of rows of its operands, at least 64 rows); 0 elsewhere (the memory plan's figure). The
// GEMM's own buffers (B packed whole: a widened weight; a block of rows per thread) are
// allocations of its own, outside tensor memory, as an sgemm's packing is.
int64_t linear_bf16_widened_block();

// The kept copy of `weight` as it is now (made again if stale); undefined when none is kept.
torch::Tensor kept_bf16_copy(const torch::Tensor& weight);
// For a writer that updates `weight` through its data (the fused AdamW): where its kept copy lies,
// to be written in the same pass, or null when none is kept. The writer then calls
// bf16_copy_written(weight).
c10::BFloat16* bf16_copy_target(const torch::Tensor& weight);
void bf16_copy_written(const torch::Tensor& weight);

torch::Tensor linear_reference(const torch::Tensor& x, const torch::Tensor& weight, const torch::Tensor& bias = {});

}  // namespace sweep::kernels
