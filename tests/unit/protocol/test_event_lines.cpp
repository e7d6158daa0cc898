// Event lines from outside sweep's own code against their readers: the bounded JSON parse every
// reader shares (protocol/json_line.h) and the worker host's events contract (trainer_host/host.h),
// on a fuzz corpus of lines mutated in depth, size and encoding. No line may crash or throw; a line
// is either an accepted event whose fields passed the contract, or refused.
#include <doctest/doctest.h>

#include <random>
#include <string>
#include <vector>

#include "trainer_host/host.h"
#include "protocol/event_check.h"
#include "protocol/event_order.h"
#include "protocol/json_line.h"

using namespace sweep;

namespace {

std::string nested(int depth, const std::string& inner = "1") {
  return std::string(static_cast<size_t>(depth), '[') + inner + std::string(static_cast<size_t>(depth), ']');
}

const std::vector<std::string> k_valid{
    R"({"event":"start","step":0,"total_steps":12,"tokens_per_step":128,"params":1000})",
    R"({"event":"train","step":3,"tokens":384,"loss":2.5,"lr":0.001,"grad_norm":0.7})",
    R"({"event":"eval","step":3,"split":"val","loss":2.6})",
    R"({"event":"checkpoint","step":3})",
    R"({"event":"heartbeat","step":3,"phase":"eval"})",
    R"({"event":"end","status":"done","step":12,"test_loss":2.4,"extra":{"a":[1,2,{"b":"x"}]}})",
};

}  // namespace

TEST_CASE("a JSON line is bounded in depth and size: too deep or too long is no JSON, and nothing recurses on it") {
  CHECK_FALSE(events::nested_deeper_than(nested(64), 64));
  CHECK(events::nested_deeper_than(nested(65), 64));
  CHECK(events::parse_json_line(R"({"a":)" + nested(63) + "}").is_object());  // 64 levels in all
  CHECK(events::parse_json_line(R"({"a":)" + nested(64) + "}").is_discarded());
  // brackets inside strings, escaped quotes and backslashes included, are no nesting
  const std::string in_string = R"({"a":"[[[[\"[[[\\","b":1})";
  CHECK_FALSE(events::nested_deeper_than(in_string, 1));
  CHECK(events::parse_json_line(in_string)["b"] == 1);
  // 100,000 levels (the line that overflowed the worker's stack), and a million
  for (const int depth : {100000, 1000000}) {
    CHECK(events::parse_json_line(R"({"event":"train","deep":)" + nested(depth) + "}").is_discarded());
  }
  CHECK(events::parse_json_line(std::string(events::k_max_json_line + 1, ' ')).is_discarded());
  CHECK(events::parse_json_line("{\"a\":\"\xff\xfe\"}").is_discarded());  // invalid UTF-8: malformed
}

TEST_CASE("a discarded JSON line says why when asked: too long, too deep, or the parser's own words") {
  std::string why;
  CHECK(events::parse_json_line(std::string(events::k_max_json_line + 1, ' '), &why).is_discarded());
  CHECK(why == "longer than 256 KiB");
  CHECK(events::parse_json_line(nested(65), &why).is_discarded());
  CHECK(why == "nested deeper than 64 arrays and objects");
  CHECK(events::parse_json_line(R"({"event":"eval","loss":1e400})", &why).is_discarded());
  CHECK(why.find("malformed JSON: ") == 0);
  CHECK(why.find("1e400") != std::string::npos);
  why = "untouched";
  CHECK(events::parse_json_line(R"({"a":1})", &why)["a"] == 1);
  CHECK(why == "untouched");  // a line that parses leaves it be
}

TEST_CASE("the worker host's events contract on a fuzz corpus: no line crashes or throws, every accepted one is an event") {
  OwnTrainer trainer;
  trainer.name = "fuzz";
  trainer.command = {"./t.sh"};
  std::mt19937 rng(47);
  std::vector<std::string> corpus(k_valid);
  for (const auto& v : k_valid) {  // depth at every place a value can go
    corpus.push_back(v.substr(0, v.size() - 1) + R"(,"deep":)" + nested(65) + "}");
    corpus.push_back(v.substr(0, v.size() - 1) + R"(,"deep":)" + nested(100000) + "}");
    corpus.push_back(v.substr(0, v.size() - 1) + R"(,"pad":")" + std::string(events::k_max_json_line, 'x') + "\"}");
  }
  const std::string alphabet = "{}[]\":,0123456789.eE-+ntrufalsx\\ \x01\x7f\xc3\xa9\xff\xed\xa0\x80";
  for (int i = 0; i < 3000; ++i) {  // byte flips, insertions, cuts and splices of valid lines
    std::string s = k_valid[rng() % k_valid.size()];
    const int edits = 1 + static_cast<int>(rng() % 4);
    for (int e = 0; e < edits && !s.empty(); ++e) {
      const size_t at = rng() % s.size();
      switch (rng() % 4) {
        case 0: s[at] = alphabet[rng() % alphabet.size()]; break;
        case 1: s.insert(at, 1, alphabet[rng() % alphabet.size()]); break;
        case 2: s.resize(at); break;
        default: s.insert(at, k_valid[rng() % k_valid.size()]); break;
      }
    }
    corpus.push_back(s);
  }
  int accepted = 0;
  for (const auto& line : corpus) {
    CAPTURE(line.substr(0, 200));
    std::string why;
    std::optional<nlohmann::json> ev;
    CHECK_NOTHROW(ev = accept_event(line, trainer, why));
    if (ev) {
      ++accepted;
      CHECK(ev->is_object());
      CHECK((*ev)["event"].is_string());
      CHECK(ev->dump().size() < 2 * events::k_max_json_line);  // what is written back is bounded too
      // the host's rules include the store's: every event it passes on, the store places
      CHECK(events::event_problem(*ev, events::Rules::placement).empty());
    }
  }
  CHECK(accepted >= static_cast<int>(k_valid.size()));  // the valid lines, and mutations that stay valid
  MESSAGE(corpus.size() << " lines, " << accepted << " accepted as events");
}

TEST_CASE("the event rules: the store's placement rules, and the stricter ones a trainer of your own is held to") {
  struct Row {
    const char* line;
    const char* placement;  // "" = kept
    const char* trainer;
  };
  const std::vector<Row> table{
      {R"({"event":"train","step":3,"tokens":384,"loss":2.5})", "", ""},
      {R"({"event":"train","step":3,"loss":2.5})", "train event: \"tokens\" must be a whole number ≥ 0 (training tokens consumed)",
       "train event: \"tokens\" must be a whole number ≥ 0 (training tokens consumed)"},
      {R"({"event":"train","step":0,"tokens":0,"loss":2.5})", "train event: \"step\" of a train event counts the step just taken: 1 or more",
       "train event: \"step\" of a train event counts the step just taken: 1 or more"},
      {R"({"event":"train","step":3,"tokens":384,"loss":"bogus"})", "train event: \"loss\" must be a number, or \"nan\", \"inf\", \"-inf\"",
       "train event: \"loss\" must be a number, or \"nan\", \"inf\", \"-inf\""},
      // an optional field of another type: read as missing by the store, refused from a trainer
      {R"({"event":"train","step":3,"tokens":384,"loss":2.5,"lr":"high"})", "", "train event: \"lr\" must be a number"},
      {R"({"event":"eval","step":3,"split":"dev","loss":2.6})", "eval event: \"split\" must be \"val\" or \"test\"",
       "eval event: \"split\" must be \"val\" or \"test\""},
      {R"({"event":"eval","step":3,"split":"val","loss":2.6,"tokens":-1})", "", "eval event: \"tokens\" must be a whole number ≥ 0 (training tokens consumed)"},
      {R"({"event":"start","step":0,"total_steps":1.5})", "", "start event: \"total_steps\" must be a whole number ≥ 0"},
      {R"({"event":"start","step":0,"total_steps":1e9,"resumed":true})", "", ""},
      {R"({"event":"heartbeat","step":"two"})", "heartbeat event: \"step\" must be a whole number ≥ 0 (optimizer steps taken)",
       "heartbeat event: \"step\" must be a whole number ≥ 0 (optimizer steps taken)"},
      // an end's state: a string for the store (one it does not know is read as failed); a trainer says one of four
      {R"({"event":"end","status":"interrupted","reason":"disk full"})", "", "end event: \"status\" must be \"done\", \"diverged\", \"failed\" or \"preempted\""},
      {R"({"event":"end","status":"newer-state"})", "", "end event: \"status\" must be \"done\", \"diverged\", \"failed\" or \"preempted\""},
      {R"({"event":"end","status":["done"]})", "end event: \"status\" must be a string",
       "end event: \"status\" must be \"done\", \"diverged\", \"failed\" or \"preempted\""},
      {R"({"event":"end","status":"done","test_loss":"low"})", "", "end event: \"test_loss\" must be a number"},
      {R"({"event":"end","status":"done","time":"noon"})", "", "end event: \"time\" must be unix seconds (a number)"},
      // the store: none, or one it does not know, read as failed; a step of another type read as 0
      {R"({"event":"end"})", "", "end event: \"status\" must be \"done\", \"diverged\", \"failed\" or \"preempted\""},
      {R"({"event":"end","status":"failed","step":"12"})", "", "end event: \"step\" must be a whole number ≥ 0 (optimizer steps taken)"},
      // a type events.h does not define: the store keeps its time (a newer worker's), with a step
      {R"({"event":"progress","step":1})", "", "\"event\" must be one of start, train, eval, checkpoint, heartbeat, end"},
      {R"({"event":"progress"})", "unknown event: \"step\" must be a whole number ≥ 0",
       "\"event\" must be one of start, train, eval, checkpoint, heartbeat, end"},
  };
  for (const auto& r : table) {
    CAPTURE(r.line);
    const nlohmann::json ev = nlohmann::json::parse(r.line);
    CHECK(events::event_problem(ev, events::Rules::placement) == r.placement);
    CHECK(events::event_problem(ev, events::Rules::trainer) == r.trainer);
  }
}

TEST_CASE("the order of a run's events: the first end event is its result, a done before the start is a breach") {
  using events::EventOrder;
  const auto j = [](const char* text) { return nlohmann::json::parse(text); };
  const auto take = [](EventOrder& order, nlohmann::json ev) { return order.next(ev); };
  {  // done, then failed, then done 99: the first done stands, the rest is ignored with a reason
    EventOrder order(EventOrder::Source::one_process);
    CHECK(take(order, j(R"({"event":"start","step":0})")).empty());
    CHECK(take(order, j(R"({"event":"train","step":1,"tokens":8,"loss":3})")).empty());
    CHECK(take(order, j(R"({"event":"end","status":"done","test_loss":3.1})")).empty());
    CHECK(take(order, j(R"({"event":"end","status":"failed"})")) == "after the run's end event \"done\", which is its result");
    CHECK_FALSE(take(order, j(R"({"event":"end","status":"done","test_loss":99})")).empty());
    CHECK_FALSE(take(order, j(R"({"event":"train","step":2,"tokens":8,"loss":3})")).empty());
  }
  {  // done first: a failed end that says why, and nothing after it
    EventOrder order(EventOrder::Source::one_process);
    nlohmann::json done = j(R"({"event":"end","status":"done","test_loss":3.1,"test_bpb":1})");
    CHECK(order.next(done).empty());
    CHECK(done["status"] == "failed");
    CHECK(done["reason"] == events::k_done_before_start);
    CHECK_FALSE(done.contains("test_loss"));
    CHECK_FALSE(done.contains("test_bpb"));
    CHECK_FALSE(take(order, j(R"({"event":"start","step":0})")).empty());
  }
  {  // one program: one start; train steps go forward, from the step it resumed at
    EventOrder order(EventOrder::Source::one_process);
    CHECK(take(order, j(R"({"event":"heartbeat","step":0,"phase":"train"})")).empty());
    CHECK(take(order, j(R"({"event":"start","step":5})")).empty());
    CHECK(take(order, j(R"({"event":"train","step":5,"tokens":8,"loss":3})")) == "step 5 after step 5: steps go forward");
    CHECK(take(order, j(R"({"event":"train","step":6,"tokens":8,"loss":3})")).empty());
    CHECK(take(order, j(R"({"event":"train","step":4,"tokens":8,"loss":3})")) == "step 4 after step 6: steps go forward");
    CHECK(take(order, j(R"({"event":"eval","step":6,"split":"val","loss":3})")).empty());
    CHECK(take(order, j(R"({"event":"start","step":0})")) == "a second start event from one program");
    CHECK(take(order, j(R"({"event":"end","status":"preempted"})")).empty());
    CHECK_FALSE(take(order, j(R"({"event":"start","step":6})")).empty());
  }
  {  // a file: attempt after attempt, each from its start; nothing after a done
    EventOrder order(EventOrder::Source::file);
    CHECK(take(order, j(R"({"event":"start","step":0})")).empty());
    CHECK(take(order, j(R"({"event":"train","step":1,"tokens":8,"loss":3})")).empty());
    CHECK(take(order, j(R"({"event":"start","step":0})")).empty());  // killed without an end: resumed
    CHECK(take(order, j(R"({"event":"train","step":1,"tokens":8,"loss":3})")).empty());
    CHECK(take(order, j(R"({"event":"end","status":"preempted"})")).empty());
    CHECK_FALSE(take(order, j(R"({"event":"train","step":2,"tokens":8,"loss":3})")).empty());
    CHECK(take(order, j(R"({"event":"start","step":1})")).empty());
    CHECK(take(order, j(R"({"event":"end","status":"done","test_loss":3})")).empty());
    CHECK_FALSE(take(order, j(R"({"event":"start","step":0})")).empty());
  }
  {  // a step past the start's total_steps is no step of the run, for every event but the end; the
     // store holds every line to the same rule (outside_run)
    EventOrder order(EventOrder::Source::one_process);
    CHECK(take(order, j(R"({"event":"start","step":0,"total_steps":4})")).empty());
    CHECK(take(order, j(R"({"event":"train","step":2,"tokens":8,"loss":3})")).empty());
    CHECK(take(order, j(R"({"event":"train","step":102,"tokens":816,"loss":3})")) == "step 102 past the run's total_steps 4");
    CHECK(take(order, j(R"({"event":"eval","step":5,"split":"val","loss":3})")) == "step 5 past the run's total_steps 4");
    CHECK(take(order, j(R"({"event":"train","step":3,"tokens":24,"loss":3})")).empty());  // 102 was never taken
    CHECK(take(order, j(R"({"event":"train","step":4,"tokens":32,"loss":3})")).empty());
    CHECK(take(order, j(R"({"event":"end","status":"done","step":5,"test_loss":3})")).empty());  // nanoGPT's max_iters + 1
    CHECK(events::outside_run("train", 5, 4) == "step 5 past the run's total_steps 4");
    CHECK(events::outside_run("train", 5, 0).empty());  // not said: no bound
    CHECK(events::outside_run("end", 9, 4).empty());
    CHECK(events::outside_run("end", -1, 4) == "a negative step");
  }
  {  // a file: the scheduler's end of an attempt replaces the worker's non-final end, never a result
    EventOrder order(EventOrder::Source::file);
    CHECK(take(order, j(R"({"event":"start","step":0})")).empty());
    CHECK(order.attempt_open());
    CHECK(take(order, j(R"({"event":"end","status":"failed","reason":"x"})")).empty());
    CHECK_FALSE(order.attempt_open());
    CHECK_FALSE(take(order, j(R"({"event":"end","status":"failed","reason":"a second"})")).empty());
    CHECK(take(order, j(R"({"event":"end","status":"failed","reason":"exit 1","by":"sweep"})")).empty());
    CHECK(take(order, j(R"({"event":"start","step":0})")).empty());
    CHECK(take(order, j(R"({"event":"end","status":"done","test_loss":3})")).empty());
    CHECK_FALSE(take(order, j(R"({"event":"end","status":"failed","reason":"exit 1","by":"sweep"})")).empty());
    CHECK_FALSE(order.attempt_open());
  }
  {  // a program cannot say it is the scheduler: the host drops "by" from its events
    OwnTrainer trainer;
    trainer.name = "t";
    trainer.command = {"./t.sh"};
    std::string why;
    const auto ev = accept_event(R"({"event":"end","status":"failed","by":"sweep"})", trainer, why);
    REQUIRE(ev);
    CHECK_FALSE(ev->contains("by"));
  }
  // a whole events.jsonl: the lines after the result left out, a done before the start rewritten
  const std::vector<std::string> lines{R"({"event":"start","step":0})", "not an event",
                                       R"({"event":"end","status":"done","test_loss":3.1})",
                                       R"({"event":"end","status":"done","test_loss":99})"};
  CHECK(events::in_event_order(lines) == std::vector<std::string>(lines.begin(), lines.begin() + 3));
  // an event the store would not place starts nothing: a start without a step is no attempt
  events::EventOrder order(events::EventOrder::Source::file);
  CHECK(events::in_event_order({R"({"event":"start"})", R"({"event":"train","step":1,"loss":2})"}, order).empty());
  CHECK_FALSE(order.attempt_open());
  const auto breach = events::in_event_order({R"({"event":"end","status":"done","test_loss":3.1})"});
  REQUIRE(breach.size() == 1);
  CHECK(nlohmann::json::parse(breach[0])["status"] == "failed");
}

// `sweep ingest` rebuilds a run's attempts from its folder as the scheduler counted its launches: a
// resume after a pause or a Ctrl-C is no new attempt, a retry after a crash is.
TEST_CASE("the attempts a run folder's starts make: resumes after a preemption or an interruption are none") {
  events::EventOrder order(events::EventOrder::Source::file);
  events::in_event_order({R"({"event":"start","step":0,"total_steps":9})", R"({"event":"checkpoint","step":3})",
                          R"({"event":"end","status":"preempted","step":3})",  // paused for a look
                          R"({"event":"start","step":3,"total_steps":9})",
                          R"({"event":"end","status":"failed","reason":"killed","by":"sweep"})",  // a crash
                          R"({"event":"start","step":3,"total_steps":9})",
                          R"({"event":"end","status":"interrupted","by":"sweep"})",  // Ctrl-C
                          R"({"event":"start","step":3,"total_steps":9})"},
                         order);
  CHECK(order.attempts() == 2);
  events::EventOrder none(events::EventOrder::Source::file);
  CHECK(none.attempts() == 0);
}
