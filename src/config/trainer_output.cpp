#include "config/trainer_output.h"

#include <cctype>
#include <cmath>
#include <cstdlib>

#include "config/trainer.h"
#include "util/pattern.h"
#include "util/text.h"

namespace sweep {

namespace {

// A number with an optional K, M, B (or G), T suffix ("10.65M"), thousands separators dropped.
std::optional<double> suffixed_number(const std::string& text, size_t& at) {
  std::string digits;
  while (at < text.size() && (std::isdigit(static_cast<unsigned char>(text[at])) || text[at] == '.' ||
                              text[at] == ',' || text[at] == '_' ||
                              ((text[at] == 'e' || text[at] == 'E') && !digits.empty()) ||
                              ((text[at] == '-' || text[at] == '+') && !digits.empty() &&
                               (digits.back() == 'e' || digits.back() == 'E')))) {
    if (text[at] != ',' && text[at] != '_') {
      digits += text[at];
    }
    ++at;
  }
  char* end = nullptr;
  const double v = std::strtod(digits.c_str(), &end);
  if (digits.empty() || *end != '\0') {
    return std::nullopt;
  }
  static const std::map<char, double> scale{{'K', 1e3}, {'k', 1e3}, {'M', 1e6}, {'B', 1e9}, {'G', 1e9}, {'T', 1e12}};
  if (at < text.size() && scale.count(text[at])) {
    return v * scale.at(text[at++]);
  }
  return v;
}

// Arithmetic over numbers: sum := product (('+'|'-') product)*, product := factor (('*'|'/') factor)*
class Arithmetic {
 public:
  explicit Arithmetic(const std::string& text) : m_text(text) {}
  std::optional<double> run(std::string& why) {
    const std::optional<double> v = sum();
    skip();
    if (m_divided_by_zero) {
      why = "a division by zero";
    } else if (!v || m_at != m_text.size()) {
      why = "not a number or arithmetic over numbers (+ - * / and parentheses)";
    }
    return why.empty() ? v : std::nullopt;
  }

 private:
  void skip() {
    while (m_at < m_text.size() && std::isspace(static_cast<unsigned char>(m_text[m_at]))) {
      ++m_at;
    }
  }
  bool take(char c) {
    skip();
    if (m_at < m_text.size() && m_text[m_at] == c) {
      ++m_at;
      return true;
    }
    return false;
  }
  std::optional<double> factor() {
    if (take('(')) {
      const std::optional<double> v = sum();
      return v && take(')') ? v : std::nullopt;
    }
    if (take('-')) {
      const std::optional<double> v = factor();
      return v ? std::optional<double>(-*v) : std::nullopt;
    }
    skip();
    return suffixed_number(m_text, m_at);
  }
  std::optional<double> product() {
    std::optional<double> v = factor();
    while (v) {
      if (take('*')) {
        const auto r = factor();
        v = r ? std::optional<double>(*v * *r) : std::nullopt;
      } else if (take('/')) {
        const auto r = factor();
        m_divided_by_zero = m_divided_by_zero || (r && *r == 0);
        v = r && *r != 0 ? std::optional<double>(*v / *r) : std::nullopt;
      } else {
        break;
      }
    }
    return v;
  }
  std::optional<double> sum() {
    std::optional<double> v = product();
    while (v) {
      if (take('+')) {
        const auto r = product();
        v = r ? std::optional<double>(*v + *r) : std::nullopt;
      } else if (take('-')) {
        const auto r = product();
        v = r ? std::optional<double>(*v - *r) : std::nullopt;
      } else {
        break;
      }
    }
    return v;
  }
  const std::string& m_text;
  size_t m_at = 0;
  bool m_divided_by_zero = false;
};

// The column of a pattern's `offset` in the sweep file: on the scalar's own line, after its quote.
YAML::Mark at_offset(const YAML::Node& scalar, size_t offset) {
  YAML::Mark m = scalar.Mark();
  if (scalar.Scalar().find('\n') == std::string::npos) {
    m.column += static_cast<int>(offset) + (scalar.Tag() == "!" ? 1 : 0);
  }
  return m;
}

// One rule: a pattern, or a map {line: pattern, step_offset: n, split: val} (eval, train).
LineRule read_rule(const std::string& name, const YAML::Node& node, Diagnostics& diags) {
  LineRule rule;
  if (!node.IsDefined()) {
    return rule;
  }
  YAML::Node pattern;
  pattern.reset(node);  // a Node assigned later would overwrite `node` itself (yaml-cpp's reference semantics)
  const std::string path = "trainer.output." + name;
  if (node.IsMap()) {
    MapReader r(node, path, diags);
    r.require("line", "the regular expression its lines match, e.g. line: 'iter (?<step>\\d+): loss (?<loss>\\S+)'");
    pattern.reset(r.section("line"));
    if (name == "train" || name == "eval") {
      r.read("step_offset", rule.step_offset, 0, 1000000);
    }
    if (name == "eval") {
      r.read_choice("split", rule.split, {"val", "test"});
    }
    r.finish();
  }
  if (!pattern.IsDefined()) {
    return rule;
  }
  if (!pattern.IsScalar() || pattern.Scalar().empty()) {
    diags.error(pattern.Mark(), "'" + path + "' is a regular expression over one line of the program's output, e.g. " +
                                    (name == "train" ? "'iter (?<step>\\d+): loss (?<loss>\\S+)'"
                                                     : "'val loss (?<loss>\\S+)'"));
    return rule;
  }
  rule.pattern = pattern.Scalar();
  std::string why;
  size_t offset = 0;
  const std::optional<Pattern> compiled = Pattern::compile(rule.pattern, why, offset);
  if (!compiled) {
    diags.error(at_offset(pattern, offset), "'" + path + "': the regular expression does not compile: " + why +
                                                " (at its character " + std::to_string(offset + 1) +
                                                "; PCRE2's syntax, groups named (?<step>...) or (?P<step>...))");
    return rule;
  }
  const std::vector<std::string>& known = rule_groups(name);
  for (const auto& group : compiled->names()) {
    if (std::find(known.begin(), known.end(), group) == known.end()) {
      const size_t at = rule.pattern.find("<" + group + ">");
      const std::string near = closest_match(group, known);
      diags.error(at_offset(pattern, at == std::string::npos ? 0 : at + 1),
                  "'" + path + "': no group (?<" + group + ">...) in this rule" +
                      (near.empty() ? "" : " — did you mean (?<" + near + ">...)?") + " (it knows: " +
                      join(known, ", ") + ")");
    }
  }
  for (const auto& group : required_groups(name)) {
    const auto& names = compiled->names();
    if (std::find(names.begin(), names.end(), group) == names.end()) {
      const std::string example = group == "step" ? "iter (?<step>\\d+)" : "loss (?<loss>\\S+)";
      diags.error(pattern.Mark(),
                  "'" + path + "' must capture the " + group + " as (?<" + group + ">...), e.g. '" + example + "'");
    }
  }
  return rule;
}

}  // namespace

const std::vector<std::string>& rule_groups(const std::string& rule) {
  static const std::map<std::string, std::vector<std::string>> groups{
      {"train", {"step", "loss", "lr", "tokens", "grad_norm"}},
      {"eval", {"step", "loss", "split", "tokens"}},
      {"checkpoint", {"step", "tokens"}},
      {"result", {"loss"}}};
  return groups.at(rule);
}

const std::vector<std::string>& required_groups(const std::string& rule) {
  static const std::map<std::string, std::vector<std::string>> groups{
      {"train", {"step", "loss"}}, {"eval", {"step", "loss"}}, {"checkpoint", {}}, {"result", {"loss"}}};
  return groups.at(rule);
}

nlohmann::json LineRule::to_json() const {
  nlohmann::json j{{"line", pattern}};
  if (step_offset != 0) {
    j["step_offset"] = step_offset;
  }
  if (!split.empty()) {
    j["split"] = split;
  }
  return j;
}

nlohmann::json OutputRules::to_json() const {
  nlohmann::json j = nlohmann::json::object();
  const std::map<std::string, const LineRule*> rules{
      {"train", &train}, {"eval", &eval}, {"checkpoint", &checkpoint}, {"result", &result}};
  for (const auto& [name, rule] : rules) {
    if (!rule->pattern.empty()) {
      j[name] = rule->to_json();
    }
  }
  if (!result_split.empty()) {
    j["result"] = {{"eval", result_split}};
  }
  for (const auto& [name, count] : std::map<std::string, std::string>{
           {"tokens_per_step", tokens_per_step}, {"total_steps", total_steps}, {"params", params}}) {
    if (!count.empty()) {
      j[name] = count;
    }
  }
  return j;
}

OutputRules OutputRules::from_json(const nlohmann::json& j) {
  OutputRules o;
  auto rule = [&](const char* name, LineRule& into) {
    if (j.contains(name) && j[name].contains("line")) {
      into.pattern = j[name]["line"].get<std::string>();
      into.step_offset = j[name].value("step_offset", int64_t{0});
      into.split = j[name].value("split", "");
    }
  };
  rule("train", o.train);
  rule("eval", o.eval);
  rule("checkpoint", o.checkpoint);
  rule("result", o.result);
  if (j.contains("result") && j["result"].contains("eval")) {
    o.result_split = j["result"]["eval"].get<std::string>();
  }
  o.tokens_per_step = j.value("tokens_per_step", "");
  o.total_steps = j.value("total_steps", "");
  o.params = j.value("params", "");
  return o;
}

std::string OutputRules::result_source() const {
  return result_split.empty() ? "the line matching trainer.output.result"
                              : "the last " + result_split + " evaluation (trainer.output.result)";
}

OutputRules read_trainer_output(const YAML::Node& node, const std::vector<std::string>& keys, Diagnostics& diags) {
  OutputRules o;
  if (!node.IsMap()) {
    diags.error(node.Mark(), "'trainer.output' says how to read the program's own lines, e.g. output: {train: "
                             "'iter (?<step>\\d+): loss (?<loss>\\S+)', result: {eval: val}}");
    return o;
  }
  MapReader r(node, "trainer.output", diags);
  r.require("train", "a regular expression over its train lines, e.g. train: 'iter (?<step>\\d+): loss (?<loss>\\S+)'");
  r.require("result", "what the run's result is: a regular expression over its test-loss line "
                      "(result: 'test loss (?<loss>\\S+)'), or the last evaluation of a split (result: {eval: val})");
  const YAML::Node train = r.section("train"), eval = r.section("eval"), checkpoint = r.section("checkpoint"),
                   result = r.section("result");
  std::map<std::string, YAML::Node> counts;
  for (const char* name : {"tokens_per_step", "total_steps", "params"}) {
    counts.emplace(name, r.section(name));  // (assigning a Node would write through it)
  }
  r.finish();
  o.train = read_rule("train", train, diags);
  o.eval = read_rule("eval", eval, diags);
  if (!o.eval.pattern.empty() && o.eval.split.empty()) {
    o.eval.split = "val";
  }
  o.checkpoint = read_rule("checkpoint", checkpoint, diags);
  if (result.IsDefined() && result.IsMap() && result["eval"].IsDefined()) {
    MapReader rr(result, "trainer.output.result", diags);
    rr.read_choice("eval", o.result_split, {"val", "test"});
    rr.finish();
    if (o.eval.pattern.empty()) {
      diags.error(result.Mark(), "'trainer.output.result' takes the last " + o.result_split +
                                     " evaluation, but no 'trainer.output.eval' rule reads evaluations — add one");
    }
  } else if (result.IsDefined()) {
    o.result = read_rule("result", result, diags);
  }
  std::map<std::string, std::string> ones;  // each key's placeholder, to check the arithmetic's shape
  for (const auto& k : keys) {
    ones[k] = "1";
  }
  for (const auto& [name, count] : counts) {
    if (!count.IsDefined()) {
      continue;
    }
    const std::string text = count.IsScalar() ? count.Scalar() : "";
    std::vector<std::string> unknown;
    fill_placeholders(text, ones, &unknown);
    std::string why;
    if (!unknown.empty()) {
      diags.error(count.Mark(), "'trainer.output." + name + "': unknown placeholder " + unknown.front() +
                                    " — a count may name the trainer's declared keys, e.g. {" +
                                    (keys.empty() ? std::string("batch_size") : keys.front()) + "}");
    } else if (!evaluate_count(text, ones, why)) {
      diags.error(count.Mark(), "'trainer.output." + name + "': " + why + ", e.g. \"{batch_size} * {block_size}\"");
    } else {
      (name == "tokens_per_step" ? o.tokens_per_step : name == "total_steps" ? o.total_steps : o.params) = text;
    }
  }
  return o;
}

std::optional<double> evaluate_count(const std::string& text, const std::map<std::string, std::string>& values,
                                     std::string& why) {
  std::vector<std::string> unknown;
  const std::string filled = fill_placeholders(text, values, &unknown);
  if (!unknown.empty()) {
    why = "no value for " + unknown.front() + " in '" + text + "'";
    return std::nullopt;
  }
  const std::optional<double> v = Arithmetic(filled).run(why);
  if (!v) {
    why = "'" + text + "'" + (filled != text ? " (here '" + filled + "')" : "") + ": " + why;
  }
  return v;
}

}  // namespace sweep
