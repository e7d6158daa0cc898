// What the unit and the GPU test runners share: a run that executed no test case fails (CTest
// runs each test case alone, --test-case=NAME, and a filter that matches nothing would pass
// silently), and c10d's flight recorder is off.
#pragma once

#include <doctest/doctest.h>

#include <cstdio>
#include <cstdlib>

namespace sweep::test {

inline int g_test_cases_run = 0;

struct CountingListener : doctest::IReporter {
  explicit CountingListener(const doctest::ContextOptions&) {}
  void report_query(const doctest::QueryData&) override {}
  void test_run_start() override {}
  void test_run_end(const doctest::TestRunStats&) override {}
  void test_case_start(const doctest::TestCaseData&) override { ++g_test_cases_run; }
  void test_case_reenter(const doctest::TestCaseData&) override {}
  void test_case_end(const doctest::CurrentTestCaseStats&) override {}
  void test_case_exception(const doctest::TestCaseException&) override {}
  void subcase_start(const doctest::SubcaseSignature&) override {}
  void subcase_end() override {}
  void log_assert(const doctest::AssertData&) override {}
  void log_message(const doctest::MessageData&) override {}
  void test_case_skipped(const doctest::TestCaseData&) override {}
};

// Before anything starts a process group. The tests run several ranks as threads of one process,
// and LibTorch 2.x's c10d flight recorder (one per process) adds each group's status to a map
// before it takes its lock: two ranks' first collectives at once crashed inside std::map
// (FlightRecorder::recordWithResetEnabled, LibTorch 2.11). A rank of `sweep` is a process of its own.
inline void flight_recorder_off() { ::setenv("TORCH_FR_BUFFER_SIZE", "0", 1); }

// The test cases `context` selects; 1 when none matched (`name`: the runner's, for the message).
inline int run_test_cases(doctest::Context& context, const char* name) {
  const int rc = context.run();
  if (context.shouldExit()) {
    return rc;  // --help, --list-test-cases, ...
  }
  if (g_test_cases_run == 0) {
    std::fprintf(stderr, "%s: no test case matched the filter\n", name);
    return 1;
  }
  return rc;
}

}  // namespace sweep::test
