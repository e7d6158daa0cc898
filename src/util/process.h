// Child processes: spawned from an argv vector (never through a shell), optionally in their own
// process group with stdout on a pipe and stderr appended to a file; waited for.
#pragma once

#include <sys/types.h>

#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace sweep {

// Runs argv[0] (a path, or a name looked up in PATH) and waits. Returns the exit status, or
// 128 + signal number when it was killed. stdout and stderr are inherited, or appended to
// `output_file` when one is given.
int run_process(const std::vector<std::string>& argv, const std::string& output_file = "");

// Runs argv (PATH lookup) and waits, its stdout and stderr captured together.
struct Captured {
  int code = 0;
  std::string output;
};
Captured run_capture(const std::vector<std::string>& argv);

// For a training process: freed memory stays in the process for the next step's tensors instead
// of going back to the kernel. glibc's defaults map every block over its mmap threshold (at
// most 32 MiB) afresh and trim the heap's top, so each step page-faulted its activations and
// logits in again (measured, reference config at vocab 4096: 1.36 M faults over a bench run
// against 0.27 M, and the fused cross-entropy op 40 → 17 ms). Here nothing is mapped per block
// and the heap is never trimmed: the process keeps its peak, which a training process reaches
// every step anyway.
void keep_freed_memory();

// Gives the free pages kept by keep_freed_memory back to the kernel (glibc's malloc_trim): what
// the process holds resident is again what it uses, e.g. before measuring a new peak.
void release_freed_memory();

// The path of an executable `name` found in PATH.
std::optional<std::string> find_program(const std::string& name);

struct SpawnOptions {
  std::vector<std::string> argv;
  std::map<std::string, std::string> env;  // set in addition to this process's environment
  std::string stderr_file;                 // appended to; "" = inherit
  bool pipe_stderr = false;                // stderr on a pipe of its own (Child::stderr_fd); stderr_file unused
  bool own_process_group = true;           // pgid = pid, so the whole tree can be signalled
  bool pipe_stdout = true;                 // false: stdout inherited (Child::stdout_fd = -1)
  std::string cwd;                         // the child's working directory; "" = this process's
};

struct Child {
  pid_t pid = -1;
  int stdout_fd = -1;  // read end of the child's stdout (non-blocking)
  int stderr_fd = -1;  // with pipe_stderr: read end of its stderr (non-blocking)
};

Child spawn(const SpawnOptions& options);

// Exit status of a waitpid() status: the exit code, or 128 + signal.
int exit_code_of(int wait_status);

bool process_alive(pid_t pid);

// Makes this process the reaper of its descendants (Linux's PR_SET_CHILD_SUBREAPER): a process
// its children leave behind — put in the background, in a session of its own (setsid),
// double-forked — becomes this process's child when its parent dies, instead of init's.
void become_subreaper();

// Stops every child this process still has, and theirs as they are orphaned to it (with
// become_subreaper): SIGTERM, then SIGKILL to what is left after `grace_ms`. Returns how many
// processes it stopped. For a host whose program has exited: nothing it started outlives it.
int stop_descendants(int grace_ms);

// A TCP port free on 127.0.0.1 now (for a rendezvous of ranks).
int free_port();

// How many processes the kernel's OOM killer has killed in this process's memory cgroup
// (cgroup v2 memory.events or v1 memory.oom_control), or -1 when the count cannot be read.
long oom_kill_count();

// The cores this process may run on (its affinity mask, which a scheduler may have narrowed).
int available_cores();

// The running executable's file (/proc/self/exe), whatever name it was started under: what starts
// its workers and rank children, so that a build renamed or copied elsewhere never starts another
// build's `sweep` beside it. Its folder is where helper programs live.
std::filesystem::path executable_path();
std::filesystem::path executable_dir();

}  // namespace sweep
