#include "report/render/pool_render.h"

#include <cmath>

#include "report/render/tables.h"
#include "util/text.h"

namespace sweep {

namespace {

std::string signed_text(double v) { return format_number("%+.4f", v); }
std::string interval(double low, double high) {
  return std::isfinite(low) ? "[" + signed_text(low) + ", " + signed_text(high) + "]" : "-";
}

std::vector<std::string> headers() {
  return {"intervention", "settings", "pooled", "95% CI", "p", "tau", "95% CI of tau", "new setting: 95% PI",
          "verdict"};
}

Rows rows(const Pool& pool, bool markdown) {
  Rows out;
  for (const auto& p : pool.pooled) {
    const MetaResult& m = p.meta;
    out.push_back({markdown ? md_code(p.intervention) : p.intervention, std::to_string(m.k), signed_text(m.mean),
                   interval(m.ci_low, m.ci_high), p_text(m.p), format_number("%.4f", std::sqrt(m.tau2)),
                   "[" + format_number("%.4f", std::sqrt(m.tau2_low)) + ", " +
                       format_number("%.4f", std::sqrt(m.tau2_high)) + "]",
                   interval(m.pi_low, m.pi_high), to_string(p.verdict)});
  }
  return out;
}

std::vector<std::string> left_out_headers() {
  return {"intervention", "setting left out", "measured", "95% PI from the others", "covered"};
}

Rows left_out_rows(const Pool& pool, bool markdown, int64_t& covered, int64_t& total) {
  Rows out;
  for (const auto& p : pool.pooled) {
    for (const auto& l : p.left_out) {
      out.push_back({markdown ? md_code(p.intervention) : p.intervention, markdown ? md_code(l.setting) : l.setting,
                     signed_text(l.effect), interval(l.low, l.high), l.covered ? "yes" : "no"});
      covered += l.covered;
      ++total;
    }
  }
  return out;
}

std::string settings_line(const PooledIntervention& p) {
  std::string out;
  for (const auto& s : p.settings) {
    out += (out.empty() ? "" : "; ") + s.setting + " " + signed_text(s.effect) + " ± " + format_number("%.4f", s.se) +
           " (" + plural(s.seeds, "seed") + ")";
  }
  return out;
}

std::string method(const Pool& pool) {
  return "Each setting's paired improvement on " + pool.metric.name() +
         " (baseline − intervention at the baseline's grid point; a ladder's rungs are settings each) with its "
         "standard error over seeds (± above), pooled by random effects weighted by the seed variance pooled over "
         "the settings (a standard error from few seeds is too noisy to weight by): τ² by Paule–Mandel with its "
         "Q-profile interval, the "
         "pooled effect with Hartung–Knapp's interval (t, k − 1 df; its factor floored at 1), a new setting's effect "
         "with the prediction "
         "interval from τ²'s confidence distribution (Nagashima et al. 2019; none with 2 settings). holds across "
         "settings: that interval excludes 0; varies "
         "with the setting: the settings differ beyond their seed noise (Welch's ANOVA on each setting's own "
         "standard error) and it holds 0; else undecided. "
         "Left out: each setting of an intervention with 4 or more against the interval from the others, its own "
         "standard error added.";
}

}  // namespace

std::string pool_text(const Pool& pool) {
  std::string out = "pooled on " + pool.metric.name() + " over " +
                    plural(static_cast<int64_t>(pool.settings.size()), "setting") +
                    ": " + join(pool.settings, ", ") + "\n\n";
  if (pool.pooled.empty()) {
    out += "no intervention is measured in two or more settings\n";
  } else {
    out += text_table(headers(), rows(pool, false)) + "\n";
    for (const auto& p : pool.pooled) {
      out += "- " + p.intervention + ": " + to_string(p.verdict) + " — " + p.why + "\n  " + settings_line(p) + "\n";
    }
  }
  int64_t covered = 0, total = 0;
  const Rows left = left_out_rows(pool, false, covered, total);
  if (total > 0) {
    out += "\nleave one setting out: " + std::to_string(covered) + " of " + std::to_string(total) +
           " measured effects inside the interval from the others\n" + text_table(left_out_headers(), left);
  }
  for (const auto& n : pool.notes) {
    out += "note: " + n + "\n";
  }
  return out + "\n" + method(pool) + "\n";
}

std::string pool_markdown(const Pool& pool) {
  std::string out = "# Pooled across settings\n\nOn " + pool.metric.name() + " over " +
                    plural(static_cast<int64_t>(pool.settings.size()), "setting") + ": ";
  for (size_t i = 0; i < pool.settings.size(); ++i) {
    out += (i ? ", " : "") + md_code(pool.settings[i]);
  }
  out += ".\n\n";
  if (!pool.pooled.empty()) {
    out += markdown_table(headers(), rows(pool, true)) + "\n";
    for (const auto& p : pool.pooled) {
      out += "- " + md_code(p.intervention) + ": **" + to_string(p.verdict) + "** — " + p.why + ". Settings: " +
             settings_line(p) + "\n";
    }
  }
  int64_t covered = 0, total = 0;
  const Rows left = left_out_rows(pool, true, covered, total);
  if (total > 0) {
    out += "\n## Leave one setting out\n\n" + std::to_string(covered) + " of " + std::to_string(total) +
           " measured effects inside the interval from the others.\n\n" + markdown_table(left_out_headers(), left);
  }
  for (const auto& n : pool.notes) {
    out += "\n- note: " + n;
  }
  return out + "\n\n" + method(pool) + "\n";
}

nlohmann::ordered_json pool_json(const Pool& pool) {
  nlohmann::ordered_json out;
  out["metric"] = pool.metric.name();
  out["settings"] = pool.settings;
  nlohmann::ordered_json pooled = nlohmann::ordered_json::array();
  for (const auto& p : pool.pooled) {
    const MetaResult& m = p.meta;
    nlohmann::ordered_json settings = nlohmann::ordered_json::array();
    for (const auto& s : p.settings) {
      settings.push_back(
          {{"setting", s.setting}, {"variant", s.variant}, {"effect", s.effect}, {"se", s.se}, {"seeds", s.seeds}});
    }
    nlohmann::ordered_json left = nlohmann::ordered_json::array();
    for (const auto& l : p.left_out) {
      left.push_back(
          {{"setting", l.setting}, {"effect", l.effect}, {"pi_low", l.low}, {"pi_high", l.high}, {"covered", l.covered}});
    }
    pooled.push_back({{"intervention", p.intervention}, {"settings", settings}, {"k", m.k},
                      {"pooled", number_or_null(m.mean)}, {"se", number_or_null(m.se)},
                      {"ci_low", number_or_null(m.ci_low)}, {"ci_high", number_or_null(m.ci_high)},
                      {"p", number_or_null(m.p)}, {"tau2", number_or_null(m.tau2)},
                      {"tau2_low", number_or_null(m.tau2_low)}, {"tau2_high", number_or_null(m.tau2_high)},
                      {"q", number_or_null(m.q)}, {"q_p", number_or_null(m.q_p)},
                      {"spread_p", number_or_null(m.spread_p)},
                      {"pi_low", number_or_null(m.pi_low)}, {"pi_high", number_or_null(m.pi_high)},
                      {"verdict", to_string(p.verdict)}, {"why", p.why}, {"left_out", left}});
  }
  out["pooled"] = pooled;
  out["notes"] = pool.notes;
  return out;
}

}  // namespace sweep
