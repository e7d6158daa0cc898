#include "trainer_host/output_reader.h"

#include <cmath>
#include <cstdlib>

#include "protocol/event_check.h"
#include "protocol/events.h"
#include "util/text.h"

namespace sweep {

namespace {

namespace field = events::field;

std::string quoted(const std::string& line) {
  std::string text = "'";
  text.append(line, 0, std::min<size_t>(line.size(), 200));
  text += line.size() > 200 ? "…'" : "'";
  return text;
}

// A number as a line writes it: 4.2874, 1e-3, 16,384, 10.65M, nan, inf; nullopt otherwise.
std::optional<double> number_of(const std::string& text) {
  std::string t = trim(text), lower;
  for (const char c : t) {
    lower += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  }
  if (lower == "nan" || lower == "-nan") {
    return std::nan("");
  }
  if (lower == "inf" || lower == "+inf" || lower == "infinity") {
    return HUGE_VAL;
  }
  if (lower == "-inf" || lower == "-infinity") {
    return -HUGE_VAL;
  }
  std::string why;
  return t.empty() ? std::nullopt : evaluate_count(t, {}, why);
}

}  // namespace

OutputReader::OutputReader(const OutputRules& rules, const Counts& counts) : m_rules(rules), m_counts(counts) {
  const std::vector<std::pair<std::string, const LineRule*>> all{
      {"train", &m_rules.train}, {"eval", &m_rules.eval}, {"checkpoint", &m_rules.checkpoint},
      {"result", &m_rules.result}};
  for (const auto& [name, spec] : all) {
    if (spec->pattern.empty()) {
      continue;
    }
    std::string why;
    size_t offset = 0;
    m_compiled.push_back({name, spec, Pattern::compile(spec->pattern, why, offset)});
    if (!m_compiled.back().pattern) {  // checked when the sweep file was read: an edited config.yaml
      m_failure = "trainer.output." + name + ": the regular expression does not compile: " + why;
    }
  }
}

int64_t OutputReader::tokens_at(int64_t step, const std::map<std::string, std::string>& groups,
                                const std::string& line) {
  if (const auto t = groups.find("tokens"); t != groups.end()) {
    const std::optional<double> v = number_of(t->second);
    if (v && *v >= 0 && std::isfinite(*v)) {
      return static_cast<int64_t>(*v);
    }
    m_failure = "a line matched with tokens that are no count (" + quoted(t->second) + "): " + quoted(line);
    return 0;
  }
  return m_counts.tokens_per_step ? step * *m_counts.tokens_per_step : 0;
}

std::optional<nlohmann::json> OutputReader::event_of(const Rule& rule, const std::map<std::string, std::string>& groups,
                                                     const std::string& line) {
  const std::string where = "trainer.output." + rule.name;
  auto number = [&](const std::string& group) -> std::optional<double> {
    const auto g = groups.find(group);
    if (g == groups.end()) {
      return std::nullopt;
    }
    const std::optional<double> v = number_of(g->second);
    if (!v && m_failure.empty()) {
      m_failure =
          where + " matched with a " + group + " that is no number (" + quoted(g->second) + "): " + quoted(line);
    }
    return v;
  };
  std::optional<int64_t> step;
  if (groups.count("step")) {
    const std::optional<double> s = number(field::step);
    if (!s) {
      return std::nullopt;
    }
    if (*s < 0 || *s != std::floor(*s) || *s + static_cast<double>(rule.spec->step_offset) < 0) {
      m_failure = where + " matched with a step that is no whole number ≥ 0 (" + quoted(groups.at("step")) +
                  "): " + quoted(line);
      return std::nullopt;
    }
    step = static_cast<int64_t>(*s) + rule.spec->step_offset;
    if (rule.name == "train" && *step < 1) {
      m_failure = where + " read step " + std::to_string(*step) + " from " + quoted(line) +
                  ": a train line's step counts the steps taken, the one just taken included — a program that "
                  "numbers its steps from 0 needs step_offset: 1";
      return std::nullopt;
    }
  }
  if (rule.name == "result") {
    const std::optional<double> loss = number(field::loss);
    if (loss) {
      m_result = *loss;
    }
    return std::nullopt;
  }
  nlohmann::json ev{{field::event, rule.name}, {field::step, step.value_or(m_step)}};
  if (rule.name == "train" || rule.name == "eval") {
    const std::optional<double> loss = number(field::loss);
    if (!loss) {
      return std::nullopt;
    }
    ev[field::loss] = events::json_number(*loss);
  }
  if (rule.name == "train") {
    for (const char* optional : {field::lr, field::grad_norm}) {
      if (const auto v = number(optional)) {
        ev[optional] = events::json_number(*v);
      }
    }
  }
  if (rule.name == "eval") {
    const auto split = groups.find(field::split);
    const std::string s = split == groups.end() ? rule.spec->split : trim(split->second);
    if (s != events::val_split && s != events::test_split) {
      m_failure = where + " matched with a split that is neither val nor test (" + quoted(s) + "): " + quoted(line);
      return std::nullopt;
    }
    ev[field::split] = s;
    if (s == m_rules.result_split) {
      m_result = number(field::loss);
    }
  }
  ev[field::tokens] = tokens_at(ev[field::step].get<int64_t>(), groups, line);
  return m_failure.empty() ? std::optional<nlohmann::json>(ev) : std::nullopt;
}

std::vector<nlohmann::json> OutputReader::take(const std::string& line) {
  std::vector<nlohmann::json> out;
  if (!m_failure.empty()) {
    return out;
  }
  m_last_lines.push_back(line);
  if (m_last_lines.size() > 3) {
    m_last_lines.pop_front();
  }
  if (m_pending_checkpoint) {  // the program prints again: the save its checkpoint line announced is done
    m_checkpoint = (*m_pending_checkpoint)[field::step].get<int64_t>();
    out.push_back(std::move(*m_pending_checkpoint));
    m_pending_checkpoint.reset();
  }
  bool read = false;
  for (const Rule& rule : m_compiled) {
    const auto groups = rule.pattern->match(line);
    if (!groups) {
      continue;
    }
    std::optional<nlohmann::json> ev = event_of(rule, *groups, line);
    if (!m_failure.empty()) {
      return {};
    }
    if (!ev) {
      break;  // a result line
    }
    const int64_t step = (*ev)[field::step].get<int64_t>();
    read = rule.name != "checkpoint";
    if (!m_started) {  // the run starts where its first line says (a resumed one: at its checkpoint's step)
      m_started = true;
      const int64_t at = rule.name == "train" ? std::max<int64_t>(step - 1, 0) : step;
      nlohmann::json start{{field::event, events::start}, {field::step, at}, {field::resumed, at > 0},
                           {field::tokens, tokens_at(at, {}, line)}};
      if (m_counts.total_steps) {
        start[field::total_steps] = *m_counts.total_steps;
      }
      if (m_counts.tokens_per_step) {
        start[field::tokens_per_step] = *m_counts.tokens_per_step;
      }
      if (m_counts.params) {
        start[field::params] = *m_counts.params;
      }
      out.push_back(std::move(start));
    }
    m_step = std::max(m_step, step);
    if (rule.name == "checkpoint") {  // counted when the program prints again (a line may come before the save)
      m_pending_checkpoint = std::move(*ev);
      break;
    }
    if (rule.name == "train") {  // its speed: the tokens since the train line before, when nothing came between
      const double now = events::unix_time();
      const int64_t tokens = (*ev)[field::tokens].get<int64_t>();
      if (m_last_train && now > m_last_train->first && tokens > m_last_train->second) {
        (*ev)[field::tokens_per_s] = static_cast<double>(tokens - m_last_train->second) / (now - m_last_train->first);
      }
      m_last_train = {now, tokens};
    } else {
      m_last_train.reset();  // an evaluation or a checkpoint's time is no training time
    }
    out.push_back(std::move(*ev));
    break;  // one event a line: the first rule that matches it
  }
  if (read) {
    m_read_any = true;
  } else if (!m_read_any) {
    if (m_first_lines.size() < 5) {
      m_first_lines.push_back(line);
    }
    if (++m_unmatched >= k_unmatched_lines_allowed) {
      m_failure = "no line matched the train rule (trainer.output.train) in the program's first " +
                  std::to_string(k_unmatched_lines_allowed) + " lines; its first lines: " + quoted_lines();
    }
  }
  return out;
}

std::string OutputReader::quoted_lines() const {
  std::string text;
  for (const auto& l : m_first_lines) {
    text += (text.empty() ? "" : ", ") + quoted(l);
  }
  return text.empty() ? "none" : text;
}

std::optional<nlohmann::json> OutputReader::exited() {
  if (!m_pending_checkpoint) {
    return std::nullopt;
  }
  m_checkpoint = (*m_pending_checkpoint)[field::step].get<int64_t>();
  std::optional<nlohmann::json> ev = std::move(m_pending_checkpoint);
  m_pending_checkpoint.reset();
  return ev;
}

nlohmann::json OutputReader::end() const {
  nlohmann::json ev{{field::event, events::end}, {field::step, m_step}};
  if (!m_read_any) {
    ev[field::status] = "failed";
    ev[field::reason] = "no line matched the train rule (trainer.output.train): the program's first lines: " +
                        quoted_lines();
  } else if (!m_result) {
    std::string last;
    for (const auto& l : m_last_lines) {
      last += (last.empty() ? "" : ", ") + quoted(l);
    }
    ev[field::status] = "failed";
    ev[field::reason] = "the program exited without a result: " + m_rules.result_source() +
                        " was never read; its last lines: " + last;
  } else if (!std::isfinite(*m_result)) {  // a run that blew up: diverged, never judged on its survivors
    ev[field::status] = "diverged";
    ev[field::reason] = "its result is not finite (" + m_rules.result_source() + ")";
    ev[field::test_loss] = events::json_number(*m_result);
  } else {
    ev[field::status] = "done";
    ev[field::test_loss] = *m_result;
  }
  return ev;
}

}  // namespace sweep
