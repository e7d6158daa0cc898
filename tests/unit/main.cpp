// doctest runner for the unit tests; LibTorch runs on one thread so results are reproducible.
// CTest runs each test case alone (--test-case=NAME): a filter that matches nothing would pass
// silently, so a run that executed no test case fails.
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>
#include <torch/torch.h>

namespace {

int g_test_cases_run = 0;

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

REGISTER_LISTENER("counting", 1, CountingListener);

}  // namespace

int main(int argc, char** argv) {
  at::set_num_threads(1);
  doctest::Context context(argc, argv);
  const int rc = context.run();
  if (context.shouldExit()) {
    return rc;  // --help, --list-test-cases, ...
  }
  if (g_test_cases_run == 0) {
    std::fprintf(stderr, "unit_tests: no test case matched the filter\n");
    return 1;
  }
  return rc;
}
