#include "train/step_graph.h"

#include "build_options.h"
#include "util/error.h"
#include "util/text.h"
#ifdef SWEEP_WITH_CUDA
#include <ATen/cuda/CUDAEvent.h>
#include <ATen/cuda/CUDAGraph.h>
#include <c10/cuda/CUDACachingAllocator.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#endif

namespace sweep {

#ifdef SWEEP_WITH_CUDA

namespace {

Batches on_device(const Batches& host, const torch::Device& device) {
  Batches b;
  for (const auto& [x, y] : host) {
    b.emplace_back(x.to(device, /*non_blocking=*/true), y.to(device, /*non_blocking=*/true));
  }
  return b;
}

}  // namespace

struct StepGraph::Impl {
  explicit Impl(const torch::Device& d) : device(d), stream(c10::cuda::getStreamFromPool(false, d.index())) {}

  torch::Device device;
  c10::cuda::CUDAStream stream;
  int eager_steps = 0;                         // since the last reset
  std::unique_ptr<at::cuda::CUDAGraph> graph;  // once captured
  Batches inputs;                              // the graph's own batches on the device
  std::unique_ptr<CapturedAdamW> adamw;
  torch::Tensor values;                        // the graph's output
  std::string failure;                         // why the capture failed ("": it did not): the steps stay eager

  // The graph's stream current while a step is issued, ordered after the caller's and before it.
  struct OnStream {
    c10::cuda::CUDAStream caller, side;
    c10::cuda::CUDAStreamGuard guard;
    explicit OnStream(const c10::cuda::CUDAStream& s)
        : caller(c10::cuda::getCurrentCUDAStream(s.device_index())), side(s), guard(s) {
      at::cuda::CUDAEvent ready;
      ready.record(caller);
      ready.block(side);
    }
    ~OnStream() {
      at::cuda::CUDAEvent done;
      done.record(side);
      done.block(caller);
    }
  };

  void capture(const Batches& host, torch::optim::AdamW& opt, const StepWork& work) {
    inputs.clear();
    for (const auto& [x, y] : host) {
      inputs.emplace_back(torch::zeros_like(x, torch::TensorOptions().device(device)),
                          torch::zeros_like(y, torch::TensorOptions().device(device)));
    }
    adamw = std::make_unique<CapturedAdamW>(opt);
    graph = std::make_unique<at::cuda::CUDAGraph>();
    // what the warm-up left cached goes back to the driver before the graph's own pool takes its
    // share: without it a capture's reserved memory about doubles
    c10::cuda::CUDACachingAllocator::emptyCache();
    graph->capture_begin();  // the default CUDA generator (dropout's) registered: each replay draws anew
    try {
      values = work(inputs, [this](const StepScale& scale) { adamw->step(scale); });
      graph->capture_end();
    } catch (const std::exception& e) {
      // The capture ended (the stream out of capture mode: every later CUDA call of this process
      // would fail otherwise), its pool freed; nothing captured ran, so the state is the warm-up's.
      try {
        graph->capture_end();
      } catch (const std::exception&) {
        // an invalidated capture ends with an error of its own: it has ended all the same
      }
      graph.reset();
      adamw.reset();
      inputs.clear();
      values = torch::Tensor();
      c10::cuda::CUDACachingAllocator::emptyCache();
      failure = first_line(e.what());
    }
  }
};

StepGraph::StepGraph(const torch::Device& device) : m(std::make_unique<Impl>(device)) {}

torch::Tensor StepGraph::step(const Batches& host, double lr, torch::optim::AdamW& opt, const StepWork& work,
                              const Update& eager) {
  Impl::OnStream on(m->stream);
  if (!m->graph && (m->eager_steps < k_warmup || !m->failure.empty())) {
    ++m->eager_steps;
    return work(on_device(host, m->device), eager);
  }
  if (!m->graph) {
    m->capture(host, opt, work);  // nothing ran: this step is the first replay
    if (!m->failure.empty()) {    // or, where the capture failed, the first eager step of the rest
      return work(on_device(host, m->device), eager);
    }
  }
  for (size_t i = 0; i < host.size(); ++i) {
    m->inputs[i].first.copy_(host[i].first, /*non_blocking=*/true);
    m->inputs[i].second.copy_(host[i].second, /*non_blocking=*/true);
  }
  m->adamw->set_learning_rate(lr);
  m->graph->replay();
  m->adamw->counted();
  return m->values;
}

bool StepGraph::captured() const { return m->graph != nullptr; }

const std::string& StepGraph::failure() const { return m->failure; }

void StepGraph::reset() {
  m->graph.reset();
  m->adamw.reset();
  m->inputs.clear();
  m->values = torch::Tensor();
  m->eager_steps = 0;
}

#else

struct StepGraph::Impl {};

StepGraph::StepGraph(const torch::Device& device) {
  throw Error("train.cuda_graph: this build of sweep has no CUDA, and the run trains on " + device.str() +
                  " — remove train.cuda_graph",
              Exit::bad_input);
}

// (never called: no StepGraph is made without CUDA)
torch::Tensor StepGraph::step(const Batches&, double, torch::optim::AdamW&, const StepWork&, const Update&) {
  TORCH_INTERNAL_ASSERT(false, "no StepGraph without CUDA");
}

bool StepGraph::captured() const { return false; }

const std::string& StepGraph::failure() const {
  static const std::string none;
  return none;
}

void StepGraph::reset() {}

#endif

StepGraph::~StepGraph() = default;

}  // namespace sweep
