#include "train/trainer.h"

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <thread>

#include "build_options.h"
#include "config/branch.h"
#include "config/sweep_spec.h"
#include "data/dataset.h"
#include "parallel/parallel.h"
#include "protocol/events.h"
#include "train/checkpoint.h"
#include "train/device.h"
#include "train/evaluate_loss.h"
#include "train/optim.h"
#include "train/precision.h"
#include "train/schedule.h"
#include "train/sharded/checkpoint_shards.h"
#include "train/sharded/state.h"
#include "train/step_graph.h"
#include "util/build_info.h"
#include "util/error.h"
#include "util/fs.h"
#include "util/signals.h"
#include "util/text.h"

namespace sweep {

namespace field = events::field;

std::shared_ptr<const TrainData> load_train_data(const RunConfig& c) {
  DatasetInfo info = read_dataset(c.data.location());
  // Splits too small for this model, named before any shard is opened.
  const int64_t window = c.model.block_size + 1;
  for (const auto& [split, least] : {std::pair{"train", window}, std::pair{"val", int64_t{2}}, std::pair{"test", int64_t{2}}}) {
    if (info.splits.at(split).tokens < least) {
      throw Error((fs::path(info.dir) / "dataset.yaml").string() + ": the " + split + " split has " +
                      std::to_string(info.splits.at(split).tokens) + " tokens, fewer than " +
                      (std::string(split) == "train" ? "one window of model.block_size+1 = " + std::to_string(window)
                                                     : std::string("2 (one prediction)")) +
                      " — use a smaller block_size or more data",
                  Exit::bad_input);
    }
  }
  auto data = std::make_shared<TrainData>();
  data->vocab_size = info.vocab_size;
  data->train = std::make_shared<ShardTokens>(info, "train");
  data->val = std::make_shared<ShardTokens>(info, "val");
  data->test = std::make_shared<ShardTokens>(info, "test");
  data->test_bytes = info.splits.at("test").bytes;
  return data;
}

namespace {

// The dropout stream must differ from the init stream even when both seeds are equal, and
// from rank to rank.
uint64_t dropout_seed(int64_t data_seed, int64_t rank) {
  return static_cast<uint64_t>(data_seed) * 0x9E3779B97F4A7C15ull + 0x632BE59BD9B4E019ull +
         static_cast<uint64_t>(rank);
}

// Faults for the scheduler's tests, compiled only into test builds (-DSWEEP_TEST_HOOKS=ON): a
// file `test-fault` in the run directory holding "crash_at_step:N" aborts the worker after step
// N ("crash_once_at_step:N": once, the file removed first, so that its retry goes on);
// "oom_at_step:N" fails there the way LibTorch's CPU allocator does when memory runs out;
// "disk_full_at_step:N" as a write to a full disk does (exit 74).
void fault_hook(const std::string& run_dir, int64_t step) {
#ifdef SWEEP_TEST_HOOKS
  const fs::path fault = fs::path(run_dir) / "test-fault";
  if (run_dir.empty() || !fs::exists(fault)) {
    return;
  }
  const std::string what = trim(read_file(fault));
  if (what == "crash_at_step:" + std::to_string(step) || what == "crash_once_at_step:" + std::to_string(step)) {
    if (what.starts_with("crash_once")) {
      fs::remove(fault);
    }
    std::fprintf(stderr, "test-fault: crashing at step %lld\n", static_cast<long long>(step));
    std::abort();
  }
  if (what == "disk_full_at_step:" + std::to_string(step)) {
    throw io_error("write", (fs::path(run_dir) / "events.jsonl").string(), ENOSPC);
  }
  if (what == "oom_at_step:" + std::to_string(step)) {
    throw std::runtime_error("test-fault: DefaultCPUAllocator: can't allocate memory: you tried to allocate "
                             "68719476736 bytes. Error code 12 (Cannot allocate memory)");
  }
#else
  (void)run_dir;
  (void)step;
#endif
}

// For the watchdog's tests (test builds only): "slow_eval_ms:N" in the run directory's
// `test-fault` makes every evaluation batch (validation and test) take N ms more. 0 otherwise.
int64_t slow_eval_ms(const std::string& run_dir) {
#ifdef SWEEP_TEST_HOOKS
  const fs::path fault = fs::path(run_dir) / "test-fault";
  if (!run_dir.empty() && fs::exists(fault)) {
    const std::string what = trim(read_file(fault));
    if (what.rfind("slow_eval_ms:", 0) == 0) {
      return std::stoll(what.substr(13));
    }
  }
#else
  (void)run_dir;
#endif
  return 0;
}

}  // namespace

Trainer::Trainer(RunConfig config, std::shared_ptr<const TrainData> data, Communicator* comm)
    : m_cfg(std::move(config)),
      m_data(std::move(data)),
      m_comm(comm),
      m_rank(comm != nullptr ? comm->rank() : 0),
      m_device(m_cfg.resources.device) {
  m_cfg.world_size = comm != nullptr ? comm->world() : 1;
  if (m_cfg.model.vocab_size == 0) {
    m_cfg.model.vocab_size = m_data->vocab_size;
  } else if (m_cfg.model.vocab_size < m_data->vocab_size) {
    throw Error("model.vocab_size " + std::to_string(m_cfg.model.vocab_size) + " is smaller than the dataset's " +
                    std::to_string(m_data->vocab_size) + " — remove model.vocab_size to use the dataset's",
                Exit::bad_input);
  }
  configure_matmul_precision(m_cfg.train.precision);
  make_current(m_device);

  // ---- weights from init_seed (each parameter by its name: see GPTImpl) ----
  m_model = GPT(m_cfg.model, m_cfg.seeds.init);
  m_model->set_fused(m_cfg.train.fused);
  if (m_cfg.train.cuda_kernels && !m_device.is_cuda()) {
    throw Error("train.cuda_kernels: sweep's CUDA kernels run on a GPU, and this run trains on " + m_device.str() +
                    " — remove train.cuda_kernels (on a CPU, train.fused chooses the fused kernels)",
                Exit::bad_input);
  }
  if (const std::string problem = cuda_graph_problem(m_cfg, m_device.is_cuda()); !problem.empty()) {
    throw Error(problem, Exit::bad_input);
  }
  m_model->set_cuda_kernels(m_cfg.train.cuda_kernels);
  m_model->activation_checkpointing = m_cfg.train.activation_checkpointing;
  m_model->to(m_device);
  m_num_params = m_model->num_params();
  m_state = std::make_unique<TrainState>(m_model, m_cfg, m_comm);
  if (m_cfg.train.cuda_graph) {
    m_graph = std::make_unique<StepGraph>(m_device);
  }

  // ---- batch order and dropout from data_seed ----
  torch::manual_seed(dropout_seed(m_cfg.seeds.data, m_rank));
  m_loader = std::make_unique<BatchLoader>(*m_data->train, m_cfg.model.block_size, m_cfg.seeds.data);
}

Trainer::~Trainer() = default;

torch::optim::Optimizer& Trainer::optimizer() { return m_state->optimizer(); }

void Trainer::gather_weights() { m_state->gather_weights(); }

void Trainer::release_weights() { m_state->release_weights(); }

std::pair<torch::Tensor, torch::Tensor> Trainer::host_batch(int64_t step, int64_t micro) {
  const int64_t B = m_cfg.train.micro_batch, world = m_cfg.world_size;
  // This rank's slice of the step's global sequences: the same global order for any
  // (world, accum) split of one batch.
  const int64_t first = step * B * m_cfg.train.grad_accum * world + (micro * world + m_rank) * B;
  // On a GPU the batch is filled in page-locked memory and copied without waiting: a copy from
  // pageable memory would synchronise the host with the device on every micro-batch.
  const auto host = torch::TensorOptions().dtype(torch::kLong).pinned_memory(m_device.is_cuda());
  auto x = torch::empty({B, m_cfg.model.block_size}, host);  // (B, T)
  auto y = torch::empty({B, m_cfg.model.block_size}, host);  // (B, T)
  m_loader->fill(first, B, x.data_ptr<int64_t>(), y.data_ptr<int64_t>());
  return {x, y};
}

std::pair<torch::Tensor, torch::Tensor> Trainer::batch(int64_t step, int64_t micro) {
  auto [x, y] = host_batch(step, micro);
  return {x.to(m_device, /*non_blocking=*/true), y.to(m_device, /*non_blocking=*/true)};
}

torch::Tensor Trainer::device_step(const Batches& batches, const Update& update, StepStats& s) {
  const int64_t accum = m_cfg.train.grad_accum;
  // ---- gradient accumulation: loss / grad_accum, one backward per micro-batch; the losses are
  // summed on the device ----
  torch::Tensor loss_sum = torch::zeros({1}, torch::TensorOptions().dtype(torch::kDouble).device(m_device));
  m_state->begin_step();
  for (const auto& [x, y] : batches) {
    torch::Tensor loss, objective;
    {
      AutocastScope autocast(m_cfg.train.precision, m_device.type());
      loss = m_model->loss(x, y);
      const torch::Tensor aux = m_model->aux_loss();  // MoE load balancing; not part of the logged loss
      objective = aux.defined() ? loss + aux : loss;
    }
    (objective / static_cast<double>(accum)).backward();
    loss_sum += loss.detach().to(torch::kDouble);
    if (m_alive) {
      m_alive();  // a long step of many micro-batches is not a stuck one
    }
  }
  loss_sum /= static_cast<double>(accum);
  torch::Tensor moe_stats = m_model->take_moe_stats();  // summed over this rank's micro-batches
  // ---- data parallel: one average of the gradients per optimizer step, never per micro-step;
  // the loss averaged and a stop agreed on in one more small all-reduce. A non-finite loss on
  // any rank makes the average non-finite on every rank, so all of them skip the step and end as
  // diverged. ----
  m_state->reduce_gradients();
  torch::Tensor stop;  // data parallel: how many ranks were asked to stop
  if (m_comm != nullptr && m_comm->world() > 1) {
    torch::Tensor shared = torch::cat({loss_sum, torch::full({1}, stop_requested() ? 1.0 : 0.0, loss_sum.options())});
    if (moe_stats.defined()) {
      shared = torch::cat({shared, moe_stats});
    }
    m_comm->all_reduce_sum(shared);
    loss_sum = shared.narrow(0, 0, 1) / static_cast<double>(m_comm->world());
    stop = shared.narrow(0, 1, 1);
    if (moe_stats.defined()) {
      moe_stats = shared.narrow(0, 2, moe_stats.numel());
    }
  }

  // ---- global grad norm (logged before clipping), clip, AdamW: the clip factor and the skip of
  // a non-finite step decided on the device (train/optim.h) ----
  const StepScale scale = step_scale(loss_sum, m_state->grad_norm(), m_cfg.train.grad_clip);
  const auto t_opt = std::chrono::steady_clock::now();
  update(scale);
  s.optimizer_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t_opt).count();
  if (moe_stats.defined()) {  // the balancing bias moves with the weights, after the step (MoE reads its loads here)
    s.moe = m_model->end_moe_step(moe_stats, accum * m_cfg.world_size, scale.skip);
  }
  m_state->end_step();
  // ---- the step's loss, norm and stop flag, for the host ----
  std::vector<torch::Tensor> values{loss_sum.reshape({1}), scale.norm.to(torch::kDouble).reshape({1})};
  if (stop.defined()) {
    values.push_back(stop);
  }
  return torch::cat(values);
}

IssuedStep Trainer::issue_step() {
  IssuedStep issued;
  issued.started = std::chrono::steady_clock::now();
  StepStats& s = issued.stats;
  s.step = m_step;
  s.lr = learning_rate(m_cfg, m_step);
  m_model->train();
  Batches host;
  for (int64_t micro = 0; micro < m_cfg.train.grad_accum; ++micro) {
    host.push_back(host_batch(m_step, micro));
  }
  const Update eager = [&](const StepScale& scale) { m_state->step(s.lr, scale, m_step); };
  const StepWork work = [&](const Batches& batches, const Update& update) { return device_step(batches, update, s); };
  torch::Tensor values;
  if (m_graph) {  // train.cuda_graph: warm up, capture once, replay
    values = m_graph->step(host, s.lr, m_state->optimizer(), work, eager);
  } else {
    Batches batches;
    for (const auto& [x, y] : host) {
      batches.emplace_back(x.to(m_device, /*non_blocking=*/true), y.to(m_device, /*non_blocking=*/true));
    }
    values = work(batches, eager);
  }
  ++m_step;
  // ---- the step's values on their way to the host, not waited for ----
  issued.values = DeviceReadback(values);
  return issued;
}

StepStats Trainer::read_step(IssuedStep& issued, std::optional<std::chrono::steady_clock::time_point> until) {
  const std::vector<double> v = issued.values.get();
  StepStats s = issued.stats;
  s.loss = v[0];
  s.grad_norm = v[1];
  if (v.size() > 2) {
    m_stop = v[2] > 0;  // every rank reads the same sum after the same step: they stop together
  }
  s.seconds = std::chrono::duration<double>(until.value_or(std::chrono::steady_clock::now()) - issued.started).count();
  return s;
}

StepStats Trainer::train_step() {
  IssuedStep issued = issue_step();
  return read_step(issued);
}

double Trainer::evaluate(const std::string& split, const std::function<void()>& alive) {
  return evaluate_split(split, false, alive).mean();
}

EvalLoss Trainer::evaluate_split(const std::string& split, bool blocks, const std::function<void()>& alive) {
  const bool test = split == "test";
  m_state->begin_eval();
  EvalLoss loss = evaluate_loss(m_model, test ? *m_data->test : *m_data->val, test ? 0 : m_cfg.eval.val_tokens,
                                m_cfg.train.micro_batch, m_cfg.train.precision, m_device, blocks, alive);
  m_state->end_eval();
  return loss;
}

void Trainer::save(const std::string& path, const std::function<void()>& alive) {
  const CheckpointMeta meta{m_step, m_cfg.tokens_per_step(), m_cfg.identity_json().dump()};
  if (m_state->sharded()) {  // each rank writes what it holds (train/sharded/checkpoint_shards.h)
    save_sharded_checkpoint(path, m_state->shard_entries(), m_state->adam_steps(), m_state->describe().substr(2), meta,
                            m_device, *m_comm, alive);
    return;
  }
  std::vector<torch::Tensor> rng_states;
  if (m_comm != nullptr && m_comm->world() > 1) {
    rng_states = m_comm->all_gather(rng_state(m_device));  // every rank takes part; rank 0 writes
  }
  if (m_rank == 0) {
    save_checkpoint(path, m_model, m_state->optimizer(), meta, m_device, rng_states, alive, m_state->muon_state());
    remove_unnamed_shards(path);  // a sharded run's, once it is resumed unsharded and checkpointed twice
  }
}

void Trainer::check_same_run(const CheckpointMeta& meta, const std::string& path) const {
  // The ranks and the accumulation may differ (a run resumed at other ranks: the checkpoint is
  // resharded); the batch of a step may not.
  nlohmann::json written = RunConfig::across_layouts(nlohmann::json::parse(meta.config_json));
  nlohmann::json here = RunConfig::across_layouts(m_cfg.identity_json());
  if (m_branching) {  // the parent's, at the branch step: the same run but for what a branch may change
    if (meta.step != m_cfg.branch.step) {
      throw Error("checkpoint " + path + " holds step " + std::to_string(meta.step) + ", and this run branches at " +
                      std::to_string(m_cfg.branch.step) + " — remove it: `sweep run` puts its parent's there again",
                  Exit::bad_input);
    }
    written = across_branch(std::move(written));
    here = across_branch(std::move(here));
  }
  if (written != here) {
    if (m_branching) {
      throw Error("checkpoint " + path + " is not the checkpoint of a run this one may branch from (run " +
                      m_cfg.branch.from + ") — remove it: `sweep run` puts its parent's there again",
                  Exit::bad_input);
    }
    if (const auto moved = RunConfig::other_device(written, here, "the run of checkpoint " + path)) {
      throw Error(*moved, Exit::bad_input);
    }
    throw Error("checkpoint " + path + " belongs to another config — resume with the run's own config.yaml",
                Exit::bad_input);
  }
  if (meta.tokens_per_step != m_cfg.tokens_per_step()) {
    const int64_t per_accum = m_cfg.train.micro_batch * m_cfg.model.block_size * m_cfg.world_size;
    const bool fits = meta.tokens_per_step % per_accum == 0;
    throw Error("checkpoint " + path + " was written with " + std::to_string(meta.tokens_per_step) +
                    " tokens per step, this run has " + std::to_string(m_cfg.tokens_per_step()) +
                    " (micro_batch × block_size × grad_accum × ranks) — at other ranks, set train.grad_accum so "
                    "that the product is the same" +
                    (fits ? " (--set train.grad_accum=" + std::to_string(meta.tokens_per_step / per_accum) + " at " +
                                std::to_string(m_cfg.world_size) + " rank" + (m_cfg.world_size > 1 ? "s" : "") + ")"
                          : ""),
                Exit::bad_input);
  }
}

std::string Trainer::load(const std::string& path) {
  CheckpointMeta meta;
  std::string note;
  if (const auto shards = ShardReader::open(path)) {  // a sharded checkpoint: read into this layout
    check_same_run(shards->meta(), path);
    meta = shards->load(m_state->shard_reads(shards->adam_steps()), m_rank, m_device, m_comm);
    const std::string here = m_state->sharded() ? m_state->describe().substr(2) : "unsharded";
    if (shards->world() != m_cfg.world_size || shards->layout() != here) {
      note = "the checkpoint was written with " + shards->layout() + "; resharded as it was read (" + here +
             (m_cfg.world_size > 1 ? "" : ", one process") + ")";
    }
  } else {
    // A checkpoint of one file: read as unsharded training reads it, then this rank's share kept.
    const std::unique_ptr<torch::optim::AdamW> whole = m_state->sharded() ? m_state->for_load() : nullptr;
    meta = load_checkpoint(path, m_model, whole ? *whole : m_state->optimizer(), m_device, m_rank, m_state->muon_state());
    if (whole) {
      m_state->adopt(*whole);
    }
    check_same_run(meta, path);
  }
  m_step = meta.step;
  if (m_graph) {  // what it captured (the weights, AdamW's moments) was replaced
    m_graph->reset();
  }
  if (meta.rng_restored) {
    return note;
  }
  // A stream of another device type's generator, or none for this rank, cannot go on here: a new
  // one, the same for the same (data_seed, rank, step), so that the resumed run is still a
  // function of its seeds.
  torch::manual_seed(dropout_seed(m_cfg.seeds.data, m_rank) ^ (0xD1B54A32D192ED03ull * static_cast<uint64_t>(m_step + 1)));
  return (note.empty() ? "" : note + "; ") +
         (meta.rng_device.empty() ? "the checkpoint holds no dropout stream for rank " + std::to_string(m_rank) +
                                        " (it was written by fewer ranks)"
                                  : "the dropout stream was written on " + meta.rng_device + ", this run is on " +
                                        m_device.str()) +
         ": it goes on from a new seed of (data_seed, rank, step), not where it stopped";
}

std::pair<bool, std::string> Trainer::resume(const std::string& path) {
  const std::string previous = previous_checkpoint(path);
  std::string problems;
  for (const std::string& candidate : {path, previous}) {
    std::optional<std::string> problem;
    if (!fs::exists(candidate)) {
      // A save stopped between setting the latest aside and putting the new one in place.
      problem = candidate == path && fs::exists(previous) ? std::optional<std::string>("missing") : std::nullopt;
    } else {
      try {
        const std::string inexact = load(candidate);  // checks it whole first, and changes nothing when it is not
        std::string note = problems.empty() ? "" : problems + " — resumed from " + candidate + " at step " +
                                                       std::to_string(m_step);
        if (!inexact.empty()) {
          note += (note.empty() ? "" : "; ") + inexact;
        }
        return {true, note};
      } catch (const CheckpointDamaged& e) {
        problem = e.problem();
      }
      if (m_rank == 0) {
        std::error_code ignored;  // kept for a look, out of the way of the next save
        fs::rename(candidate, candidate + ".damaged", ignored);
      }
    }
    if (problem) {
      problems += (problems.empty() ? "checkpoint " : "; ") + candidate + ": " + *problem;
    }
  }
  return {false, problems.empty() ? "" : problems + " — no whole checkpoint: the run starts over from step 0"};
}

std::string Trainer::start_branch(const std::string& path) {
  if (!fs::exists(path)) {
    throw Error("this run branches from run " + m_cfg.branch.from + " at step " + std::to_string(m_cfg.branch.step) +
                    ", and its start, " + path + ", is not there — `sweep run` puts it there from its parent's "
                    "checkpoint (a run of a sweep file with `branch:`)",
                Exit::bad_input);
  }
  m_branching = true;
  struct Reset {
    bool& b;
    ~Reset() { b = false; }
  } reset{m_branching};
  std::string note = load(path);
  set_adamw_options(m_state->optimizer(), m_cfg.train);
  note = "branched from run " + m_cfg.branch.from + " at step " + std::to_string(m_step) +
         (note.empty() ? "" : "; " + note);
  return note;
}

// What one run() keeps beside the trainer: its sink, its checkpoint file, its heartbeats, its start.
struct Trainer::RunContext {
  Trainer& t;
  EventSink& ev;
  std::string ckpt;  // "" without a run folder: no checkpoints
  int64_t tps;
  int64_t slow_ms;   // test builds: evaluations made slow for the watchdog's tests
  std::chrono::steady_clock::time_point started = std::chrono::steady_clock::now();

  // The heartbeat of a long phase (micro-batches, evaluations, checkpoint writes): the scheduler
  // hears that the run lives.
  std::function<void()> alive(const char* phase) const {
    return [this, phase]() {
      ev.alive(t.m_step, phase);
      if (slow_ms > 0 && (std::string(phase) == "eval" || std::string(phase) == "test")) {
        std::this_thread::sleep_for(std::chrono::milliseconds(slow_ms));
      }
    };
  }
  void eval_val(const std::function<void()>& beat) const {
    const double val = t.evaluate("val", beat);
    ev.emit(events::eval, {{field::split, events::val_split},
                           {field::step, t.m_step},
                           {field::tokens, t.m_step * tps},
                           {field::loss, json_number(val)}});
    ev.note("step " + std::to_string(t.m_step) + ": val loss " + std::to_string(val));
  }
  void checkpoint() const {
    if (ckpt.empty()) {
      return;
    }
    t.save(ckpt, alive("checkpoint"));
    ev.emit(events::checkpoint, {{field::step, t.m_step}});
  }
  // The end event of a run that stops early (preempted, diverged) after `steps` steps (-1: the
  // trainer's), and its result.
  RunResult stop_early(RunState status, const std::string& reason, int64_t steps = -1) const {
    const int64_t step = steps < 0 ? t.m_step : steps;
    ev.emit(events::end, {{field::status, to_string(status)},
                          {field::step, step},
                          {field::tokens, step * tps},
                          {field::reason, reason}});
    RunResult r;
    r.status = status;
    r.step = step;
    r.reason = reason;
    return r;
  }
};

void Trainer::announce_start(EventSink& ev, bool resumed, const std::string& checkpoint_note) const {
  const int64_t total = m_cfg.total_steps();
  const int64_t tps = m_cfg.tokens_per_step();
  const int64_t active_params = model_size(m_model->config).active;
  ev.emit(events::start, {{field::schema, events::k_events_version},
                          {field::step, m_step},
                          {field::total_steps, total},
                          {field::tokens_per_step, tps},
                          {field::params, m_num_params},
                          {field::active_params, active_params},
                          {field::threads, at::get_num_threads()},
                          {field::device, m_device.str()},
                          {field::precision, m_cfg.train.precision},
                          {field::fused, m_cfg.train.fused},
                          {field::attention, m_model->attention(m_device)},
                          {field::resumed, resumed},
                          {field::checkpoint_problem, checkpoint_note},
                          {field::code, code_commit()},
                          {field::numerics, k_numerics_version},
                          {field::identity, run_id_of(m_cfg, 0)}});
  ev.note((resumed ? "resumed at step " + std::to_string(m_step) : std::string("started")) + ": " +
          std::to_string(total) + " steps of " + format_count(static_cast<double>(tps)) + " tokens, " +
          format_count(static_cast<double>(m_num_params)) + " parameters" +
          (m_cfg.model.moe() ? " (" + format_count(static_cast<double>(active_params)) + " active)" : "") +
          ", " +
          std::to_string(at::get_num_threads()) + " threads, " + to_string(m_cfg.train.precision) +
          (m_cfg.train.fused ? ", fused kernels" : ", reference ops") +
          (m_cfg.train.optimizer == Optimizer::muon ? ", Muon on the blocks' matrices" : "") + m_state->describe());
  if (m_cfg.parallel.zero > 0 && m_cfg.world_size == 1) {
    ev.note("parallel.zero: " + std::to_string(m_cfg.parallel.zero) +
            " with one rank: nothing to shard, the run trains unsharded (the same run)");
  }
}

std::optional<RunResult> Trainer::train_steps(const RunContext& c, const RunOptions& o) {
  EventSink& ev = c.ev;
  const int64_t total = m_cfg.total_steps();
  const int64_t tps = c.tps;
  double step_seconds = 0;  // moving average, for the ETA
  // The last step issued, whose loss and norm are not read yet: read once the next one is issued
  // (a GPU runs it meanwhile), or before anything that needs the run's state (an evaluation, a
  // checkpoint, a stop, the end). Its event then goes out; a non-finite step (skipped on the
  // device) ends the run as diverged, one step later than it happened, with the same record.
  std::optional<IssuedStep> pending;
  bool graph_failure_said = false;
  auto report = [&](std::optional<std::chrono::steady_clock::time_point> until = std::nullopt) -> std::optional<RunResult> {
    if (!pending) {
      return std::nullopt;
    }
    const StepStats s = read_step(*pending, until);
    pending.reset();
    const int64_t done = s.step + 1;
    nlohmann::json train_event{{field::step, done},
                               {field::tokens, done * tps},
                               {field::loss, json_number(s.loss)},
                               {field::lr, s.lr},
                               {field::grad_norm, json_number(s.grad_norm)},
                               {field::tokens_per_s, static_cast<double>(tps) / s.seconds}};
    if (m_cfg.model.moe()) {
      train_event[field::moe] = {{"load_max", s.moe.load_max},
                                 {"entropy", s.moe.entropy},
                                 {"aux_loss", std::isnan(s.moe.aux_loss) ? nlohmann::json() : nlohmann::json(s.moe.aux_loss)}};
    }
    ev.emit(events::train, train_event);
    if (!s.finite()) {
      std::string reason = std::string("non-finite ") + (std::isfinite(s.loss) ? "gradient norm" : "loss") +
                           " at step " + std::to_string(done);
      ev.note("diverged: " + reason);
      return c.stop_early(RunState::diverged, reason, done);
    }
    step_seconds = step_seconds == 0 ? s.seconds : 0.9 * step_seconds + 0.1 * s.seconds;
    char line[200];
    std::snprintf(line, sizeof line, "step %lld/%lld | tokens %s | loss %.4f | lr %.2e | %s tok/s | ETA %s",
                  static_cast<long long>(done), static_cast<long long>(total),
                  format_count(static_cast<double>(done * tps)).c_str(), s.loss, s.lr,
                  format_count(static_cast<double>(tps) / step_seconds).c_str(),
                  format_duration(step_seconds * static_cast<double>(total - done)).c_str());
    ev.progress(line);
    return std::nullopt;
  };
  while (m_step < total) {
    // Data parallel: stop only where every rank agreed to (read with the last step's values).
    const bool stop = m_comm != nullptr && m_comm->world() > 1 ? m_stop : stop_requested();
    if (stop || (o.max_steps >= 0 && m_step >= o.max_steps)) {
      if (auto diverged = report()) {
        return diverged;
      }
      c.checkpoint();
      // every rank stops at the step any rank was signalled at: this one may have had no signal itself
      std::string reason = !stop                ? "paused at step " + std::to_string(m_step)
                           : stop_signal() != 0 ? "stopped by signal " + std::to_string(stop_signal())
                                                : "stopped with another rank, which had a signal";
      ev.note("preempted at step " + std::to_string(m_step) + " (" + reason + "); resume with --resume");
      return c.stop_early(RunState::preempted, reason);
    }
    IssuedStep issued = issue_step();
    if (m_graph && !m_graph->failure().empty() && !graph_failure_said) {  // it trains on, eagerly
      ev.note("train.cuda_graph: the capture failed (" + m_graph->failure() + "); the steps run eagerly");
      graph_failure_said = true;
    }
    if (auto diverged = report(issued.started)) {  // the step before this one
      return diverged;
    }
    fault_hook(o.run_dir, m_step);
    pending = std::move(issued);
    const bool eval_due = m_cfg.eval.every > 0 && m_step % m_cfg.eval.every == 0 && m_step < total;
    const bool checkpoint_due =
        (m_cfg.eval.checkpoint_every > 0 ? m_step % m_cfg.eval.checkpoint_every == 0 : eval_due) && m_step < total;
    if (eval_due || checkpoint_due) {
      if (auto diverged = report()) {
        return diverged;
      }
    }
    if (eval_due) {
      c.eval_val(c.alive("eval"));
    }
    if (checkpoint_due) {
      c.checkpoint();
    }
  }
  return report();
}

// The end: a checkpoint of the trained state, then the final validation and the test over the
// whole split. A stop inside them is honoured at once — a preemption's grace period is short
// (Slurm's: 30 s) and a test split can take long —, and the run resumes at its last step, where
// only the evaluation runs again. With several ranks evaluating together, a stop waits for the
// evaluation's end (one rank cannot leave the others' collectives).
RunResult Trainer::final_evaluation(const RunContext& c) {
  EventSink& ev = c.ev;
  c.checkpoint();
  struct StopInEvaluation {};
  const bool alone = m_comm == nullptr || m_comm->world() == 1;
  auto stoppable = [&](const char* phase) -> std::function<void()> {
    return [beat = c.alive(phase), alone]() {
      beat();
      if (alone && stop_requested()) {
        throw StopInEvaluation{};
      }
    };
  };
  EvalLoss test;
  try {
    if (alone && stop_requested()) {
      throw StopInEvaluation{};
    }
    c.eval_val(stoppable("eval"));
    test = evaluate_split("test", true, stoppable("test"));
  } catch (const StopInEvaluation&) {
    const std::string reason = "stopped by signal " + std::to_string(stop_signal()) + " in the final evaluation";
    ev.note("preempted after the last step (" + reason + "); --resume evaluates again");
    return c.stop_early(RunState::preempted, reason);
  }
  RunResult r;
  r.step = m_step;
  r.test_loss = test.mean();
  if (m_data->test_bytes > 0) {
    r.test_bpb = test.sum_nats / (std::log(2.0) * static_cast<double>(m_data->test_bytes));
  }
  ev.emit(events::eval, {{field::split, events::test_split},
                         {field::step, m_step},
                         {field::tokens, m_step * c.tps},
                         {field::loss, json_number(r.test_loss)}});
  if (!std::isfinite(r.test_loss)) {  // every step was finite, the model's predictions are not: no result
    const std::string reason = "non-finite test loss after step " + std::to_string(m_step);
    ev.note("diverged: " + reason);
    return c.stop_early(RunState::diverged, reason);
  }
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - c.started).count();
  ev.emit(events::end, {{field::status, to_string(RunState::done)},
                        {field::step, m_step},
                        {field::tokens, m_step * c.tps},
                        {field::test_loss, json_number(r.test_loss)},
                        {field::test_bpb, json_number(r.test_bpb)},
                        {field::wall_seconds, wall},
                        {field::test_blocks, loss_blocks(test)}});
  char line[160];
  std::snprintf(line, sizeof line, "done: test loss %.4f, %.4f bits per byte, %s", r.test_loss, r.test_bpb,
                format_duration(wall).c_str());
  ev.note(line);
  return r;
}

RunResult Trainer::run(const RunOptions& o) {
  EventSink& ev = *o.events;
  const std::string ckpt = o.run_dir.empty() ? "" : (fs::path(o.run_dir) / "checkpoint" / "ckpt.pt").string();
  bool resumed = false;
  std::string checkpoint_note;
  if (o.resume && !ckpt.empty()) {
    std::tie(resumed, checkpoint_note) = resume(ckpt);
  }
  if (!resumed && m_cfg.branch.on()) {  // a branch's first start: from its parent's checkpoint
    if (o.run_dir.empty()) {
      throw Error("this run branches from run " + m_cfg.branch.from + ": it trains in its run folder (--run-dir), "
                  "where `sweep run` puts its start", Exit::bad_input);
    }
    const std::string branched = start_branch(branch_checkpoint(o.run_dir));
    checkpoint_note += (checkpoint_note.empty() ? "" : "; ") + branched;
    resumed = true;
  }
  if (!checkpoint_note.empty()) {
    ev.note(checkpoint_note);
  }
  announce_start(ev, resumed, checkpoint_note);
  ev.set_heartbeat(m_cfg.resources.heartbeat_seconds());
  const RunContext c{*this, ev, ckpt, m_cfg.tokens_per_step(), slow_eval_ms(o.run_dir)};
  m_alive = c.alive("train");
  struct Forget {  // the heartbeat refers to this call's sink: gone with it
    std::function<void()>& f;
    ~Forget() { f = nullptr; }
  } forget{m_alive};
  if (m_step == 0 && m_cfg.eval.every > 0) {
    c.eval_val(c.alive("eval"));
  }
  if (std::optional<RunResult> stopped = train_steps(c, o)) {
    return *stopped;
  }
  return final_evaluation(c);
}

}  // namespace sweep
