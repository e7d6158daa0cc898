#include "report/render/tuned_render.h"

#include <algorithm>
#include <cmath>
#include <sstream>

#include "report/response.h"
#include "util/text.h"

namespace sweep {

namespace {

std::string ci_text(double low, double high, const char* format) {
  return std::isfinite(low) ? "[" + format_number(format, low) + ", " + format_number(format, high) + "]" : "-";
}

const VariantStats* stats_of(const std::vector<VariantStats>& stats, const std::string& name) {
  for (const auto& s : stats) {
    if (s.name == name) {
      return &s;
    }
  }
  return nullptr;
}

std::string best_text(const TunedArm& arm) {
  const OptimumFit& f = arm.fit;
  if (!f.fitted) {
    return "-";
  }
  std::string s = format_number("%.3g", f.best);
  if (!f.inside) {
    return s + " (edge)";
  }
  return std::isfinite(f.ci_low) ? s + " " + ci_text(f.ci_low, f.ci_high, "%.3g") : s;
}

// An arm's verdict at its best: "diverged k/n" over the values where the baseline trains, for one
// that diverges there.
std::string best_verdict_text(const VariantStats& best, const TunedArm* arm, double better_by) {
  if (arm == nullptr || arm->outcome != TunedOutcome::diverges) {
    return verdict_text(best, better_by);
  }
  int64_t diverged = 0, runs = 0;
  for (const auto& d : arm->diverged) {
    diverged += d.baseline_trains ? d.diverged : 0;
    runs += d.baseline_trains ? d.runs : 0;
  }
  return "diverged " + std::to_string(diverged) + "/" + std::to_string(runs);
}

std::string improvement_text(const VariantStats* v) {
  if (v == nullptr) {
    return "-";
  }
  return v->is_baseline ? "0" : format_number("%+.4f", v->improvement);
}

// The widest step between neighbouring values tried along the tune axis (a ratio), or 0.
double widest_step(const Analysis& a) {
  double widest = 0;
  for (const auto& r : a.responses) {
    if (!r.fit.log_x) {
      continue;
    }
    double previous = 0;
    for (const auto& p : r.points) {
      if (!p.values.empty()) {
        widest = previous > 0 ? std::max(widest, p.x / previous) : widest;
        previous = p.x;
      }
    }
  }
  return widest;
}

}  // namespace

std::vector<std::string> tuned_headers(const TunedSummary& t) {
  const std::string key = short_key(t.keys.front());
  return {"#", "arm", "best " + key + " [95% CI]", "2× off costs", "n", "at its best", "95% CI", "verdict",
          "at base " + key, "verdict at base", "outcome"};
}

Rows tuned_rows(const Analysis& a) {
  Rows rows;
  const TunedSummary& t = *a.tuned;
  for (size_t i = 0; i < t.at_best.size(); ++i) {
    const VariantStats& best = t.at_best[i];
    const TunedArm* arm = nullptr;
    for (const auto& x : t.arms) {
      if (x.arm == best.name) {
        arm = &x;
      }
    }
    const VariantStats* base = stats_of(a.variants, best.name);
    const std::string n = best.seeds == best.seeds_planned ? std::to_string(best.seeds)
                                                           : std::to_string(best.seeds) + "/" + std::to_string(best.seeds_planned);
    rows.push_back({std::to_string(i + 1), best.name, arm ? best_text(*arm) : "-",
                    arm && std::isfinite(arm->sensitivity) ? format_number("%.4f", arm->sensitivity) : "-", n,
                    improvement_text(&best), ci_text(best.ci_low, best.ci_high, "%+.4f"), best_verdict_text(best, arm, a.design.better_by),
                    improvement_text(base), base ? verdict_text(*base, a.design.better_by) : "-", arm ? arm->why : "-"});
  }
  return rows;
}

std::string tuned_title(const TunedSummary& t) { return "Tuned: each arm at its own best " + short_key(t.keys.front()); }

std::string tuned_sentence(const Analysis& a) {
  const TunedSummary& t = *a.tuned;
  const std::string key = t.keys.front();
  const double step = widest_step(a);
  // a grid coarser than √2 (with some slack for rounded values): the local fit's bias on a lopsided curve
  const std::string caution =
      step > 1.5 ? " Values up to " + format_number("%.3g", step) + "× apart: where the curve is steeper above its best "
                   "than below, the fitted minimum is off by an amount that depends on where the best falls between "
                   "two values, so arms whose bests lie part of a step apart can differ by that alone, and more seeds "
                   "make it significant (docs/verdicts.md measures it); values √2 apart around the best avoid it."
                 : "";
  return "Each arm (an intervention) was trained at every value of " + join(t.keys, ", ") +
         ". On each seed, its tuned value is the lowest loss of a quadratic in log(" + key +
         ") through that seed's lowest value and its two neighbours (a local fit: the curve far from its best, "
         "steeper above it than below, does not pull it), so the best is chosen again on every seed and its noise is "
         "in the seeds' spread; 'at its best' = mean(baseline's tuned values) − mean(arm's), judged as the table above "
         "judges the runs at the base value (" + short_key(key) + " = " + (t.base_value.empty() ? "?" : t.base_value) +
         "). best " + short_key(key) + ": the minimum of the same local fit to all seeds; its 95% CI the t interval "
         "of each seed's own fit's minimum, widened on each side by " + format_number("%g", k_best_shape_allowance) +
         " of the step between values — as far as a curve up to 4× steeper on one side of its best than the other moves a 3-point fit's minimum, which no "
         "resampling of seeds sees (docs/verdicts.md measures its coverage); 2× off "
         "costs: how much higher the fitted curve lies a factor 2 from it. An arm is " + short_key(key) +
         "-confounded when its verdict at the base value and at its best differ, or when its best (or the baseline's) "
         "may lie beyond the values tried (the fitted minimum, or the lowest measured mean, at an end of them; "
         "never past a value tried whose runs diverged). An arm whose runs diverged at a value where the baseline's "
         "all trained diverges: its verdict at its best is 'diverged k/n', as the table above judges a diverged seed, "
         "never equivalent." +
         caution;
}

std::string tuned_text(const Analysis& a) {
  std::ostringstream out;
  out << "\n" << tuned_title(*a.tuned) << ":\n"
      << text_table(tuned_headers(*a.tuned), tuned_rows(a), "  ") << "  " << tuned_sentence(a) << '\n';
  for (const auto& n : a.tuned->notes) {
    out << "  note: " << n << '\n';
  }
  return out.str();
}

std::string tuned_markdown(const Analysis& a) {
  Rows rows = tuned_rows(a);
  for (auto& row : rows) {
    row[1] = md_code(row[1]);
    row[10] = md_code(row[10]);
  }
  std::ostringstream out;
  out << "\n## " << tuned_title(*a.tuned) << "\n\n"
      << markdown_table(tuned_headers(*a.tuned), rows) << '\n' << tuned_sentence(a) << '\n';
  for (const auto& n : a.tuned->notes) {
    out << "\n- " << md_code(n);
  }
  out << (a.tuned->notes.empty() ? "" : "\n");
  return out.str();
}

std::string tuned_html(const Analysis& a) {
  std::ostringstream out;
  out << "<h2>" << html_escape(tuned_title(*a.tuned)) << "</h2>\n"
      << html_table(tuned_headers(*a.tuned), tuned_rows(a)) << "<p>" << html_escape(tuned_sentence(a)) << "</p>\n";
  if (!a.tuned->notes.empty()) {
    out << "<ul>\n";
    for (const auto& n : a.tuned->notes) {
      out << "<li>" << html_escape(n) << "</li>\n";
    }
    out << "</ul>\n";
  }
  return out.str();
}

}  // namespace sweep
