// trainer.output read from a sweep file: the rules nanoGPT's lines need, and each bad rule a
// file:line:col error naming the fix.
#include <doctest/doctest.h>

#include <filesystem>

#include "config/trainer.h"
#include "helpers.h"

using namespace sweep;

namespace {

// read_trainer over `output` (a YAML mapping's lines, indented under trainer.output); the errors' text.
std::string errors_of(const std::string& output, TrainerSpec* spec = nullptr, const std::string& extra = "") {
  const std::string yaml = "command: [sh, run.sh, \"--max_iters={max_iters}\"]\n" +
                           (extra.empty() ? "files: [" SWEEP_TEST_DATA "/trainers/toy-trainer.sh]\n" : extra) +
                           "keys: {max_iters: 300, batch_size: 12}\n"
                           "output:\n" +
                           output;
  Diagnostics diags("sweep.yaml");
  TrainerSpec read = read_trainer(YAML::Load(yaml), "sweep.yaml", diags);
  if (spec) {
    *spec = read;
  }
  try {
    diags.throw_if_any();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("trainer.output: nanoGPT's rules are read, counts over the keys, the result from a line or an evaluation") {
  TrainerSpec spec;
  CHECK(errors_of("  train: {line: '^iter (?<step>\\d+): loss (?<loss>[^,]+),', step_offset: 1}\n"
                  "  eval: '^step (?P<step>\\d+): train loss \\S+, val loss (?P<loss>\\S+)'\n"
                  "  checkpoint: '^saving checkpoint to '\n"
                  "  result: '^test loss (?<loss>\\S+)'\n"
                  "  total_steps: \"{max_iters} + 1\"\n"
                  "  tokens_per_step: \"{batch_size} * 64\"\n",
                  &spec) == "");
  REQUIRE(spec.trainer.output);
  const OutputRules& o = *spec.trainer.output;
  CHECK(o.train.step_offset == 1);
  CHECK(o.eval.split == "val");
  CHECK(o.result.pattern == "^test loss (?<loss>\\S+)");
  CHECK(o.total_steps == "{max_iters} + 1");
  // what config.yaml carries reads back the same, and the rules are part of the trainer's version
  CHECK(OutputRules::from_json(o.to_json()).to_json() == o.to_json());
  const std::string with_rules = spec.trainer.version();
  spec.trainer.output.reset();
  CHECK(spec.trainer.version() != with_rules);

  CHECK(errors_of("  train: 'iter (?<step>\\d+): loss (?<loss>\\S+)'\n  eval: 'val (?<step>\\d+) (?<loss>\\S+)'\n"
                  "  result: {eval: val}\n",
                  &spec) == "");
  CHECK(spec.trainer.output->result_split == "val");
  CHECK(spec.trainer.output->result_source() == "the last val evaluation (trainer.output.result)");
}

TEST_CASE("trainer.output: a pattern that does not compile, an unknown group, a missing one — file:line:col") {
  // the column of the pattern's error inside the quoted scalar
  const std::string broken = errors_of("  train: 'iter (?<step>\\d+: loss (?<loss>\\S+)'\n  result: {eval: val}\n");
  CHECK(broken.find("sweep.yaml:5:") != std::string::npos);
  CHECK(broken.find("does not compile: missing closing parenthesis") != std::string::npos);
  const std::string unknown = errors_of("  train: 'iter (?<stp>\\d+): loss (?<loss>\\S+)'\n  result: '(?<loss>x)'\n");
  CHECK(unknown.find("sweep.yaml:5:19: 'trainer.output.train': no group (?<stp>...) in this rule — did you mean "
                     "(?<step>...)?") != std::string::npos);
  CHECK(unknown.find("must capture the step") != std::string::npos);
  CHECK(errors_of("  train: 'iter (?<step>\\d+): loss (?<loss>\\S+)'\n").find("'trainer.output.result'") !=
        std::string::npos);
  CHECK(errors_of("  train: 'iter (?<step>\\d+): loss (?<loss>\\S+)'\n  result: {eval: val}\n")
            .find("no 'trainer.output.eval' rule reads evaluations") != std::string::npos);
  CHECK(errors_of("  train: 'iter (?<step>\\d+): loss (?<loss>\\S+)'\n  result: '(?<loss>x)'\n"
                  "  total_steps: \"{max_iter} + 1\"\n")
            .find("unknown placeholder {max_iter}") != std::string::npos);
  CHECK(errors_of("  train: 'iter (?<step>\\d+): loss (?<loss>\\S+)'\n  result: '(?<loss>x)'\n"
                  "  params: \"{max_iters} +\"\n")
            .find("'{max_iters} +' (here '1 +'): not a number or arithmetic") != std::string::npos);
  // a program read by rules does not also print events
  CHECK(errors_of("  train: 'iter (?<step>\\d+): loss (?<loss>\\S+)'\n  result: '(?<loss>x)'\n", nullptr,
                  "files: [" SWEEP_TEST_DATA "/../../clients/python/sweep_events.py]\n")
            .find("prints events or is read by rules, not both") != std::string::npos);
  CHECK(errors_of("  train: 'iter (?<step>\\d+): loss (?<loss>\\S+)'\n  result: '(?<loss>x)'\n", nullptr,
                  "files: [" SWEEP_TEST_DATA "/trainers/toy-trainer.sh]\nresume_args: --init_from=resume\n")
            .find("'trainer.resume_args' is a list") != std::string::npos);
}

TEST_CASE("trainer.env: each probe's output, run in the trainer's folder, is part of the trainer's version") {
  TrainerSpec spec;
  const std::string rules = "  train: 'iter (?<step>\\d+): loss (?<loss>\\S+)'\n  result: '(?<loss>x)'\n";
  CHECK(errors_of(rules, &spec,
                  "files: [" SWEEP_TEST_DATA "/trainers/toy-trainer.sh]\nenv: [\"echo one\", \"pwd -P\"]\n") == "");
  // (the sweep file's folder: here the test's working directory)
  const std::string here = std::filesystem::canonical(std::filesystem::current_path()).string();
  CHECK(spec.trainer.env == std::map<std::string, std::string>{{"echo one", "one"}, {"pwd -P", here}});
  const std::string version = spec.trainer.version();
  spec.trainer.env["echo one"] = "two";  // another interpreter, another PyTorch: other run ids
  CHECK(spec.trainer.version() != version);
  CHECK(errors_of(rules, nullptr, "files: [" SWEEP_TEST_DATA "/trainers/toy-trainer.sh]\nenv: [\"date +%s%N\"]\n")
            .find("printed something else when run again") != std::string::npos);
  CHECK(errors_of(rules, nullptr, "files: [" SWEEP_TEST_DATA "/trainers/toy-trainer.sh]\nenv: [\"true\"]\n")
            .find("printed nothing") != std::string::npos);
  CHECK(errors_of(rules, nullptr,
                  "files: [" SWEEP_TEST_DATA "/trainers/toy-trainer.sh]\nenv: [\"echo no >&2; exit 3\"]\n")
            .find("sweep.yaml:3:7: 'trainer.env': `echo no >&2; exit 3` exited 3: no — run sweep in the environment") !=
        std::string::npos);
}

TEST_CASE("trainer.output: counts are arithmetic over numbers and the run's keys") {
  std::string why;
  CHECK(evaluate_count("{max_iters} + 1", {{"max_iters", "300"}}, why) == doctest::Approx(301));
  CHECK(evaluate_count("{a} * {b} * (2 + 2) / 8", {{"a", "12"}, {"b", "64"}}, why) == doctest::Approx(384));
  CHECK(evaluate_count("10.65M", {}, why) == doctest::Approx(10.65e6));
  CHECK(evaluate_count("16,384", {}, why) == doctest::Approx(16384));
  CHECK(evaluate_count("-1e-3", {}, why) == doctest::Approx(-0.001));
  CHECK_FALSE(evaluate_count("{a} + 1", {}, why));
  CHECK(why == "no value for {a} in '{a} + 1'");
  CHECK_FALSE(evaluate_count("{a} / 0", {{"a", "3"}}, why));
  CHECK(why == "'{a} / 0' (here '3 / 0'): a division by zero");
  CHECK_FALSE(evaluate_count("two", {}, why));
}
