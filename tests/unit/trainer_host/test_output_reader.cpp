// A program's own lines read into events by trainer.output: nanoGPT's exact lines, a start made
// where the first line says, a resumed program, the result from a line or the last evaluation, and
// each way a line or a whole output fails the run with the line quoted.
#include <doctest/doctest.h>

#include "protocol/events.h"
#include "trainer_host/output_reader.h"

using namespace sweep;

namespace {

OutputRules nanogpt_rules() {
  OutputRules o;
  o.train = {"^iter (?<step>\\d+): loss (?<loss>[^,]+),", 1, ""};
  o.eval = {"^step (?<step>\\d+): train loss \\S+, val loss (?<loss>\\S+)", 0, "val"};
  o.checkpoint = {"^saving checkpoint to ", 0, ""};
  o.result = {"^test loss (?<loss>\\S+)", 0, ""};
  return o;
}

std::vector<nlohmann::json> read_all(OutputReader& reader, const std::vector<std::string>& lines) {
  std::vector<nlohmann::json> out;
  for (const auto& line : lines) {
    for (auto& ev : reader.take(line)) {
      out.push_back(std::move(ev));
    }
  }
  return out;
}

}  // namespace

TEST_CASE("output reader: nanoGPT's lines make a start, evaluations, train points, a checkpoint and the result") {
  OutputReader reader(nanogpt_rules(), {768, 301, 98304});
  const auto evs = read_all(reader, {"Overriding: max_iters = 300", "tokens per iteration will be: 768",
                                     "step 0: train loss 4.4108, val loss 4.4129",
                                     "iter 0: loss 4.4226, time 812.66ms, mfu -100.00%",
                                     "iter 10: loss 3.9312, time 11.05ms, mfu 0.01%",
                                     "step 100: train loss 2.9, val loss 2.95", "saving checkpoint to out",
                                     "iter 100: loss 2.8797, time 31.28ms, mfu 0.01%", "test loss 2.719513"});
  REQUIRE(evs.size() == 7);
  CHECK(evs[0] == nlohmann::json{{"event", "start"}, {"step", 0}, {"resumed", false}, {"tokens", 0},
                                 {"total_steps", 301}, {"tokens_per_step", 768}, {"params", 98304}});
  CHECK(evs[1] ==
        nlohmann::json{{"event", "eval"}, {"step", 0}, {"loss", 4.4129}, {"split", "val"}, {"tokens", 0}});
  CHECK(evs[2]["step"] == 1);  // "iter 0" follows 1 step taken
  CHECK(evs[2]["tokens"] == 768);
  CHECK_FALSE(evs[2].contains("tokens_per_s"));
  CHECK(evs[3]["step"] == 11);
  CHECK(evs[3].contains("tokens_per_s"));  // the time since the train line before
  CHECK(evs[5] == nlohmann::json{{"event", "checkpoint"}, {"step", 100}, {"tokens", 76800}});
  CHECK_FALSE(evs[6].contains("tokens_per_s"));  // an evaluation came between
  CHECK(reader.checkpoint_step() == 100);  // counted once the program printed again (its save done)
  CHECK(reader.failure().empty());
  const nlohmann::json end = reader.end();
  CHECK(end["status"] == "done");
  CHECK(end["test_loss"] == 2.719513);
  CHECK(end["step"] == 101);
}

TEST_CASE("output reader: a resumed program starts at its first line's step, the last evaluation is the result") {
  OutputRules rules = nanogpt_rules();
  rules.result = {};
  rules.result_split = "val";
  OutputReader reader(rules, {});
  const auto evs = read_all(reader, {"Resuming training from out", "step 600: train loss 2.5, val loss 2.61",
                                     "iter 600: loss 2.4, time 1ms, mfu 0%",
                                     "step 700: train loss 2.4, val loss 2.58"});
  REQUIRE(evs.size() == 4);
  CHECK(evs[0]["step"] == 600);
  CHECK(evs[0]["resumed"] == true);
  CHECK(evs[0]["tokens"] == 0);  // no tokens per step known: tokens untold
  CHECK(reader.end()["test_loss"] == 2.58);

  OutputReader by_train(rules, {10, {}, {}});  // the first line a train line: the start is the step before it
  const auto first = read_all(by_train, {"iter 41: loss 2.4, time 1ms"});
  CHECK(first[0]["step"] == 41);
  CHECK(first[0]["tokens"] == 410);
  CHECK(first[1]["step"] == 42);
}

TEST_CASE("output reader: a checkpoint counts once the program prints again or exits, a non-finite result diverged") {
  OutputReader stopped(nanogpt_rules(), {});
  auto evs = read_all(stopped, {"iter 99: loss 3.0, time 1ms", "saving checkpoint to out"});
  CHECK(evs.size() == 2);  // start, train: nanoGPT prints the line before its save
  CHECK_FALSE(stopped.checkpoint_step());
  evs = read_all(stopped, {"iter 100: loss 2.9, time 1ms"});
  REQUIRE(evs.size() == 2);
  CHECK(evs[0] == nlohmann::json{{"event", "checkpoint"}, {"step", 100}, {"tokens", 0}});
  CHECK(stopped.checkpoint_step() == 100);
  read_all(stopped, {"saving checkpoint to out"});
  const auto last = stopped.exited();  // it exited 0: the save is done
  REQUIRE(last);
  CHECK((*last)["step"] == 101);
  CHECK_FALSE(stopped.exited());

  OutputReader blew_up(nanogpt_rules(), {});
  read_all(blew_up, {"iter 0: loss 4.4, time 1ms", "test loss nan"});
  const nlohmann::json end = blew_up.end();
  CHECK(end["status"] == "diverged");
  CHECK(end["test_loss"] == "nan");
}

TEST_CASE("output reader: a value that is no number, a step from 0 and lines that never match fail with the line") {
  OutputReader nan_is_a_loss(nanogpt_rules(), {});
  const auto evs = read_all(nan_is_a_loss, {"iter 3: loss nan, time 1ms"});
  CHECK(evs[1]["loss"] == "nan");

  OutputReader word(nanogpt_rules(), {});
  CHECK(read_all(word, {"iter 3: loss high, time 1ms"}).empty());
  CHECK(word.failure() == "trainer.output.train matched with a loss that is no number ('high'): "
                          "'iter 3: loss high, time 1ms'");
  CHECK(read_all(word, {"iter 4: loss 2.0, time 1ms"}).empty());  // a failed reader reads nothing more

  OutputRules from_zero = nanogpt_rules();
  from_zero.train.step_offset = 0;
  OutputReader zero(from_zero, {});
  read_all(zero, {"iter 0: loss 4.4, time 1ms"});
  CHECK(zero.failure().find("needs step_offset: 1") != std::string::npos);

  OutputReader silent(nanogpt_rules(), {});
  for (int64_t i = 0; i < k_unmatched_lines_allowed; ++i) {
    CHECK(read_all(silent, {"epoch " + std::to_string(i) + " loss=3.2"}).empty());
  }
  CHECK(silent.failure().rfind("no line matched the train rule (trainer.output.train) in the program's first 1000 "
                               "lines; its first lines: 'epoch 0 loss=3.2', 'epoch 1 loss=3.2'",
                               0) == 0);

  OutputReader no_result(nanogpt_rules(), {});
  read_all(no_result, {"iter 0: loss 4.4, time 1ms", "Traceback (most recent call last):", "KeyError: 'x'"});
  const nlohmann::json end = no_result.end();
  CHECK(end["status"] == "failed");
  CHECK(end["reason"] == "the program exited without a result: the line matching trainer.output.result was never "
                         "read; its last lines: 'iter 0: loss 4.4, time 1ms', 'Traceback (most recent call last):', "
                         "'KeyError: 'x''");
  OutputReader nothing(nanogpt_rules(), {});
  read_all(nothing, {"hello"});
  CHECK(nothing.end()["reason"] == "no line matched the train rule (trainer.output.train): the program's first "
                                   "lines: 'hello'");
}
