#include "sched/slurm.h"

#include <signal.h>

#include <algorithm>
#include <cctype>
#include <fstream>
#include <optional>
#include <thread>

#include "sched/lifecycle.h"
#include "util/error.h"
#include "util/fs.h"
#include "util/process.h"
#include "util/text.h"

namespace sweep {

namespace {

// A bash single-quoted word.
std::string sh_quote(const std::string& s) {
  std::string out = "'";
  for (char c : s) {
    out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  }
  return out + "'";
}

// A bash word for `s`, quoted, where each "${run_dir}" and "${data_dir}" stays the script's variable.
std::string sh_word(const std::string& s) {
  std::string out;
  size_t from = 0;
  for (size_t at; (at = s.find("${", from)) != std::string::npos;) {
    const size_t end = s.find('}', at);
    const std::string var = end == std::string::npos ? "" : s.substr(at, end + 1 - at);
    if (var != "${run_dir}" && var != "${data_dir}" && var != "${pause_at}") {
      break;  // nothing else is the script's: quoted below like any text
    }
    if (at > from) {
      out += sh_quote(s.substr(from, at - from));
    }
    out += "\"" + var + "\"";
    from = at + var.size();
  }
  if (from < s.size() || out.empty()) {
    out += sh_quote(s.substr(from));
  }
  return out;
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

std::string array_of(const std::string& job) { return job.substr(0, job.find('_')); }

}  // namespace

std::string sbatch_script(const std::string& job_name, const std::string& runs_file, size_t tasks, int64_t ranks,
                          int64_t threads, const std::string& slurm_dir, const SlurmOptions& o) {
  std::string s = "#!/bin/bash\n# Written by `sweep run --executor slurm`: array task i runs the run directory on line\n"
                  "# i+1 of " + runs_file + " (with the step it pauses at, 0 for none, and its dataset's folder after\n"
                  "# tabs), its ranks started by srun.\n";
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
  s += "set -u\nIFS=$'\\t' read -r run_dir pause_at data_dir < <(sed -n \"$((SLURM_ARRAY_TASK_ID + 1))p\" " +
       sh_quote(runs_file) + ")\n";
  s += "echo \"$(date -Is) task $SLURM_JOB_ID (array $SLURM_ARRAY_JOB_ID index $SLURM_ARRAY_TASK_ID) on "
       "$SLURM_JOB_NODELIST: $run_dir, restart ${SLURM_RESTART_COUNT:-0}\"\n";
  s += "srun --kill-on-bad-exit=1";
  for (const auto& word :
       worker_argv(o.worker_binary, "${run_dir}", "${data_dir}", threads, o.gpus_per_rank > 0 ? "cuda" : "",
                   o.stall_timeout, "${pause_at}")) {
    s += " " + sh_word(word);
  }
  s += " > /dev/null 2>> \"$run_dir/worker.log\"\nrc=$?\n";
  s += "echo \"$(date -Is) worker exit $rc\"\n";
  s += "if [ \"$rc\" -eq 75 ] && [ \"$pause_at\" = 0 ] && [ \"${SLURM_RESTART_COUNT:-0}\" -lt " +
       std::to_string(o.max_preemptions) +
       " ]; then  # stopped by SIGTERM after a checkpoint: queue again (up to --max-preemptions), resume from it\n"
       "  # (a worker paused for a look of --eliminate also exits 75: the sweep decides what it runs next)\n"
       "  scontrol requeue \"$SLURM_JOB_ID\"  # ends this script; the scheduler lifts Slurm's requeue delay\n"
       "fi\nexit \"$rc\"\n";
  return s;
}

std::string slurm_options_problem(const SlurmOptions& o, const std::vector<std::string>& folders) {
  for (const auto& f : folders) {
    if (f.find_first_of("\t\n") != std::string::npos) {
      return "'" + f + "' has a tab or a line break, which the Slurm executor's run list cannot hold — rename it";
    }
  }
  const auto plain = [](const std::string& v, const std::string& allowed) {
    return std::all_of(v.begin(), v.end(), [&](char c) {
      return std::isalnum(static_cast<unsigned char>(c)) != 0 || allowed.find(c) != std::string::npos;
    });
  };
  if (!plain(o.partition, "_-.,")) {
    return "--partition '" + o.partition + "': a partition name (or a comma-separated list) has letters, digits and "
           "_ - . only";
  }
  // minutes, minutes:seconds, hours:minutes:seconds, days-hours[:minutes[:seconds]] (sbatch), or unlimited
  const size_t dash = o.time.find('-');
  const std::string clock = dash == std::string::npos ? o.time : o.time.substr(dash + 1);
  const std::vector<std::string> fields = split(clock, ':');
  const bool digits = std::all_of(fields.begin(), fields.end(), [](const std::string& f) {
    return !f.empty() && f.find_first_not_of("0123456789") == std::string::npos;
  });
  const bool days_ok = dash == std::string::npos ||
                       (dash > 0 && o.time.find_first_not_of("0123456789") == dash && fields.size() <= 3);
  if (!o.time.empty() && o.time != "unlimited" && o.time != "infinite" &&
      (!digits || fields.size() > 3 || !days_ok)) {
    return "--time '" + o.time + "': a Slurm time limit is minutes or [days-]hours:minutes:seconds, e.g. 2:00:00";
  }
  return "";
}

SlurmExecutor::SlurmExecutor(SlurmOptions options, std::string slurm_dir, std::string job_name)
    : m_options(std::move(options)), m_dir(std::move(slurm_dir)), m_job_name(std::move(job_name)) {}

std::optional<std::string> SlurmExecutor::adopt(const RunRow& row, const PlannedRun* run) {
  if (row.job.empty() || run == nullptr) {
    return std::nullopt;
  }
  const std::string array = array_of(row.job);
  if (!m_earlier.count(array)) {  // one squeue per earlier array
    m_earlier[array] = queue_states({array}).value_or(std::map<std::string, std::string>{});
  }
  const auto& states = m_earlier[array];
  const auto it = states.find(row.job);
  if (it == states.end()) {
    return std::nullopt;  // the task has left the queue: the run starts (or resumes) as a new one
  }
  m_arrays.insert(array_of(row.job));
  Task t;
  t.run_id = run->run_id;
  t.run_dir = row.run_dir;
  t.job = row.job;
  t.state = "";  // the next poll reports Slurm's state as it is now: "running" starts the watchdog's clock
  t.seen_running = it->second == k_slurm_running;
  m_tasks.push_back(t);
  return "Slurm task " + row.job + " is " + it->second;
}

std::optional<int64_t> SlurmExecutor::start(const PlannedRun& run, const RunRow& row, std::optional<int64_t> pause_at,
                                            std::string& where) {
  const int64_t threads = run.config.resources.threads > 0 ? run.config.resources.threads : 1;
  m_to_submit[{run.config.resources.ranks, threads}].push_back(
      {run.run_id, row.run_dir, run.config.data.dir, pause_at.value_or(0)});
  where = "Slurm";
  return std::nullopt;
}

// One array per (ranks, threads): its run list, its script, sbatch --parsable.
Observed SlurmExecutor::submit() {
  Observed seen;
  if (m_to_submit.empty()) {
    return seen;
  }
  fs::create_directories(m_dir);
  for (const auto& [shape, runs] : m_to_submit) {
    const std::string base = "array-" + std::to_string(m_arrays_written++);
    const fs::path runs_file = fs::path(m_dir) / (base + ".runs");
    std::string lines;
    for (const auto& run : runs) {
      // the dataset's folder last: a tab is a blank to `read`, so an empty field (a trainer of your
      // own has no dataset) may only end the line
      lines += run.run_dir + "\t" + std::to_string(run.pause_at) + "\t" + run.data_dir + "\n";
    }
    write_file_atomic(runs_file, lines);
    const fs::path script = fs::path(m_dir) / (base + ".sbatch");
    write_file_atomic(script, sbatch_script(m_job_name, runs_file.string(), runs.size(), shape.first, shape.second,
                                            m_dir, m_options));
    const Captured sub = slurm_command({"sbatch", "--parsable", script.string()});
    const std::string id = trim(sub.output.substr(0, sub.output.find(';')));
    if (sub.code != 0 || id.empty() || id.find_first_not_of("0123456789") != std::string::npos) {
      // The arrays sent before this one run: they are reported, and the runner records them first.
      seen.error = "sbatch failed (exit " + std::to_string(sub.code) + ") for " + script.string() + ": " + trim(sub.output);
      break;
    }
    m_arrays.insert(id);
    for (size_t i = 0; i < runs.size(); ++i) {
      Task t;
      t.run_id = runs[i].run_id;
      t.run_dir = runs[i].run_dir;
      t.job = id + "_" + std::to_string(i);
      t.state = "SUBMITTED";
      seen.jobs.push_back({t.run_id, t.job, t.state});
      seen.queued.push_back(t.run_id);
      m_tasks.push_back(t);
    }
    seen.notes.push_back("submitted Slurm array " + id + ": " + plural(static_cast<int64_t>(runs.size()), "task") + " of " +
                         plural(shape.first, "rank") + " × " + plural(shape.second, "thread") + " (" + script.string() + ")");
  }
  m_to_submit.clear();
  return seen;
}

void SlurmExecutor::follow(Task& t, Observed& seen) {
  const fs::path events = fs::path(t.run_dir) / "events.jsonl";
  if (!fs::exists(events) || fs::file_size(events) <= t.offset) {
    return;
  }
  std::ifstream in(events, std::ios::binary);
  in.seekg(static_cast<std::streamoff>(t.offset));
  std::string chunk((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const size_t last = chunk.rfind('\n');
  if (last == std::string::npos) {
    return;  // a line still being written
  }
  seen.events.emplace_back(t.run_id, split(chunk.substr(0, last), '\n'));
  t.offset += last + 1;
}

WorkerEnd SlurmExecutor::ended(const Task& t) const {
  WorkerEnd end;
  end.run_id = t.run_id;
  end.log = (fs::path(m_dir) / ("task-" + t.job + ".out")).string();  // --output=task-%A_%a.out
  end.detail = "Slurm task " + t.job + " ended without a result — " + end.log;
  end.log_tail = tail_lines(end.log, 5) + tail_lines(fs::path(t.run_dir) / "worker.log", 15);
  // The script logs "worker exit N" last. Two exits are told apart from the rest, which the run's
  // events already describe: a worker that could not write its files (74) stops the sweep, as
  // locally; one that checkpointed on SIGTERM (75) ended the script only once its requeues were
  // spent. (A task cancelled before the script's end logs no exit: its events say how it stopped.)
  const std::vector<std::string> out = split(trim(tail_lines(end.log, 1)), ' ');
  const bool logged_exit = out.size() >= 3 && out[out.size() - 3] == "worker" && out[out.size() - 2] == "exit";
  if (logged_exit && out.back() == std::to_string(static_cast<int>(Exit::io_error))) {
    end.exit_code = static_cast<int>(Exit::io_error);
    end.log_tail = tail_lines(fs::path(t.run_dir) / "worker.log", 5);
  } else if (logged_exit && out.back() == std::to_string(static_cast<int>(Exit::preempted))) {
    end.exit_code = static_cast<int>(Exit::preempted);
    end.requeues_spent = true;
  }
  return end;
}

Observed SlurmExecutor::poll() {
  Observed seen;
  if (m_cancelled) {  // every task was cancelled: they end now, with what they wrote
    for (auto& t : m_tasks) {
      follow(t, seen);
      seen.jobs.push_back({t.run_id, t.job, "CANCELLED"});
      seen.ended.push_back(ended(t));
    }
    m_tasks.clear();
    return seen;
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(static_cast<int>(m_options.poll_seconds * 1000)));
  const auto states = queue_states(m_arrays);
  for (size_t i = 0; i < m_tasks.size();) {
    Task& t = m_tasks[i];
    follow(t, seen);
    if (!states) {  // squeue failed this time: no conclusion about any task
      ++i;
      continue;
    }
    const auto it = states->find(t.job);
    if (it == states->end()) {  // the task has left the queue: its run directory says how it ended
      follow(t, seen);
      seen.jobs.push_back({t.run_id, t.job, "ENDED"});
      seen.ended.push_back(ended(t));
      m_tasks.erase(m_tasks.begin() + static_cast<long>(i));
      continue;
    }
    if (t.state != it->second) {
      t.state = it->second;
      seen.jobs.push_back({t.run_id, t.job, t.state});
      if (t.state == k_slurm_running) {
        t.seen_running = true;
        seen.running.emplace_back(t.run_id, "Slurm task " + t.job);
      } else if (t.state == "PENDING" && t.seen_running) {
        t.requeued_at = std::chrono::steady_clock::now();
        seen.requeued.push_back(t.run_id);
      }
    }
    // Slurm holds a requeued task back for two minutes (BeginTime). Once its last instance has
    // surely been cleaned up on the node (starting it at once fails on a revoked credential),
    // let it start as soon as there is room: it has checkpointed.
    if (t.requeued_at && std::chrono::steady_clock::now() - *t.requeued_at > std::chrono::seconds(10)) {
      if (t.state == "PENDING") {
        slurm_command({"scontrol", "update", "jobid=" + t.job, "starttime=now"});
      }
      t.requeued_at.reset();
    }
    ++i;
  }
  return seen;
}

void SlurmExecutor::kill(const std::string& run_id) {
  for (const auto& t : m_tasks) {
    if (t.run_id == run_id && !t.job.empty()) {
      const Captured c = slurm_command({"scancel", t.job});  // the task leaves the queue; poll reports it ended
      if (c.code != 0) {
        std::fprintf(stderr, "sweep: scancel %s failed (%s); tried again in 30 s\n", t.job.c_str(),
                     trim(c.output).c_str());
      }
    }
  }
}

std::string SlurmExecutor::stop(int times) {
  if (m_cancelled) {
    return "Ctrl-C again: the Slurm tasks are already cancelled";
  }
  m_cancelled = true;
  std::string ids;
  for (const auto& a : m_arrays) {
    slurm_command({"scancel", a});
    ids += (ids.empty() ? "" : ", ") + a;
  }
  return "Ctrl-C: cancelled Slurm job " + ids + "; " + std::to_string(m_tasks.size()) + " runs left to resume";
}

}  // namespace sweep
