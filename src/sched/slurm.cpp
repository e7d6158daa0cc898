#include "sched/slurm.h"

#include <signal.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <map>
#include <optional>
#include <set>
#include <thread>

#include "sched/executor.h"
#include "util/error.h"
#include "util/fs.h"
#include "util/process.h"
#include "util/text.h"

namespace sweep {

namespace {

volatile sig_atomic_t g_cancel = 0;
void on_cancel(int) { g_cancel = 1; }

void say(const std::string& line) {
  std::printf("[%s] %s\n", clock_time().c_str(), line.c_str());
  std::fflush(stdout);
}

// A bash single-quoted word.
std::string sh_quote(const std::string& s) {
  std::string out = "'";
  for (char c : s) {
    out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  }
  return out + "'";
}

Captured slurm_command(const std::vector<std::string>& argv) {
  if (!find_program(argv[0])) {
    throw Error(argv[0] + " not found: the Slurm executor needs Slurm's client commands (Debian: slurm-client)",
                Exit::bad_input);
  }
  return run_capture(argv);
}

// The state of every task of `arrays` still known to squeue ("12_3" → "RUNNING"); nullopt when
// squeue itself failed (the next poll asks again).
std::optional<std::map<std::string, std::string>> queue_states(const std::set<std::string>& arrays) {
  std::map<std::string, std::string> states;
  if (arrays.empty()) {
    return states;
  }
  std::string ids;
  for (const auto& a : arrays) {
    ids += (ids.empty() ? "" : ",") + a;
  }
  const Captured q = slurm_command({"squeue", "--noheader", "--array", "--format=%i|%T", "--jobs=" + ids});
  if (q.code != 0) {
    // Arrays that have left the queue entirely make squeue complain about their ids.
    return q.output.find("Invalid job id") != std::string::npos ? std::optional(states) : std::nullopt;
  }
  for (const auto& line : split(q.output, '\n')) {
    const size_t bar = line.find('|');
    if (bar != std::string::npos) {
      states[trim(line.substr(0, bar))] = trim(line.substr(bar + 1));
    }
  }
  return states;
}

struct Followed {
  const PlannedRun* run;
  std::string job;  // "ARRAY_INDEX"
  std::string out_file;
  uintmax_t offset = 0;  // bytes of events.jsonl already ingested
  bool seen_running = false;
  std::optional<std::chrono::steady_clock::time_point> requeued_at;  // preempted and back in the queue
};

// Ingests the complete lines events.jsonl gained since the last call.
void follow_events(Store& store, Followed& f, const fs::path& run_dir) {
  const fs::path events = run_dir / "events.jsonl";
  if (!fs::exists(events) || fs::file_size(events) <= f.offset) {
    return;
  }
  std::ifstream in(events, std::ios::binary);
  in.seekg(static_cast<std::streamoff>(f.offset));
  std::string chunk((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const size_t last = chunk.rfind('\n');
  if (last == std::string::npos) {
    return;  // a line still being written
  }
  store.ingest(f.run->run_id, split(chunk.substr(0, last), '\n'));
  f.offset += last + 1;
}

}  // namespace

std::string sbatch_script(const std::string& job_name, const std::string& runs_file, size_t tasks, int64_t ranks,
                          int64_t threads, const std::string& slurm_dir, const SlurmOptions& o) {
  std::string s = "#!/bin/bash\n# Written by `sweep run --executor slurm`: array task i runs the run directory on line\n"
                  "# i+1 of " + runs_file + ", its ranks started by srun.\n";
  s += "#SBATCH --job-name=" + job_name + "\n";
  s += "#SBATCH --array=0-" + std::to_string(tasks - 1) +
       (o.max_parallel > 0 ? "%" + std::to_string(o.max_parallel) : "") + "\n";
  s += "#SBATCH --ntasks=" + std::to_string(ranks) + "\n#SBATCH --cpus-per-task=" + std::to_string(threads) + "\n";
  if (o.gpus_per_rank > 0) {
    s += "#SBATCH --gpus-per-task=" + std::to_string(o.gpus_per_rank) + "\n";
  }
  if (!o.partition.empty()) {
    s += "#SBATCH --partition=" + o.partition + "\n";
  }
  if (!o.time.empty()) {
    s += "#SBATCH --time=" + o.time + "\n";
  }
  s += "#SBATCH --requeue\n#SBATCH --open-mode=append\n";
  s += "#SBATCH --output=" + slurm_dir + "/task-%A_%a.out\n";
  s += "set -u\nrun_dir=$(sed -n \"$((SLURM_ARRAY_TASK_ID + 1))p\" " + sh_quote(runs_file) + ")\n";
  s += "echo \"$(date -Is) task $SLURM_JOB_ID (array $SLURM_ARRAY_JOB_ID index $SLURM_ARRAY_TASK_ID) on "
       "$SLURM_JOB_NODELIST: $run_dir, restart ${SLURM_RESTART_COUNT:-0}\"\n";
  s += "srun --kill-on-bad-exit=1 " + sh_quote(o.worker_binary) +
       " worker \"$run_dir/config.yaml\" --run-dir \"$run_dir\" --resume --events --set resources.threads=" +
       std::to_string(threads) + (o.gpus_per_rank > 0 ? " --set resources.device=cuda" : "") +
       " > /dev/null 2>> \"$run_dir/worker.log\"\nrc=$?\n";
  s += "echo \"$(date -Is) worker exit $rc\"\n";
  s += "if [ \"$rc\" -eq 75 ]; then  # stopped by SIGTERM after a checkpoint: queue again, resume from it\n"
       "  scontrol requeue \"$SLURM_JOB_ID\"  # ends this script; the scheduler lifts Slurm's requeue delay\n"
       "fi\nexit \"$rc\"\n";
  return s;
}

int run_slurm(const SweepSpec& spec, Store& store, const SlurmOptions& o) {
  const ResultsLock lock(o.results_dir);
  store.record_sweep(spec, o.results_dir);
  const fs::path slurm_dir = fs::absolute(fs::path(o.results_dir) / spec.name / "slurm");
  fs::create_directories(slurm_dir);
  const ToDo todo = runs_to_do(spec, store, o.retry_failed);

  // ---- runs whose task (from an earlier `sweep run`) is still in Slurm's queue are followed ----
  std::set<std::string> arrays;
  std::vector<Followed> followed;
  std::map<std::pair<int64_t, int64_t>, std::vector<const PlannedRun*>> to_submit;  // (ranks, threads)
  std::set<std::string> earlier_arrays;
  for (const PlannedRun* run : todo.runs) {
    const RunRow row = *store.run(run->run_id);
    if (!row.job.empty()) {
      earlier_arrays.insert(row.job.substr(0, row.job.find('_')));
    }
  }
  const auto earlier = queue_states(earlier_arrays).value_or(std::map<std::string, std::string>{});
  for (const PlannedRun* run : todo.runs) {
    const RunRow row = *store.run(run->run_id);
    if (!row.job.empty() && earlier.count(row.job)) {
      followed.push_back({run, row.job, "", 0});
      arrays.insert(row.job.substr(0, row.job.find('_')));
      say("following " + run->variant + " (" + run->run_id + "): Slurm task " + row.job + " is " + earlier.at(row.job));
      continue;
    }
    const fs::path dir = row.run_dir;
    fs::create_directories(dir);
    if (!fs::exists(dir / "config.yaml")) {
      write_file_atomic(dir / "config.yaml", run->config.to_yaml());
    }
    const int64_t threads = run->config.resources.threads > 0 ? run->config.resources.threads : 1;
    to_submit[{run->config.resources.ranks, threads}].push_back(run);
  }
  say(todo.headline(spec) + std::to_string(todo.runs.size()) + " to run on Slurm");

  // ---- one array per (ranks, threads): its run list, its script, sbatch --parsable ----
  int group = 0;
  for (const auto& [shape, runs] : to_submit) {
    const std::string base = "array-" + std::to_string(group++);
    const fs::path runs_file = slurm_dir / (base + ".runs");
    std::string lines;
    for (const PlannedRun* run : runs) {
      lines += fs::absolute(store.run(run->run_id)->run_dir).string() + "\n";
    }
    write_file_atomic(runs_file, lines);
    const fs::path script = slurm_dir / (base + ".sbatch");
    write_file_atomic(script, sbatch_script("sweep-" + spec.name, runs_file.string(), runs.size(), shape.first,
                                            shape.second, slurm_dir.string(), o));
    std::vector<std::string> argv{"sbatch", "--parsable", script.string()};
    const Captured sub = slurm_command(argv);
    const std::string id = trim(sub.output.substr(0, sub.output.find(';')));
    if (sub.code != 0 || id.empty() || id.find_first_not_of("0123456789") != std::string::npos) {
      throw Error("sbatch failed (exit " + std::to_string(sub.code) + ") for " + script.string() + ": " + trim(sub.output));
    }
    arrays.insert(id);
    for (size_t i = 0; i < runs.size(); ++i) {
      const std::string job = id + "_" + std::to_string(i);
      store.set_job(runs[i]->run_id, job, "SUBMITTED");
      const RunRow row = *store.run(runs[i]->run_id);
      if (row.status == "failed" || row.status == "oom") {
        store.set_status(runs[i]->run_id, "pending", "");  // --retry-failed: a new attempt
      }
      followed.push_back({runs[i], job, "", 0});
    }
    say("submitted Slurm array " + id + ": " + std::to_string(runs.size()) + " task" + (runs.size() == 1 ? "" : "s") +
        " of " + std::to_string(shape.first) + " rank" + (shape.first == 1 ? "" : "s") + " × " +
        std::to_string(shape.second) + " thread" + (shape.second == 1 ? "" : "s") + " (" + script.string() + ")");
  }
  for (auto& f : followed) {
    f.out_file = (slurm_dir / ("task-" + f.job + ".out")).string();  // --output=task-%A_%a.out
    reingest_run_dir(store, f.run->run_id, store.run(f.run->run_id)->run_dir);  // idempotent
    const fs::path events = fs::path(store.run(f.run->run_id)->run_dir) / "events.jsonl";
    f.offset = fs::exists(events) ? fs::file_size(events) : 0;
  }

  // ---- follow: squeue for the tasks' states, the run directories for their events ----
  struct sigaction sa = {}, old_int, old_term, old_hup;
  sa.sa_handler = on_cancel;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, &old_int);
  sigaction(SIGTERM, &sa, &old_term);
  sigaction(SIGHUP, &sa, &old_hup);
  g_cancel = 0;
  const auto started = std::chrono::steady_clock::now();
  int done = 0, failed = 0;
  while (!followed.empty() && g_cancel == 0) {
    const auto states = queue_states(arrays);
    for (size_t i = 0; i < followed.size();) {
      Followed& f = followed[i];
      const std::string run_dir = store.run(f.run->run_id)->run_dir;
      follow_events(store, f, run_dir);
      if (!states) {  // squeue failed this time: no conclusion about any task
        ++i;
        continue;
      }
      const auto it = states->find(f.job);
      if (it != states->end()) {
        RunRow row = *store.run(f.run->run_id);
        if (row.job_state != it->second) {
          store.set_job(f.run->run_id, f.job, it->second);
          if (it->second == "RUNNING" && row.status != "done" && row.status != "diverged") {
            f.seen_running = true;
            store.set_status(f.run->run_id, "running");
            say("running " + f.run->variant + " seed " + std::to_string(row.init_seed) + "/" +
                std::to_string(row.data_seed) + " (" + f.run->run_id + ") as Slurm task " + f.job);
          } else if (it->second == "PENDING" && f.seen_running && row.status == "preempted") {
            f.requeued_at = std::chrono::steady_clock::now();
            say("requeued " + f.run->variant + " (" + f.run->run_id + ") after SIGTERM: resumes from step " +
                std::to_string(row.steps));
          }
        }
        // Slurm holds a requeued task back for two minutes (BeginTime). Once its last instance has
        // surely been cleaned up on the node (starting it at once fails on a revoked credential),
        // let it start as soon as there is room: it has checkpointed.
        if (f.requeued_at && std::chrono::steady_clock::now() - *f.requeued_at > std::chrono::seconds(10)) {
          if (it->second == "PENDING") {
            slurm_command({"scontrol", "update", "jobid=" + f.job, "starttime=now"});
          }
          f.requeued_at.reset();
        }
        ++i;
        continue;
      }
      // The task has left the queue: its run directory says how it ended.
      follow_events(store, f, run_dir);
      const RunRow row = *store.run(f.run->run_id);
      store.set_job(f.run->run_id, f.job, "ENDED");
      if (row.status == "done" || row.status == "diverged") {
        ++done;
        char buf[64];
        std::snprintf(buf, sizeof buf, row.test_loss ? ": test loss %.4f" : "", row.test_loss.value_or(0));
        say((row.status == "done" ? "done  " : "diverged ") + f.run->variant + " seed " +
            std::to_string(row.init_seed) + "/" + std::to_string(row.data_seed) + " (" + f.run->run_id + ")" + buf);
      } else {
        ++failed;
        store.set_status(f.run->run_id, "failed",
                         "Slurm task " + f.job + " ended without a result — " + f.out_file + "\n" +
                             tail_lines(f.out_file, 5) + tail_lines(fs::path(run_dir) / "worker.log", 15));
        say("fail  " + f.run->variant + " (" + f.run->run_id + "): Slurm task " + f.job + " ended without a result — " +
            f.out_file);
      }
      followed.erase(followed.begin() + static_cast<long>(i));
    }
    if (!followed.empty()) {
      std::this_thread::sleep_for(std::chrono::milliseconds(static_cast<int>(o.poll_seconds * 1000)));
    }
  }
  if (g_cancel != 0) {
    std::string ids;
    for (const auto& a : arrays) {
      slurm_command({"scancel", a});
      ids += (ids.empty() ? "" : ", ") + a;
    }
    for (auto& f : followed) {
      follow_events(store, f, store.run(f.run->run_id)->run_dir);
      store.set_status(f.run->run_id, "interrupted", "the Slurm task was cancelled by Ctrl-C; `sweep run` again resumes it");
      store.set_job(f.run->run_id, f.job, "CANCELLED");
    }
    say("Ctrl-C: cancelled Slurm job " + ids + "; " + std::to_string(followed.size()) + " runs left to resume");
  }
  sigaction(SIGINT, &old_int, nullptr);
  sigaction(SIGTERM, &old_term, nullptr);
  sigaction(SIGHUP, &old_hup, nullptr);
  say(spec.name + ": " + std::to_string(done + todo.finished_before) + " of " + std::to_string(todo.total) +
      " runs finished, " + std::to_string(failed + todo.failed_before) + " failed, " +
      format_duration(std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count()));
  if (g_cancel != 0) {
    return 130;
  }
  return failed + todo.failed_before > 0 ? static_cast<int>(Exit::failed) : static_cast<int>(Exit::ok);
}

}  // namespace sweep
