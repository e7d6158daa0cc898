// A program's own output read into sweep's events by its trainer.output rules
// (config/trainer_output.h): each line searched by the train, eval, checkpoint and result rules;
// a start event made before the first line a rule reads (its step: that line's, less the step a
// train line says was just taken), the end made when the program has exited. Pure: it takes lines
// and gives events; trainer_host/host.cpp feeds it and records them as a program's own events.
#pragma once

#include <cstdint>
#include <deque>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "config/trainer_output.h"
#include "util/pattern.h"

namespace sweep {

// Lines read without a train or eval rule matching before the run is failed as unreadable.
inline constexpr int64_t k_unmatched_lines_allowed = 1000;

class OutputReader {
 public:
  struct Counts {  // the run's counts, evaluated from its keys (trainer.output.tokens_per_step, …)
    std::optional<int64_t> tokens_per_step, total_steps, params;
  };
  OutputReader(const OutputRules& rules, const Counts& counts);

  // The events `line` makes: none, one, or a start then one. A line a rule matches with a value
  // that is no number, or too many lines no rule reads, set failure() instead.
  std::vector<nlohmann::json> take(const std::string& line);
  const std::string& failure() const { return m_failure; }

  // A program that exited 0: its last checkpoint line, not counted yet (a checkpoint counts once
  // the program prints again — nanoGPT prints its line before the save — or exits normally).
  std::optional<nlohmann::json> exited();
  // The end event of a program that exited 0: done with its result, diverged (a result that is
  // not finite), or failed saying what was missing.
  nlohmann::json end() const;
  bool started() const { return m_started; }
  int64_t step() const { return m_step; }
  std::optional<int64_t> checkpoint_step() const { return m_checkpoint; }

 private:
  struct Rule {
    std::string name;  // train, eval, checkpoint, result
    const LineRule* spec;
    std::optional<Pattern> pattern;
  };
  std::optional<nlohmann::json> event_of(const Rule& rule, const std::map<std::string, std::string>& groups,
                                         const std::string& line);
  int64_t tokens_at(int64_t step, const std::map<std::string, std::string>& groups, const std::string& line);
  std::string quoted_lines() const;  // the first lines, quoted

  const OutputRules m_rules;
  const Counts m_counts;
  std::vector<Rule> m_compiled;
  bool m_started = false;
  int64_t m_step = 0;
  std::optional<int64_t> m_checkpoint;
  std::optional<double> m_result;
  std::optional<nlohmann::json> m_pending_checkpoint;  // a checkpoint line read, its save not known done
  std::optional<std::pair<double, int64_t>> m_last_train;  // the time and tokens of the last train line
  int64_t m_unmatched = 0;
  bool m_read_any = false;                  // a train or eval line matched
  std::vector<std::string> m_first_lines;  // the first lines, quoted when none is read
  std::deque<std::string> m_last_lines;     // the last lines, quoted when no result is read
  std::string m_failure;
};

}  // namespace sweep
