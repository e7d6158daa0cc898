#include "train/recompute.h"

#include "train/checkpoint.h"
#include <ATen/autocast_mode.h>
#include "train/precision.h"

namespace sweep {

namespace {

// The block's output and, for an MoE layer with an auxiliary loss, that loss (else undefined).
std::pair<torch::Tensor, torch::Tensor> run_block(BlockImpl& block, const torch::Tensor& x) {
  torch::Tensor y = block.forward(x);
  torch::Tensor aux = block.moe ? block.moe->aux_loss : torch::Tensor();
  return {y, aux};
}

// For its lifetime: the device's generator at the state the first forward drew from, and an MoE
// layer marked as rerunning (its tokens were counted by the first forward).
class Rerun {
 public:
  Rerun(const torch::Device& device, const torch::Tensor& first_forward, MoEImpl* moe)
      : m_device(device), m_now(rng_state(device)), m_moe(moe) {
    set_rng_state(device, first_forward);
    if (m_moe) {
      m_moe->recomputing = true;
    }
  }
  ~Rerun() {
    if (m_moe) {
      m_moe->recomputing = false;
    }
    set_rng_state(m_device, m_now);
  }
  Rerun(const Rerun&) = delete;
  Rerun& operator=(const Rerun&) = delete;

 private:
  torch::Device m_device;
  torch::Tensor m_now;
  MoEImpl* m_moe;
};

// A reentrant checkpoint: backward calls torch::autograd::backward on the rerun, which
// accumulates the block's weight gradients into their .grad (as a plain backward does); a caller
// of torch::autograd::grad would get no weight gradients from a checkpointed block.
struct CheckpointedBlock : torch::autograd::Function<CheckpointedBlock> {
  static torch::autograd::variable_list forward(torch::autograd::AutogradContext* ctx, const torch::Tensor& x,
                                                BlockImpl* block, BlockWeights* weights) {
    const torch::Device device = x.device();
    ctx->saved_data["block"] = reinterpret_cast<int64_t>(block);
    ctx->saved_data["weights"] = reinterpret_cast<int64_t>(weights);
    ctx->saved_data["rng"] = rng_state(device);  // before the block's dropout draws
    ctx->saved_data["autocast"] = at::autocast::is_autocast_enabled(device.type());
    ctx->save_for_backward({x});
    GatheredBlock gathered(weights, *block);
    auto [y, aux] = run_block(*block, x);  // autograd is off here: nothing is kept but x
    if (aux.defined()) {
      return {y, aux};
    }
    return {y};
  }

  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads) {
    auto* block = reinterpret_cast<BlockImpl*>(ctx->saved_data["block"].toInt());
    auto* weights = reinterpret_cast<BlockWeights*>(ctx->saved_data["weights"].toInt());
    GatheredBlock gathered(weights, *block);
    const torch::Tensor saved = ctx->get_saved_variables()[0];
    const torch::Device device = saved.device();
    const torch::Tensor x = saved.detach().requires_grad_(true);
    torch::Tensor y, aux;
    {
      // The rerun draws the first forward's dropout; the step's later draws go on from where they
      // are — and the generator and the MoE flag are put back even if the rerun throws.
      Rerun rerun(device, ctx->saved_data["rng"].toTensor(), block->moe ? block->moe.get() : nullptr);
      torch::AutoGradMode grad_on(true);
      AutocastScope autocast(ctx->saved_data["autocast"].toBool() ? Precision::bf16 : Precision::fp32, device.type());
      std::tie(y, aux) = run_block(*block, x);
    }
    std::vector<torch::Tensor> outputs{y}, output_grads{grads[0]};
    if (aux.defined() && grads.size() > 1 && grads[1].defined()) {
      outputs.push_back(aux);
      output_grads.push_back(grads[1]);
    }
    torch::autograd::backward(outputs, output_grads);  // the block's weights get their gradients here
    if (block->moe) {
      block->moe->aux_loss = torch::Tensor();  // the rerun's: spent, and it would hold its graph until the next step
    }
    if (weights != nullptr) {
      weights->reduce_gradients(*block);
    }
    return {x.grad(), torch::Tensor(), torch::Tensor()};
  }
};

}  // namespace

torch::Tensor checkpointed_block(BlockImpl& block, const torch::Tensor& x, BlockWeights* weights) {
  const auto out = CheckpointedBlock::apply(x, &block, weights);
  if (block.moe) {
    block.moe->aux_loss = out.size() > 1 ? out[1] : torch::Tensor();
  }
  return out[0];
}

}  // namespace sweep
