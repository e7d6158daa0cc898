#include "train/recompute.h"

#include "train/compat.h"
#include "train/precision.h"

namespace sweep {

namespace {

// The default generator of `device`: dropout's (and the fused attention's mask seed's, on the CPU).
at::Generator generator_of(const torch::Device& device) {
  return device.is_cpu() ? at::detail::getDefaultCPUGenerator() : at::globalContext().defaultGenerator(device);
}

torch::Tensor generator_state(const torch::Device& device) {
  at::Generator gen = generator_of(device);
  std::lock_guard<std::mutex> lock(gen.mutex());
  return gen.get_state();
}

void set_generator_state(const torch::Device& device, const torch::Tensor& state) {
  at::Generator gen = generator_of(device);
  std::lock_guard<std::mutex> lock(gen.mutex());
  gen.set_state(state);
}

// The block's output and, for an MoE layer with an auxiliary loss, that loss (else undefined).
std::pair<torch::Tensor, torch::Tensor> run_block(BlockImpl& block, const torch::Tensor& x) {
  torch::Tensor y = block.forward(x);
  torch::Tensor aux = block.moe ? block.moe->aux_loss : torch::Tensor();
  return {y, aux};
}

struct CheckpointedBlock : torch::autograd::Function<CheckpointedBlock> {
  static torch::autograd::variable_list forward(torch::autograd::AutogradContext* ctx, const torch::Tensor& x,
                                                BlockImpl* block) {
    const torch::Device device = x.device();
    ctx->saved_data["block"] = reinterpret_cast<int64_t>(block);
    ctx->saved_data["rng"] = generator_state(device);  // before the block's dropout draws
    ctx->saved_data["autocast"] = compat::autocast_enabled(device.type());
    ctx->save_for_backward({x});
    auto [y, aux] = run_block(*block, x);  // autograd is off here: nothing is kept but x
    if (aux.defined()) {
      return {y, aux};
    }
    return {y};
  }

  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads) {
    auto* block = reinterpret_cast<BlockImpl*>(ctx->saved_data["block"].toInt());
    const torch::Tensor saved = ctx->get_saved_variables()[0];
    const torch::Device device = saved.device();
    const torch::Tensor x = saved.detach().requires_grad_(true);
    // The rerun draws the first forward's dropout; the step's later draws go on from where they are.
    const torch::Tensor now = generator_state(device);
    set_generator_state(device, ctx->saved_data["rng"].toTensor());
    torch::Tensor y, aux;
    {
      torch::AutoGradMode grad_on(true);
      AutocastScope autocast(ctx->saved_data["autocast"].toBool() ? "bf16" : "fp32", device.type());
      if (block->moe) {
        block->moe->recomputing = true;  // its tokens were counted by the first forward
      }
      std::tie(y, aux) = run_block(*block, x);
      if (block->moe) {
        block->moe->recomputing = false;
      }
    }
    set_generator_state(device, now);
    std::vector<torch::Tensor> outputs{y}, output_grads{grads[0]};
    if (aux.defined() && grads.size() > 1 && grads[1].defined()) {
      outputs.push_back(aux);
      output_grads.push_back(grads[1]);
    }
    torch::autograd::backward(outputs, output_grads);  // the block's weights get their gradients here
    if (block->moe) {
      block->moe->aux_loss = torch::Tensor();  // the rerun's: spent, and it would hold its graph until the next step
    }
    return {x.grad(), torch::Tensor()};
  }
};

}  // namespace

torch::Tensor checkpointed_block(BlockImpl& block, const torch::Tensor& x) {
  const auto out = CheckpointedBlock::apply(x, &block);
  if (block.moe) {
    block.moe->aux_loss = out.size() > 1 ? out[1] : torch::Tensor();
  }
  return out[0];
}

}  // namespace sweep
