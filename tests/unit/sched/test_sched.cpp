// The sweep runner's pure rules (sched/lifecycle.h), table by table: plan states, what a
// `sweep run` must (re)start, how an ended worker is classified, and the worker's command line
// as the local executor runs it and as the Slurm script writes it, and the executor's device slots.
#include <doctest/doctest.h>

#include <map>

#include "helpers.h"
#include "sched/lifecycle.h"
#include "sched/local.h"
#include "sched/slots.h"
#include "sched/slurm.h"
#include "util/error.h"

using namespace sweep;

TEST_CASE("plan_state: every recorded state, with and without a live worker or a batch task") {
  struct Row {
    RunState recorded;
    bool alive;
    std::string job;
    PlanState expected;
  };
  const std::vector<Row> table{
      {RunState::pending, false, "", PlanState::pending},
      {RunState::done, false, "", PlanState::done},
      {RunState::diverged, false, "", PlanState::diverged},
      {RunState::failed, false, "", PlanState::failed},
      {RunState::oom, false, "", PlanState::oom},
      {RunState::interrupted, false, "", PlanState::resumable},
      {RunState::preempted, false, "12_0", PlanState::resumable},
      {RunState::running, true, "", PlanState::running},
      {RunState::running, false, "", PlanState::resumable},  // its scheduler died with it
      {RunState::running, false, "12_3", PlanState::running},  // followed through Slurm, not a pid
  };
  for (const auto& r : table) {
    RunRow row;
    row.status = r.recorded;
    row.job = r.job;
    CAPTURE(to_string(r.recorded));
    CAPTURE(r.alive);
    CHECK(plan_state(row, r.alive) == r.expected);
  }
}

TEST_CASE("plan_state: a recorded pid that is not a worker of the run is not taken for one") {
  RunRow row;
  row.status = RunState::running;
  row.pid = 1;  // init: alive, but not `sweep worker ... <run_dir>`
  row.run_dir = "/nonexistent/run";
  CHECK_FALSE(worker_alive(row));
  CHECK(plan_state(row) == PlanState::resumable);
}

TEST_CASE("every state has one spelling, read back as itself") {
  for (RunState s : {RunState::pending, RunState::running, RunState::done, RunState::diverged, RunState::failed,
                     RunState::oom, RunState::interrupted, RunState::preempted}) {
    CHECK(parse_run_state(to_string(s)) == s);
  }
  CHECK_FALSE(parse_run_state("Done").has_value());
  CHECK_FALSE(parse_run_state("").has_value());
}

TEST_CASE("runs_to_do: plan order, each run id once, finished skipped, failed only with --retry-failed") {
  SweepSpec spec;
  spec.name = "s";
  for (const char* id : {"a", "b", "c", "b", "d", "e", "f", "g"}) {  // "b" planned twice (a shared baseline)
    PlannedRun r;
    r.run_id = id;
    spec.runs.push_back(r);
  }
  const std::map<std::string, PlanState> states{
      {"a", PlanState::done},      {"b", PlanState::pending}, {"c", PlanState::failed},  {"d", PlanState::resumable},
      {"e", PlanState::diverged}, {"f", PlanState::oom},     {"g", PlanState::running}};
  auto state_of = [&](const std::string& id) { return states.at(id); };
  auto ids = [](const ToDo& t) {
    std::string out;
    for (const PlannedRun* r : t.runs) {
      out += r->run_id;
    }
    return out;
  };

  std::vector<const PlannedRun*> runs;
  for (const auto& r : spec.runs) {
    runs.push_back(&r);
  }
  const ToDo plain = runs_to_do(runs, state_of, false);
  CHECK(ids(plain) == "bdg");
  CHECK(plain.total == 7);
  CHECK(plain.finished_before == 2);
  CHECK(plain.failed_before == 2);

  const ToDo retry = runs_to_do(runs, state_of, true);
  CHECK(ids(retry) == "bcdfg");
  CHECK(retry.failed_before == 0);
}

TEST_CASE("longest_first: the costliest runs start first, plan order among equals") {
  auto run = [](const char* id, int64_t layers, int64_t width, int64_t tokens) {
    PlannedRun r;
    r.run_id = id;
    r.config.model.n_layer = layers;
    r.config.model.n_head = 2;
    r.config.model.n_embd = width;
    r.config.train.tokens = tokens;
    return r;
  };
  // a ladder's plan: each variant's rungs bottom up
  const std::vector<PlannedRun> plan{run("a1", 2, 64, 100'000), run("a2", 4, 256, 1'000'000),
                                     run("b1", 2, 64, 100'000), run("b2", 4, 256, 1'000'000),
                                     run("c2", 4, 256, 2'000'000)};
  CHECK(estimated_flops(plan[1]) > 10 * estimated_flops(plan[0]));
  CHECK(estimated_flops(plan[4]) == doctest::Approx(2 * estimated_flops(plan[1])));
  std::vector<const PlannedRun*> runs;
  for (const auto& r : plan) {
    runs.push_back(&r);
  }
  longest_first(runs);
  std::string ids;
  for (const PlannedRun* r : runs) {
    ids += r->run_id + " ";
  }
  CHECK(ids == "c2 a2 b2 a1 b1 ");

  PlannedRun own = run("t", 4, 256, 1'000'000);  // a trainer of the user's own: its cost is not known
  own.config.trainer = OwnTrainer{};
  CHECK(estimated_flops(own) == 0);
}

TEST_CASE("classify_end: how an ended worker's run goes on") {
  const int ok = static_cast<int>(Exit::ok), diverged = static_cast<int>(Exit::diverged),
            preempted = static_cast<int>(Exit::preempted), bad_input = static_cast<int>(Exit::bad_input);
  struct Row {
    std::string name;
    std::optional<int> exit_code;
    RunState recorded;
    bool stopping, oom;
    int crashes;  // retried before
    RunState state;
    Then then;
  };
  const std::vector<Row> table{
      {"done", ok, RunState::done, false, false, 0, RunState::done, Then::finished},
      {"exit 0 without an end event", ok, RunState::running, false, false, 0, RunState::failed, Then::retry},
      {"diverged", diverged, RunState::diverged, false, false, 0, RunState::diverged, Then::finished},
      {"preempted by SIGTERM", preempted, RunState::preempted, false, false, 0, RunState::preempted, Then::requeue},
      {"SIGTERM while starting", 128 + 15, RunState::running, false, false, 0, RunState::preempted, Then::requeue},
      {"checkpointed after Ctrl-C", preempted, RunState::preempted, true, false, 0, RunState::interrupted, Then::stopped},
      {"SIGINT while starting", 128 + 2, RunState::running, true, false, 0, RunState::interrupted, Then::stopped},
      {"crash, first attempt", 1, RunState::running, false, false, 0, RunState::failed, Then::retry},
      {"crash, retries spent", 1, RunState::running, false, false, 1, RunState::failed, Then::give_up},
      {"crash after Ctrl-C", 1, RunState::running, true, false, 0, RunState::failed, Then::give_up},
      {"bad input is never retried", bad_input, RunState::failed, false, false, 0, RunState::failed, Then::give_up},
      {"SIGKILL, no OOM kill recorded", 128 + 9, RunState::running, false, false, 0, RunState::failed, Then::retry},
      {"out of memory", 128 + 9, RunState::running, false, true, 0, RunState::oom, Then::give_up},
      {"killed by the second Ctrl-C", 128 + 9, RunState::running, true, true, 0, RunState::interrupted, Then::stopped},
      {"its files could not be written", 74, RunState::interrupted, false, false, 0, RunState::interrupted,
       Then::halt},
      {"batch task: done", std::nullopt, RunState::done, false, false, 0, RunState::done, Then::finished},
      {"batch task: diverged", std::nullopt, RunState::diverged, false, false, 0, RunState::diverged, Then::finished},
      {"batch task: done as it was cancelled", std::nullopt, RunState::done, true, false, 0, RunState::done,
       Then::finished},
      {"batch task: cancelled", std::nullopt, RunState::running, true, false, 0, RunState::interrupted, Then::stopped},
      {"batch task: no result", std::nullopt, RunState::running, false, false, 0, RunState::failed, Then::give_up},
      {"batch task: checkpointed on SIGTERM", std::nullopt, RunState::preempted, false, false, 0, RunState::preempted,
       Then::requeue},
      {"batch task: checkpointed on SIGTERM as the sweep stops", std::nullopt, RunState::preempted, true, false, 0,
       RunState::interrupted, Then::stopped},
      // the first end event is the run's result, whatever the worker does after it
      {"done, then a crash", 1, RunState::done, false, false, 0, RunState::done, Then::finished},
      {"done, then SIGKILL", 128 + 9, RunState::done, false, true, 0, RunState::done, Then::finished},
      {"diverged, then a crash", 1, RunState::diverged, false, false, 0, RunState::diverged, Then::finished},
  };
  for (const auto& r : table) {
    CAPTURE(r.name);
    EndFacts f;
    f.exit_code = r.exit_code;
    f.recorded = r.recorded;
    f.stopping = r.stopping;
    f.out_of_memory = r.oom;
    f.crashes = r.crashes;
    f.retries = 1;
    f.detail = "Slurm task 12_3 ended without a result";
    f.log_tail = "the log's last line\n";
    const Outcome o = classify_end(f);
    CHECK(to_string(o.state) == std::string(to_string(r.state)));
    CHECK(static_cast<int>(o.then) == static_cast<int>(r.then));
  }
}

TEST_CASE("classify_end: preemptions are requeued up to --max-preemptions, then the run is failed") {
  EndFacts f;
  f.exit_code = static_cast<int>(Exit::preempted);
  f.recorded = RunState::preempted;
  f.max_preemptions = 3;
  for (int before = 0; before < 3; ++before) {
    f.preemptions = before;
    CHECK(classify_end(f).then == Then::requeue);
  }
  f.preemptions = 3;
  const Outcome o = classify_end(f);
  CHECK(o.state == RunState::failed);
  CHECK(o.then == Then::give_up);
  CHECK(o.error == "stopped by SIGTERM 4 times (--max-preemptions 3); it resumes from its checkpoint with --retry-failed");
  f.stopping = true;  // Ctrl-C is never a preemption
  CHECK(classify_end(f).then == Then::stopped);
  f = EndFacts{};
  f.exit_code = static_cast<int>(Exit::preempted);
  f.max_preemptions = 0;  // --max-preemptions 0: the first SIGTERM fails the run
  CHECK(classify_end(f).then == Then::give_up);
}

TEST_CASE("classify_end: a worker paused at its look waits for it, one stopped before the step is preempted") {
  EndFacts f;
  f.exit_code = static_cast<int>(Exit::preempted);
  f.recorded = RunState::preempted;
  f.paused_at = 42;
  f.steps = 42;
  Outcome o = classify_end(f);
  CHECK(o.state == RunState::preempted);  // resumable: the next look, or a later `sweep run`, goes on from it
  CHECK(o.then == Then::paused);
  CHECK(o.error == "paused at step 42 for a look of --eliminate");
  f.exit_code.reset();  // a Slurm task: its events say it
  CHECK(classify_end(f).then == Then::paused);
  f.exit_code = static_cast<int>(Exit::preempted);
  f.steps = 30;  // SIGTERM before the step: a preemption like any other
  CHECK(classify_end(f).then == Then::requeue);
  f.stopping = true;
  CHECK(classify_end(f).then == Then::stopped);
}

TEST_CASE("classify_end: the error recorded says why, with the log's tail") {
  EndFacts f;
  f.exit_code = 1;
  f.crashes = 9;
  f.log_tail = "Error: boom\n";
  CHECK(classify_end(f).error == "exit 1\nError: boom\n");
  f.exit_code = 128 + 9;
  f.out_of_memory = true;
  CHECK(classify_end(f).error.find("out of memory or SIGKILL — not retried") != std::string::npos);
  f = EndFacts{};
  f.exit_code = static_cast<int>(Exit::diverged);
  f.recorded_error = "non-finite loss at step 7";
  CHECK(classify_end(f).error == "non-finite loss at step 7");
  f = EndFacts{};
  f.detail = "Slurm task 12_3 ended without a result — task-12_3.out";
  f.log_tail = "srun: error\n";
  CHECK(classify_end(f).error == "Slurm task 12_3 ended without a result — task-12_3.out\nsrun: error\n");
}

TEST_CASE("worker_argv: one command line, for a local child and for the Slurm script") {
  CHECK(worker_argv("/opt/sweep", "/r/abc", "/d/bytes", 4, "") ==
        std::vector<std::string>{"/opt/sweep", "worker", "/r/abc/config.yaml", "--run-dir", "/r/abc", "--data",
                                 "/d/bytes", "--resume", "--events", "--set", "resources.threads=4"});
  CHECK(worker_argv("/opt/sweep", "/r/abc", "/d/bytes", 1, "cuda:0").back() == "resources.device=cuda:0");

  SlurmOptions o;
  o.worker_binary = "/opt/it's/sweep";
  const std::string script = sbatch_script("sweep-s", "/r/s/slurm/array-0.runs", 3, 2, 4, "/r/s/slurm", o);
  CHECK(script.find("#SBATCH --array=0-2\n") != std::string::npos);
  CHECK(script.find("#SBATCH --ntasks=2\n#SBATCH --cpus-per-task=4\n") != std::string::npos);
  // The run folder, the step to pause at and the dataset's folder from the task's line of the runs file.
  CHECK(script.find("IFS=$'\\t' read -r run_dir pause_at data_dir < <(sed -n \"$((SLURM_ARRAY_TASK_ID + 1))p\" "
                    "'/r/s/slurm/array-0.runs')\n") != std::string::npos);
  // The binary single-quoted (its quote escaped), the folders the script's variables.
  CHECK(script.find("srun --kill-on-bad-exit=1 '/opt/it'\\''s/sweep' 'worker' \"${run_dir}\"'/config.yaml' "
                    "'--run-dir' \"${run_dir}\" '--data' \"${data_dir}\" '--resume' '--events' '--set' "
                    "'resources.threads=4' '--pause-at-step' \"${pause_at}\" > /dev/null") != std::string::npos);
  // requeued by Slurm after SIGTERM, not after a pause for a look of --eliminate (the sweep decides)
  CHECK(script.find("if [ \"$rc\" -eq 75 ] && [ \"$pause_at\" = 0 ] && "
                    "[ \"${SLURM_RESTART_COUNT:-0}\" -lt 10 ]; then") != std::string::npos);
  o.gpus_per_rank = 1;
  CHECK(sbatch_script("sweep-s", "runs", 1, 1, 1, "/d", o).find("'--set' 'resources.device=cuda' '--pause") !=
        std::string::npos);
  // --stall-timeout reaches the workers, whose heartbeats follow it
  CHECK(worker_argv("/opt/sweep", "/r/abc", "/d/bytes", 1, "", 2.5).back() == "resources.stall_timeout=2.5");
  // --eliminate: the step a worker pauses at, checkpointed, for a look
  const auto paused = worker_argv("/opt/sweep", "/r/abc", "/d/bytes", 1, "", -1, "42");
  CHECK(std::vector<std::string>(paused.end() - 2, paused.end()) == std::vector<std::string>{"--pause-at-step", "42"});
  o.stall_timeout = 120;
  CHECK(sbatch_script("sweep-s", "runs", 1, 1, 1, "/d", o).find("'--set' 'resources.stall_timeout=120' '--pause") !=
        std::string::npos);
}

TEST_CASE("classify_end: a worker the watchdog killed is retried like a crash, never taken for out of memory") {
  EndFacts f;
  f.exit_code = 128 + 9;  // SIGKILL, as the watchdog sends it
  f.out_of_memory = true;  // an unexplained SIGKILL would count as one
  f.crashes = 0;
  f.retries = 1;
  f.stalled = "no event for 0m05s (stall timeout 2 s; the last: train, step 40)";
  Outcome o = classify_end(f);
  CHECK(o.state == RunState::failed);
  CHECK(o.then == Then::retry);
  CHECK(o.error == "stalled: no event for 0m05s (stall timeout 2 s; the last: train, step 40) — killed; retried from "
                   "its checkpoint");
  f.crashes = 1;  // retries spent
  o = classify_end(f);
  CHECK(o.then == Then::give_up);
  CHECK(o.error.find("it resumes from its checkpoint with --retry-failed") != std::string::npos);
  f.exit_code.reset();  // a Slurm task the watchdog cancelled
  f.crashes = 0;
  CHECK(classify_end(f).then == Then::retry);
  f.stopping = true;  // while the sweep stops: left for the next `sweep run`
  CHECK(classify_end(f).then == Then::stopped);
  f.stopping = false;
  f.recorded = RunState::done;  // it finished as the kill came: done it is
  f.exit_code = 0;
  CHECK(classify_end(f).then == Then::finished);
  f.exit_code = 128 + 9;  // it said done, then hung until the watchdog killed it: done, and said so
  o = classify_end(f);
  CHECK(o.state == RunState::done);
  CHECK(o.then == Then::finished);
  CHECK(o.error == "after its end event \"done\" the worker stalled (no event for 0m05s (stall timeout 2 s; the last: "
                   "train, step 40)) and was killed: the result stands");
}

TEST_CASE("--devices: slots, GPUs counted within the scheduler's CUDA_VISIBLE_DEVICES, shared GPUs") {
  const auto cpu = parse_devices("cpu:2x3", 8, nullptr);
  REQUIRE(cpu.size() == 2);
  CHECK(cpu[1].label == "cpu:1");
  CHECK(cpu[1].threads == 3);
  CHECK(cpu[1].cuda_visible.empty());
  const auto gpus = parse_devices("cuda:0,1", 16, nullptr);
  REQUIRE(gpus.size() == 2);
  CHECK(gpus[1].cuda_visible == "1");
  CHECK(gpus[1].threads == 8);
  // cuda:0 of CUDA_VISIBLE_DEVICES=2,3 is GPU 2: the worker's CUDA_VISIBLE_DEVICES must say 2
  const auto within = parse_devices("cuda:1,0", 16, "2, 3");
  CHECK(within[0].cuda_visible == "3");
  CHECK(within[0].label == "cuda:1");
  CHECK(within[1].cuda_visible == "2");
  const std::string beyond = test::bad_input_message([] { parse_devices("cuda:0,2", 16, "2,3"); });
  CHECK(beyond.find("cuda:2 is not among the 2 GPUs CUDA_VISIBLE_DEVICES=2,3") != std::string::npos);
  // two slots on one GPU; a run given both sees the GPU once (its ranks share it)
  const auto shared = parse_devices("cuda:0,0", 2, nullptr);
  REQUIRE(shared.size() == 2);
  CHECK(visible_devices({&shared[0], &shared[1]}) == "0");
  const auto four = parse_devices("cuda:1,0,1,2", 4, nullptr);
  CHECK(visible_devices({&four[0], &four[1], &four[2], &four[3]}) == "1,0,2");
  CHECK(test::bad_input_message([] { parse_devices("cuda:x", 2, nullptr); }).find("'x' is not a GPU index") !=
        std::string::npos);
  CHECK(test::bad_input_message([] { parse_devices("gpu:0", 2, nullptr); }).find("expected cpu, cpu:NxT or cuda:I,J") !=
        std::string::npos);
}

TEST_CASE("check_fits: a run needs its ranks in slots, and on GPUs over NCCL a distinct GPU a rank") {
  SweepSpec spec;
  PlannedRun two;
  two.variant = "two-ranks";
  two.config.resources.ranks = 2;
  spec.runs.push_back(two);
  CHECK_NOTHROW(check_fits(spec, "cpu:2x1"));
  CHECK(test::bad_input_message([&] { check_fits(spec, "cpu"); }).find("gives 1 slot") != std::string::npos);
  CHECK_NOTHROW(check_fits(spec, "cuda:0,1"));
  const std::string shared = test::bad_input_message([&] { check_fits(spec, "cuda:0,0"); });
  CHECK(shared.find("variant two-ranks asks for resources.ranks = 2 on NCCL (resources.backend: auto) but --devices "
                    "cuda:0,0 lists 1 distinct GPU") != std::string::npos);
  CHECK(shared.find("resources.backend: gloo") != std::string::npos);
  spec.runs[0].config.resources.backend = Backend::gloo;
  CHECK_NOTHROW(check_fits(spec, "cuda:0,0"));
}
