// doctest runner of the GPU tests (CTest label `gpu`). Without a CUDA build of LibTorch or
// without a visible CUDA device it says so and exits 77, which CTest reports as skipped; with
// one it names the device and runs the test cases asked for (CTest runs each alone: a crash
// ends one), on cuda:0.
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include <dlfcn.h>
#include <execinfo.h>
#include <ucontext.h>
#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <string_view>

#include "doctest_runner.h"
#include "train/device.h"

REGISTER_LISTENER("counting", 1, sweep::test::CountingListener);

namespace {

// A crash's stack on stderr (the binary links with -rdynamic so that its own functions are
// named), and where it jumped from when it jumped to no code (a call through a null pointer
// leaves the unwinder nothing to read: the return address on top of the stack says who called).
// doctest reports the crash, puts this handler back and raises the signal again, which is
// delivered in the crashed context. A GPU window is too short to rerun a crash under a debugger.
void name_address(const char* what, const void* address) {
  char line[512];
  Dl_info info{};
  const bool known = address != nullptr && ::dladdr(address, &info) != 0 && info.dli_fname != nullptr;
  const int n = std::snprintf(
      line, sizeof line, "  %s %p: %s(%s+0x%lx)\n", what, address, known ? info.dli_fname : "no code",
      known && info.dli_sname != nullptr ? info.dli_sname : "",
      known ? static_cast<unsigned long>(static_cast<const char*>(address) -
                                         static_cast<const char*>(info.dli_sname != nullptr ? info.dli_saddr : info.dli_fbase))
            : 0UL);
  (void)!::write(STDERR_FILENO, line, static_cast<size_t>(std::min(n, static_cast<int>(sizeof line) - 1)));
}

void print_stack(int sig, siginfo_t*, void* context) {
  const char head[] = "gpu tests: crashed; where (c++filt reads the names):\n";
  (void)!::write(STDERR_FILENO, head, sizeof head - 1);
  const auto* uc = static_cast<const ucontext_t*>(context);
  const auto* pc = reinterpret_cast<const void*>(uc->uc_mcontext.gregs[REG_RIP]);
  name_address("at", pc);
  Dl_info info{};
  if (pc == nullptr || ::dladdr(pc, &info) == 0) {
    name_address("called from", *reinterpret_cast<void* const*>(uc->uc_mcontext.gregs[REG_RSP]));
  }
  void* frames[64];
  ::backtrace_symbols_fd(frames, ::backtrace(frames, 64), STDERR_FILENO);
  std::signal(sig, SIG_DFL);
  std::raise(sig);
}

}  // namespace

int main(int argc, char** argv) {
  struct sigaction on_crash {};
  on_crash.sa_sigaction = print_stack;
  on_crash.sa_flags = SA_SIGINFO;
  for (const int sig : {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT}) {
    ::sigaction(sig, &on_crash, nullptr);
  }
  // cuBLAS picks deterministic kernels only with this set before CUDA starts (the resume test).
  ::setenv("CUBLAS_WORKSPACE_CONFIG", ":4096:8", 0);
  sweep::test::flight_recorder_off();
  doctest::Context context(argc, argv);
  // Listing the test cases (CTest's discovery, at build time) needs no device.
  if (std::any_of(argv + 1, argv + argc, [](const char* a) { return std::string_view(a).rfind("--list-", 0) == 0; })) {
    return context.run();
  }
  const sweep::BuildDevices b = sweep::build_devices();
  if (!b.cuda_built || b.cuda.empty()) {
    std::printf("gpu tests skipped: %s — they run on a machine with a CUDA GPU, built against a CUDA PyTorch "
                "(scripts/test-gpu.sh)\n",
                b.cuda_built ? "no CUDA device is visible" : ("this build's LibTorch " + b.libtorch + " has no CUDA").c_str());
    return 77;
  }
  std::printf("gpu tests on cuda:0: %s (%.0f GiB, compute capability %d.%d), LibTorch %s, CUDA %s\n",
              b.cuda[0].name.c_str(), b.cuda[0].memory_gib, b.cuda[0].major, b.cuda[0].minor, b.libtorch.c_str(),
              b.cuda_version.c_str());
  at::set_num_threads(1);
  return sweep::test::run_test_cases(context, "gpu_tests");
}
