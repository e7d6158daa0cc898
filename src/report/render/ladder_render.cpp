#include "report/render/ladder_render.h"

#include <cmath>
#include <sstream>

#include "report/render/backtest_render.h"
#include "report/render/tables.h"
#include "util/text.h"

namespace sweep {

namespace {

std::string signed4(double v) { return std::isfinite(v) ? format_number("%+.4f", v) : "-"; }
std::string interval(double lo, double hi) {
  return std::isfinite(lo) && std::isfinite(hi) ? "[" + signed4(lo) + ", " + signed4(hi) + "]" : "-";
}
std::string flops(double v) { return std::isfinite(v) ? format_number("%.3g", v) : "-"; }

const VariantStats* stats_named(const Analysis& rung, const std::string& name) {
  for (const auto& v : rung.variants) {
    if (v.name == name) {
      return &v;
    }
  }
  return nullptr;
}

std::string target_label(const LadderSummary& l) {
  return l.ladder.target_unit == TargetUnit::params ? format_count(l.ladder.target) + " params"
                                                    : format_number("%.3g", l.ladder.target) + " FLOPs";
}

std::vector<std::string> ladder_headers(const Analysis& a) {
  std::vector<std::string> h{"intervention"};
  for (const auto& r : a.ladder->rungs) {
    h.push_back(r.name);
  }
  h.insert(h.end(), {"Δ per 10× FLOPs", "95% CI", "p (Holm)"});
  if (a.design.min_effect > 0) {
    h.push_back("p holds (Holm)");
  }
  h.push_back("trend");
  if (a.ladder->ladder.target_unit) {
    h.insert(h.end(), {"at " + target_label(*a.ladder), "95% PI"});
  }
  return h;
}

Rows ladder_rows(const Analysis& a) {
  Rows rows;
  for (const auto& t : a.ladder->trends) {
    std::vector<std::string> row{t.intervention};
    for (size_t k = 0; k < a.rungs.size(); ++k) {
      const VariantStats* v = stats_named(a.rungs[k], t.rung_variants[k]);
      row.push_back(v ? signed4(v->improvement) + " " + verdict_text(*v, a.design.better_by) : "-");
    }
    row.insert(row.end(), {signed4(t.slope), interval(t.slope_low, t.slope_high), p_text(t.p_holm)});
    if (a.design.min_effect > 0) {
      row.push_back(p_text(t.p_holds_holm));
    }
    row.push_back(to_string(t.verdict));
    if (a.ladder->ladder.target_unit) {
      row.insert(row.end(), {signed4(t.at_target), interval(t.target_low, t.target_high)});
    }
    rows.push_back(row);
  }
  return rows;
}

// An interval of logarithms as factors: "[0.9×, 1.2×]"; "-" when it has no ends.
std::string factor_interval(double ln_low, double ln_high) {
  return std::isfinite(ln_low) && std::isfinite(ln_high)
             ? "[" + factor_text(std::exp(ln_low)) + ", " + factor_text(std::exp(ln_high)) + "]"
             : "-";
}

// The speed-ups' table: FLOPs to the baseline's final validation loss, per rung and their trend.
std::vector<std::string> speedup_headers(const Analysis& a) {
  std::vector<std::string> h{"intervention"};
  for (const auto& r : a.ladder->rungs) {
    h.push_back(r.name);
  }
  h.insert(h.end(), {"× per 10× FLOPs", "95% CI", "p (Holm)", "trend"});
  if (a.ladder->ladder.target_unit) {
    h.insert(h.end(), {"at " + target_label(*a.ladder), "95% PI"});
  }
  return h;
}

Rows speedup_rows(const Analysis& a) {
  Rows rows;
  for (const auto& s : a.ladder->speedups) {
    std::vector<std::string> row{s.intervention};
    for (size_t k = 0; k < s.at_rung.size(); ++k) {
      if (s.seeds[k] == 0) {
        row.push_back("-");
      } else if (s.reached[k] == 0) {
        row.push_back("never (0/" + std::to_string(s.seeds[k]) + ")");
      } else {
        row.push_back(factor_text(s.at_rung[k]) + (s.reached[k] < s.seeds[k] ? " (" + std::to_string(s.reached[k]) + "/" +
                                                                               std::to_string(s.seeds[k]) + ")"
                                                                         : ""));
      }
    }
    const Trend& t = s.line;
    row.insert(row.end(), {factor_text(std::exp(t.slope)), factor_interval(t.slope_low, t.slope_high),
                           p_text(t.p_holm), to_string(t.verdict)});
    if (a.ladder->ladder.target_unit) {
      row.insert(row.end(), {factor_text(std::exp(t.at_target)), factor_interval(t.target_low, t.target_high)});
    }
    rows.push_back(row);
  }
  return rows;
}

std::vector<std::string> speedup_lines(const Analysis& a) {
  std::vector<std::string> out;
  for (const auto& s : a.ladder->speedups) {
    out.push_back(s.intervention + ": " + to_string(s.line.verdict) + " — " + s.line.why);
  }
  return out;
}

// Whether any rung compared any seed's curves (a ladder without validation curves has no speed-ups).
bool has_speedups(const Analysis& a) {
  for (const auto& s : a.ladder->speedups) {
    for (int64_t n : s.seeds) {
      if (n > 0) {
        return true;
      }
    }
  }
  return false;
}

const char* const k_speedup_title =
    "Speed-up: the training FLOPs the baseline needs to reach its final validation loss ÷ those the intervention "
    "needs (same seed; > 1×: it gets there sooner), the geometric mean over the seeds that reach it (n/m: n of m "
    "did), and the line through their logarithms against log10 training FLOPs:";

std::vector<std::string> rung_lines(const Analysis& a) {
  std::vector<std::string> out;
  const LadderSummary& l = *a.ladder;
  for (const auto& r : l.rungs) {
    out.push_back(r.name + ": " + format_count(r.params) + " parameters, " + format_count(r.tokens) +
                  " tokens, " + flops(r.flops) + " training FLOPs");
  }
  if (l.ladder.tokens_per_param > 0) {
    out.push_back("tokens: " + format_number("%g", l.ladder.tokens_per_param) +
                  " per parameter of the rung's baseline, for every variant at the rung");
  }
  return out;
}

std::vector<std::string> trend_lines(const Analysis& a) {
  std::vector<std::string> out;
  for (const auto& t : a.ladder->trends) {
    out.push_back(t.intervention + ": " + to_string(t.verdict) + " — " + t.why);
  }
  return out;
}

std::string target_sentence(const Analysis& a) {
  const LadderSummary& l = *a.ladder;
  if (!l.ladder.target_unit) {
    return "";
  }
  std::string s = "target " + target_label(l) + ": " + format_number("%.3g", l.target_factor) +
                  "× the largest rung" + (l.target_rule.empty() ? "" : "; " + l.target_rule);
  if (l.far) {
    s += ". FAR BEYOND THE LADDER (more than its " + format_number("%g", l.ladder.beyond) +
         "×): the line is assumed to hold out there, which nothing measured here can check — read the interval as "
         "what the ladder implies, not as a forecast";
  } else if (l.target_factor > 1) {
    s += " — an extrapolation within " + format_number("%g", l.ladder.beyond) + "× of the ladder";
  }
  return s + ".";
}

// The backtest in words: whether the trend beats the single-scale rule, what it says of the target.
std::vector<std::string> backtest_lines(const Analysis& a) {
  const LadderSummary& l = *a.ladder;
  std::vector<std::string> out;
  if (const std::string s = backtest_sentence(l.backtest.rows); !s.empty()) {
    out.push_back("backtest: " + s);
  } else {
    out.push_back("backtest: none — " + l.backtest.why);
  }
  if (const std::string t = backtest_target_sentence(l); !t.empty()) {
    out.push_back(t);
  }
  return out;
}

std::string ladder_method(const Analysis& a) {
  const double delta = a.design.min_effect;
  return "Each rung is judged as a study of its own (the tables below: its variants against the baseline at the "
         "rung, paired by seed, Holm across its interventions); a rung cell is its improvement and verdict. The "
         "trend: an ordinary least squares line through every seed's paired improvement (baseline − variant) "
         "against log10 of the rung's training FLOPs (6 × matmul parameters per token + attention, × tokens); "
         "Δ per 10× FLOPs is its slope with a t interval (pairs − 2 degrees of freedom), p tests the intervention × "
         "scale interaction (slope ≠ 0), Holm across the interventions. Verdicts: flips sign when the slope differs "
         "from 0 and the line's 95% intervals at the smallest and the largest rung exclude 0 on opposite sides (the "
         "crossover: where the line is 0, with Fieller's interval); grows or shrinks when the slope differs from 0 "
         "and the effect's size grows or shrinks toward the largest rung; " +
         (delta > 0 ? "holds when two one-sided tests put the change across the ladder (slope × its span in "
                      "decades) within ±δ = ±" + format_number("%g", delta) + " (Holm); "
                    : std::string("holds needs a declared min_effect (none here); ")) +
         "else undecided. The value at the target is the line extrapolated, its 95% interval the line's uncertainty "
         "there (each rung's own seed noise) plus a bend: the interventions' curvatures bounded together (needs 3 "
         "rungs). The backtest hides each rung with 2 or more rungs below it and predicts its improvements from them "
         "— by the line (its interval, from 3 rungs below, for the hidden rung's mean of its seeds) and by the "
         "single-scale rule (the largest rung below's): sign agreement, decision "
         "accuracy over pairs of arms (the baseline one of them) and the interval's coverage, at the compute ratio "
         "of the largest rung below to the hidden one.";
}

std::string rung_title(const RungInfo& r) {
  return "rung " + r.name + " (" + format_count(r.params) + " parameters, " + format_count(r.tokens) + " tokens)";
}

}  // namespace

std::string ladder_text(const Analysis& a) {
  std::ostringstream out;
  out << "sweep " << a.sweep << ": " << a.metric.name() << " against the baseline at each rung of a scale ladder, "
      << "improvement = mean(baseline) − mean(variant), positive = better\n\nrungs:\n";
  for (const auto& l : rung_lines(a)) {
    out << "  " << l << '\n';
  }
  out << '\n' << text_table(ladder_headers(a), ladder_rows(a));
  for (const auto& l : trend_lines(a)) {
    out << "  " << l << '\n';
  }
  if (const std::string t = target_sentence(a); !t.empty()) {
    out << '\n' << t << '\n';
  }
  if (has_speedups(a)) {
    out << '\n' << k_speedup_title << "\n\n" << text_table(speedup_headers(a), speedup_rows(a));
    for (const auto& l : speedup_lines(a)) {
      out << "  " << l << '\n';
    }
  }
  if (!a.ladder->backtest.rows.empty()) {
    out << '\n' << text_table(backtest_headers(), backtest_table(a.ladder->backtest.rows));
  }
  for (const auto& l : backtest_lines(a)) {
    out << l << '\n';
  }
  out << '\n' << ladder_method(a) << '\n';
  for (size_t k = 0; k < a.rungs.size(); ++k) {
    const Analysis& r = a.rungs[k];
    const Rows rows = ranked_rows(r);
    out << '\n' << rung_title(a.ladder->rungs[k]) << ":\n" << text_table(headers(r), rows, "  ");
    for (const auto& l : noise_lines(r)) {
      out << "  " << l << '\n';
    }
  }
  if (!a.rungs.empty()) {
    out << '\n' << method_sentence(a.rungs.front()) << '\n';
  }
  out << '\n' << a.code << '\n';
  if (!a.notes.empty()) {
    out << "notes:\n";
    for (const auto& n : a.notes) {
      out << "  " << n << '\n';
    }
  }
  return out.str();
}

std::string ladder_markdown(const Analysis& a) {
  std::ostringstream out;
  out << "Every intervention at every rung of a scale ladder, against the baseline at its rung; improvement = "
         "mean(baseline) − mean(variant), positive = better.\n\n";
  for (const auto& l : rung_lines(a)) {
    out << "- " << md_code(l) << '\n';
  }
  Rows rows = ladder_rows(a);
  for (auto& row : rows) {
    row[0] = md_code(row[0]);
  }
  out << '\n' << markdown_table(ladder_headers(a), rows) << '\n';
  for (const auto& l : trend_lines(a)) {
    out << "- " << md_code(l) << '\n';
  }
  if (const std::string t = target_sentence(a); !t.empty()) {
    out << '\n' << t << '\n';
  }
  if (has_speedups(a)) {
    Rows speedups = speedup_rows(a);
    for (auto& row : speedups) {
      row[0] = md_code(row[0]);
    }
    out << '\n' << k_speedup_title << "\n\n" << markdown_table(speedup_headers(a), speedups) << '\n';
    for (const auto& l : speedup_lines(a)) {
      out << "- " << md_code(l) << '\n';
    }
  }
  if (!a.ladder->backtest.rows.empty()) {
    Rows backtest = backtest_table(a.ladder->backtest.rows);
    for (auto& row : backtest) {
      row[0] = md_code(row[0]);
      row[1] = md_code(row[1]);
    }
    out << '\n' << markdown_table(backtest_headers(), backtest);
  }
  out << '\n';
  for (const auto& l : backtest_lines(a)) {
    out << "- " << l << '\n';
  }
  out << '\n' << ladder_method(a) << '\n';
  for (size_t k = 0; k < a.rungs.size(); ++k) {
    const Analysis& r = a.rungs[k];
    Rows rung_rows = ranked_rows(r);
    for (auto& row : rung_rows) {
      row[1] = md_code(row[1]);
    }
    out << "\n## " << md_code(rung_title(a.ladder->rungs[k])) << "\n\n" << markdown_table(headers(r), rung_rows) << '\n';
    for (const auto& l : noise_lines(r)) {
      out << "- " << l << '\n';
    }
  }
  if (!a.rungs.empty()) {
    out << '\n' << method_sentence(a.rungs.front()) << '\n';
  }
  return out.str();
}

std::string ladder_html(const Analysis& a) {
  std::ostringstream out;
  out << "<ul>\n";
  for (const auto& l : rung_lines(a)) {
    out << "<li>" << html_escape(l) << "</li>\n";
  }
  out << "</ul>\n" << html_table(ladder_headers(a), ladder_rows(a)) << "<ul>\n";
  for (const auto& l : trend_lines(a)) {
    out << "<li>" << html_escape(l) << "</li>\n";
  }
  out << "</ul>\n";
  if (const std::string t = target_sentence(a); !t.empty()) {
    out << "<p>" << html_escape(t) << "</p>\n";
  }
  if (has_speedups(a)) {
    out << "<p>" << html_escape(k_speedup_title) << "</p>\n" << html_table(speedup_headers(a), speedup_rows(a)) << "<ul>\n";
    for (const auto& l : speedup_lines(a)) {
      out << "<li>" << html_escape(l) << "</li>\n";
    }
    out << "</ul>\n";
  }
  if (!a.ladder->backtest.rows.empty()) {
    out << html_table(backtest_headers(), backtest_table(a.ladder->backtest.rows));
  }
  out << "<ul>\n";
  for (const auto& l : backtest_lines(a)) {
    out << "<li>" << html_escape(l) << "</li>\n";
  }
  out << "</ul>\n<p>" << html_escape(ladder_method(a)) << "</p>\n";
  for (size_t k = 0; k < a.rungs.size(); ++k) {
    const Analysis& r = a.rungs[k];
    const Rows rows = ranked_rows(r);
    out << "<h2>" << html_escape(rung_title(a.ladder->rungs[k])) << "</h2>\n" << html_table(headers(r), rows) << "<ul>\n";
    for (const auto& l : noise_lines(r)) {
      out << "<li>" << html_escape(l) << "</li>\n";
    }
    out << "</ul>\n";
  }
  if (!a.rungs.empty()) {
    out << "<p>" << html_escape(method_sentence(a.rungs.front())) << "</p>\n";
  }
  return out.str();
}

}  // namespace sweep
