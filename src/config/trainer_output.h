// trainer.output: how sweep reads a program that prints no events — regular expressions over its
// own lines (stdout and stderr), whose named groups make a train point, an evaluation, a
// checkpoint and the run's result. Declared once in the sweep file and checked there (a pattern
// that does not compile, a group the rule does not know: file:line:col); applied to a run's lines
// by trainer_host/output_reader.h. Nothing here reads a program's output.
#pragma once

#include <yaml-cpp/yaml.h>

#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "config/yaml_reader.h"

namespace sweep {

// One rule: a pattern searched in each line, and what it cannot say itself.
struct LineRule {
  std::string pattern;  // PCRE2, named groups (?<step>...) or (?P<step>...); "": no such rule
  int64_t step_offset = 0;  // added to the line's step: nanoGPT's "iter 0" follows 1 step taken
  std::string split;        // eval: the split when the pattern has no (?<split>) group ("val")
  nlohmann::json to_json() const;
};

struct OutputRules {
  LineRule train;       // step and loss; lr, tokens, grad_norm when it has them
  LineRule eval;        // step and loss; split, tokens
  LineRule checkpoint;  // a checkpoint was written: its step (or the last step read), tokens
  LineRule result;      // the result: loss (the test loss sweep compares)
  // result: {eval: SPLIT} instead of a line — the last evaluation of that split is the result
  std::string result_split;
  // Counts the program may not print: a number (400K), or arithmetic over the run's keys
  // ("{batch_size} * {block_size}", "{max_iters} + 1"); "": not known
  std::string tokens_per_step, total_steps, params;
  nlohmann::json to_json() const;
  static OutputRules from_json(const nlohmann::json& j);
  // "the last val evaluation" or "the line matching trainer.output.result": what the report quotes
  std::string result_source() const;
};

// The named groups each rule knows (the first ones are required).
const std::vector<std::string>& rule_groups(const std::string& rule);
const std::vector<std::string>& required_groups(const std::string& rule);

// Reads trainer.output (`keys`: the trainer's declared keys, which the counts may name).
OutputRules read_trainer_output(const YAML::Node& node, const std::vector<std::string>& keys, Diagnostics& diags);

// A count's value: `text` with its {placeholders} filled from `values` and its arithmetic done
// (+ - * / and parentheses over numbers, 400K and 1.5M too), or nullopt with `why`.
std::optional<double> evaluate_count(const std::string& text, const std::map<std::string, std::string>& values,
                                     std::string& why);

}  // namespace sweep
