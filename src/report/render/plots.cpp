#include "report/render/plots.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <map>
#include <sstream>

#include "report/ladder/ladder.h"
#include "report/pool/pool.h"
#include "util/error.h"
#include "util/fs.h"
#include "util/process.h"
#include "util/text.h"

namespace sweep {

namespace {

// A gnuplot single-quoted string: '' is a quote; control characters would end the command.
std::string quoted(const std::string& s) {
  std::string out = "'";
  for (char c : s) {
    if (c == '\'') {
      out += "''";
    } else if (static_cast<unsigned char>(c) < 0x20) {
      out += '?';
    } else {
      out += c;
    }
  }
  return out + "'";
}

std::string metric_label(const Metric& metric) {
  switch (metric.kind) {
    case Metric::Kind::test_loss:
      return "test loss (nats/token)";
    case Metric::Kind::test_bpb:
      return "test bits per byte";
    case Metric::Kind::val_loss:
      return "final validation loss (nats/token)";
    case Metric::Kind::val_last:
      return "mean of the last " + std::to_string(metric.k) + " validation losses (nats/token)";
  }
  return metric.name();
}

const char* k_terminal =
    "set terminal svg size 960,560 dynamic noenhanced font 'sans,12' background '#ffffff'\n"
    "set grid lc rgb '#dddddd'\nset border lc rgb '#444444'\nset key outside right top noautotitle\n";

// Mean, min and max of the variant's validation curves at each evaluated token count (step 0
// left out: its loss of ln(vocab) would flatten every curve).
std::string curve_data(const VariantRuns& v) {
  std::map<int64_t, std::vector<double>> at;
  for (const auto& r : v.runs) {
    for (const auto& [tokens, loss] : r.val_curve) {
      if (tokens > 0) {
        at[tokens].push_back(loss);
      }
    }
  }
  std::ostringstream out;
  out.precision(8);
  for (const auto& [tokens, losses] : at) {
    out << tokens << ' ' << summarize(losses).mean << ' '
        << *std::min_element(losses.begin(), losses.end()) << ' ' << *std::max_element(losses.begin(), losses.end())
        << '\n';
  }
  return out.str();
}

const VariantRuns* runs_named(const ReportInput& in, const std::string& name) {
  for (const auto& v : in.variants) {
    if (v.name == name) {
      return &v;
    }
  }
  return nullptr;
}

struct Script {
  std::string text;
  std::vector<std::pair<std::string, std::string>> data;  // file name, content
};

Script curves_script(const ReportInput& in, const Analysis& a) {
  Script s;
  s.text = "set title 'Validation loss vs tokens: mean over seeds (points: evaluations), band = min to max'\n"
           "set xlabel 'tokens trained'\nset ylabel 'validation loss (nats/token)'\nset format x '%.1s%c'\nplot ";
  std::string lines;
  // Ranked order, the baseline drawn last so that it lies on top.
  std::vector<const VariantStats*> order;
  for (const auto& v : a.variants) {
    order.push_back(&v);
  }
  std::stable_partition(order.begin(), order.end(), [](const VariantStats* v) { return !v->is_baseline; });
  for (const VariantStats* v : order) {
    const std::string data = curve_data(*runs_named(in, v->name));
    if (data.empty()) {
      continue;
    }
    const std::string file = "curve" + std::to_string(v->position) + ".dat";
    s.data.emplace_back(file, data);
    const std::string colour = quoted(variant_colour(*v));
    s.text += quoted(file) + " using 1:3:4 with filledcurves fc rgb " + colour +
              " fs transparent solid 0.15 noborder notitle, ";
    // points mark the evaluations: a run with one evaluation after step 0 still shows
    lines += quoted(file) + " using 1:2 with linespoints pt 7 ps 0.4 lw " + (v->is_baseline ? "3" : "1.5") + " lc rgb " + colour +
             " title " + quoted(v->name) + ", ";
  }
  if (lines.empty()) {
    return {};  // no run has a validation curve: no plot (gnuplot refuses an empty one)
  }
  s.text += lines;
  return s;
}

Script forest_script(const Analysis& a) {
  Script s;
  std::vector<const VariantStats*> shown;
  for (const auto& v : a.variants) {
    if (!v.is_baseline && std::isfinite(v.improvement)) {
      shown.push_back(&v);
    }
  }
  if (shown.empty()) {
    return s;
  }
  const auto n = static_cast<int>(shown.size());
  std::ostringstream t;
  t.precision(8);
  // shaded: ±δ when the study declares a smallest effect of interest, else the noise band — each said
  const bool delta = a.design.min_effect > 0;
  const double shade = delta ? a.design.min_effect : a.noise.band;
  const std::string shaded =
      delta ? "±δ = ±" + format_number("%g", a.design.min_effect) + ", the smallest effect of interest"
            : "±" + format_number("%.4f", a.noise.band) + ", the noise band of one unpaired comparison at " +
                  std::to_string(a.noise.seeds) + " seeds";
  t << "set title " << quoted("Improvement over " + a.baseline + " with 95% CI" +
                              (std::isfinite(shade) ? " (shaded: " + shaded + ")" : ""))
    << '\n';
  t << "set xlabel " << quoted("improvement in " + metric_label(a.metric) + ", > 0 = better") << '\n';
  t << "set yrange [" << n - 0.5 << ":-0.5]\nset ytics (";
  for (int i = 0; i < n; ++i) {
    t << (i ? ", " : "") << quoted(shown[static_cast<size_t>(i)]->name) << ' ' << i;
  }
  t << ")\nset grid noytics\n";
  if (std::isfinite(shade)) {
    t << "set object 1 rect from " << -shade << ", graph 0 to " << shade
      << ", graph 1 fc rgb '#888888' fs transparent solid 0.2 noborder behind\n";
  }
  t << "set arrow 1 from 0, graph 0 to 0, graph 1 nohead lc rgb '#444444' dt 2\nset key off\nplot ";
  std::ostringstream data;
  data.precision(8);
  for (int i = 0; i < n; ++i) {
    const VariantStats& v = *shown[static_cast<size_t>(i)];
    const double lo = std::isfinite(v.ci_low) ? v.ci_low : v.improvement;
    const double hi = std::isfinite(v.ci_high) ? v.ci_high : v.improvement;
    data << v.improvement << ' ' << i << ' ' << lo << ' ' << hi << "\n\n\n";
    t << (i ? ", " : "") << "'forest.dat' index " << i << " using 1:2:3:4 with xerrorbars pt 7 ps 1.3 lw 2 lc rgb "
      << quoted(variant_colour(v)) << " title " << quoted(v.name);
  }
  s.text = t.str();
  s.data.emplace_back("forest.dat", data.str());
  return s;
}

Script seeds_script(const ReportInput& in, const Analysis& a) {
  Script s;
  std::ostringstream t, data;
  data.precision(10);
  const bool references =
      !a.references.empty() && (a.metric == Metric::Kind::test_loss || a.metric == Metric::Kind::test_bpb);
  t << "set title "
    << quoted(metric_label(a.metric) + " of every seed (bar: the mean" + (references ? "; dashed: reference models" : "") + ")")
    << "\nset ylabel "
    << quoted(metric_label(a.metric)) << "\nset xtics rotate by -30 (";
  std::string plot;
  int shown = 0;
  for (const auto& v : a.variants) {
    std::vector<double> values;
    for (const auto& r : runs_named(in, v.name)->runs) {
      if (r.value && std::isfinite(*r.value)) {
        values.push_back(*r.value);
      }
    }
    if (values.empty()) {
      continue;
    }
    for (size_t k = 0; k < values.size(); ++k) {  // spread the seeds a little around the variant's x
      const double x = shown + (values.size() > 1 ? 0.3 * (static_cast<double>(k) / (values.size() - 1) - 0.5) : 0);
      data << x << ' ' << values[k] << '\n';
    }
    data << "\n\n" << shown - 0.3 << ' ' << v.summary.mean << '\n' << shown + 0.3 << ' ' << v.summary.mean << "\n\n\n";
    const std::string colour = quoted(variant_colour(v));
    plot += std::string(shown ? ", " : "") + "'seeds.dat' index " + std::to_string(2 * shown) +
            " using 1:2 with points pt 7 ps 1.1 lc rgb " + colour + " title " + quoted(v.name) +
            ", 'seeds.dat' index " + std::to_string(2 * shown + 1) + " using 1:2 with lines lw 2 lc rgb " + colour +
            " notitle";
    t << (shown ? ", " : "") << quoted(v.name) << ' ' << shown;
    ++shown;
  }
  if (shown == 0) {
    return s;
  }
  t << ")\n";
  // Reference models (references: in the sweep file) as dashed lines across, on the test metrics.
  int block = 2 * shown;
  for (const auto& r : a.references) {
    const std::optional<double> y = a.metric == Metric::Kind::test_loss  ? std::optional<double>(r.loss)
                                    : a.metric == Metric::Kind::test_bpb ? r.bpb
                                                                         : std::nullopt;
    if (!y) {
      continue;
    }
    data << -0.6 << ' ' << *y << '\n' << shown - 0.4 << ' ' << *y << "\n\n\n";
    plot += ", 'seeds.dat' index " + std::to_string(block++) + " using 1:2 with lines dt 2 lw 1.5 lc rgb '#555555' notitle";
    t << "set label " << quoted(r.name + ": " + format_number("%.4f", *y)) << " at first -0.55, first " << *y
      << " offset 0,0.7 font ',9' tc rgb '#555555'\n";
  }
  t << "set xrange [-0.6:" << shown - 0.4 << "]\nset key off\nplot " << plot << '\n';
  s.text = t.str();
  s.data.emplace_back("seeds.dat", data.str());
  return s;
}

// Twelve colours for the variants (and the response's series); a sweep with more reuses them.
std::string palette_colour(size_t i) {
  static const char* const palette[] = {"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b",
                                        "#e377c2", "#bcbd22", "#17becf", "#7f7f7f", "#aec7e8", "#ffbb78"};
  return palette[i % (sizeof palette / sizeof palette[0])];
}

// The paired Δ-loss curves of every intervention: the mean improvement over seeds at each
// evaluation, with its 95% CI as a band; 0 dashed.
Script delta_script(const Analysis& a) {
  Script s;
  std::string plot;
  for (const auto& d : a.deltas) {
    std::ostringstream data;
    data.precision(8);
    for (const auto& [tokens, sum] : d.points) {
      data << tokens << ' ' << sum.mean << ' ' << (std::isfinite(sum.ci_low) ? sum.ci_low : sum.mean) << ' '
           << (std::isfinite(sum.ci_high) ? sum.ci_high : sum.mean) << '\n';
    }
    if (d.points.empty()) {
      continue;
    }
    const std::string file = "delta" + std::to_string(d.position) + ".dat";
    s.data.emplace_back(file, data.str());
    const std::string colour = quoted(palette_colour(static_cast<size_t>(d.position)));
    plot += std::string(plot.empty() ? "" : ", ") + quoted(file) + " using 1:3:4 with filledcurves fc rgb " + colour +
            " fs transparent solid 0.15 noborder notitle, " + quoted(file) +
            " using 1:2 with linespoints pt 7 ps 0.4 lw 1.5 lc rgb " + colour + " title " + quoted(d.variant);
  }
  if (plot.empty()) {
    return s;
  }
  s.text = "set title " + quoted("Improvement over " + a.baseline + " along training: Δ validation loss at the same "
                                 "seed and tokens, mean over seeds, band = 95% CI") +
           "\nset xlabel 'tokens trained'\nset ylabel 'baseline − variant (nats/token), > 0 = better'\n"
           "set format x '%.1s%c'\nset xzeroaxis lt 1 dt 2 lc rgb '#444444'\nplot " + plot + "\n";
  return s;
}

// Tokens saved to reach the baseline's final validation loss, with the 95% CI over seeds.
Script target_script(const Analysis& a) {
  Script s;
  std::vector<const TokensToTarget*> shown;
  for (const auto& t : a.targets) {
    if (t.reached > 0) {
      shown.push_back(&t);
    }
  }
  if (shown.empty()) {
    return s;
  }
  const auto n = static_cast<int>(shown.size());
  std::ostringstream t, data;
  t.precision(8);
  data.precision(8);
  t << "set title " << quoted("Tokens saved to reach " + a.baseline + "'s final validation loss (95% CI over seeds)")
    << "\nset xlabel " << quoted("tokens saved (%), > 0 = gets there sooner") << "\nset yrange [" << n - 0.5
    << ":-0.5]\nset ytics (";
  for (int i = 0; i < n; ++i) {
    t << (i ? ", " : "") << quoted(shown[static_cast<size_t>(i)]->variant) << ' ' << i;
  }
  t << ")\nset grid noytics\nset arrow 1 from 0, graph 0 to 0, graph 1 nohead lc rgb '#444444' dt 2\nset key off\nplot ";
  for (int i = 0; i < n; ++i) {
    const Summary& v = shown[static_cast<size_t>(i)]->saving;
    data << 100 * v.mean << ' ' << i << ' ' << 100 * (std::isfinite(v.ci_low) ? v.ci_low : v.mean) << ' '
         << 100 * (std::isfinite(v.ci_high) ? v.ci_high : v.mean) << "\n\n\n";
    t << (i ? ", " : "") << "'target.dat' index " << i << " using 1:2:3:4 with xerrorbars pt 7 ps 1.3 lw 2 lc rgb "
      << quoted(palette_colour(static_cast<size_t>(shown[static_cast<size_t>(i)]->position))) << " title "
      << quoted(shown[static_cast<size_t>(i)]->variant);
  }
  s.text = t.str() + "\n";
  s.data.emplace_back("target.dat", data.str());
  return s;
}

// What a training-curve plot shows, per step.
enum class TrainMetric { loss, grad_norm, moe_load };

// A training curve (loss, gradient norm, or MoE load balance) per variant: every step of every
// seed in up to 100 buckets of tokens; the line is the bucket's mean (smoothed), the band its
// 10th to 90th percentile of the raw per-step values. Variants without the metric are left out.
Script train_script(const ReportInput& in, const Analysis& a, TrainMetric metric) {
  Script s;
  std::string lines, bands;
  for (const auto& v : a.variants) {
    const VariantRuns* runs = runs_named(in, v.name);
    int64_t most = 0;
    for (const auto& r : runs->runs) {
      for (const auto& p : r.train_curve) {
        most = std::max(most, p.tokens);
      }
    }
    if (most == 0) {
      continue;
    }
    std::map<int64_t, std::vector<double>> buckets;  // bucket -> raw values
    const double width = static_cast<double>(most) / 100.0;
    for (const auto& r : runs->runs) {
      for (const auto& p : r.train_curve) {
        const double value = metric == TrainMetric::grad_norm ? p.grad_norm
                             : metric == TrainMetric::moe_load ? p.moe_load
                                                                : p.loss;
        if (std::isfinite(value)) {
          buckets[static_cast<int64_t>(std::min(99.0, std::floor(static_cast<double>(p.tokens - 1) / width)))].push_back(value);
        }
      }
    }
    std::ostringstream data;
    data.precision(8);
    for (const auto& [bucket, values] : buckets) {
      data << (static_cast<double>(bucket) + 0.5) * width << ' ' << summarize(values).mean << ' '
           << percentile(values, 0.1) << ' ' << percentile(values, 0.9) << '\n';
    }
    if (buckets.empty()) {
      continue;
    }
    const std::string file = std::string(metric == TrainMetric::grad_norm  ? "norm"
                                         : metric == TrainMetric::moe_load ? "moe"
                                                                           : "train") +
                             std::to_string(v.position) + ".dat";
    s.data.emplace_back(file, data.str());
    const std::string colour = quoted(variant_colour(v));
    bands += quoted(file) + " using 1:3:4 with filledcurves fc rgb " + colour + " fs transparent solid 0.12 noborder notitle, ";
    lines += quoted(file) + " using 1:2 with lines lw " + (v.is_baseline ? "3" : "1.5") + " lc rgb " + colour +
             " title " + quoted(v.name) + ", ";
  }
  if (lines.empty()) {
    return s;
  }
  const bool norm = metric == TrainMetric::grad_norm, moe = metric == TrainMetric::moe_load;
  const std::string what = norm  ? "gradient norm (before clipping)"
                           : moe ? "busiest expert's tokens / mean per expert (1 = balanced)"
                                 : "training loss (nats/token)";
  const std::string title =
      moe ? "MoE load balance vs tokens: mean over the MoE layers, seeds and 100 buckets, band = 10th to 90th percentile"
          : std::string(norm ? "Gradient norm" : "Training loss") +
                " vs tokens: mean over seeds and steps in 100 buckets, band = 10th to 90th percentile of the raw steps";
  s.text = "set title " + quoted(title) +
           "\nset xlabel 'tokens trained'\nset ylabel " + quoted(what) + "\nset format x '%.1s%c'\n" +
           (norm ? "set logscale y\n" : "") + "plot " + bands + lines + "\n";
  return s;
}

// The metric against the first numeric axis: every seed, the mean with its 95% CI, the fitted
// quadratic and the best value with its CI (shaded), one colour per series.
Script response_script(const Analysis& a) {
  Script s;
  if (a.responses.empty()) {
    return s;
  }
  const std::vector<std::string>& keys = a.responses.front().keys;
  std::vector<const Response*> shown;
  for (const auto& r : a.responses) {
    if (r.keys == keys) {
      shown.push_back(&r);
    }
  }
  const bool log_x = std::all_of(shown.begin(), shown.end(), [](const Response* r) { return r->log_x; });
  const bool whole = std::all_of(shown.begin(), shown.end(), [](const Response* r) {
    return std::all_of(r->points.begin(), r->points.end(), [](const ResponsePoint& p) { return p.x == std::round(p.x); });
  });
  std::ostringstream t, data;
  data.precision(10);
  t << "set title " << quoted("every seed, the mean with its 95% CI, the fitted curve, the best value (shaded: its CI)")
    << "\nset xlabel " << quoted(shown.front()->label) << "\nset ylabel " << quoted(metric_label(a.metric))
    << "\nset format x '%g'\n";
  if (log_x) {
    t << "set logscale x " << (whole ? 2 : 10) << '\n';  // batch sizes: powers of 2; rates: decades
  }
  std::string plot;
  int block = 0;
  for (size_t i = 0; i < shown.size(); ++i) {
    const Response& r = *shown[i];
    // the baseline's series black, the others in the variants' palette
    const std::string colour = quoted(r.series == a.baseline ? "#000000" : palette_colour(i));
    for (const auto& p : r.points) {  // block: every seed
      for (const auto& [seed, value] : p.values) {
        data << p.x << ' ' << value << '\n';
      }
    }
    data << "\n\n";
    for (const auto& p : r.points) {  // block: means and CIs
      if (p.summary.n > 0) {
        const double lo = std::isfinite(p.summary.ci_low) ? p.summary.ci_low : p.summary.mean;
        const double hi = std::isfinite(p.summary.ci_high) ? p.summary.ci_high : p.summary.mean;
        data << p.x << ' ' << p.summary.mean << ' ' << lo << ' ' << hi << '\n';
      }
    }
    data << "\n\n";
    plot += std::string(plot.empty() ? "" : ", ") + "'response.dat' index " + std::to_string(block) +
            " using 1:2 with points pt 6 ps 0.8 lc rgb " + colour + " notitle, 'response.dat' index " +
            std::to_string(block + 1) + " using 1:2:3:4 with yerrorlines lw 2 pt 7 lc rgb " + colour + " title " +
            quoted(r.series);
    block += 2;
    const OptimumFit& f = r.fit;
    if (f.fitted) {
      // the fit speaks for its 3 values only
      const double lo = f.fit_low, hi = f.fit_high;
      for (int k = 0; k <= 100; ++k) {  // block: the fitted curve
        const double x = f.log_x ? lo * std::pow(hi / lo, k / 100.0) : lo + (hi - lo) * k / 100.0;
        data << x << ' ' << f.curve.at(f.log_x ? std::log(x) : x) << '\n';
      }
      data << "\n\n";
      plot += ", 'response.dat' index " + std::to_string(block) + " using 1:2 with lines dt 2 lw 1.5 lc rgb " + colour +
              " notitle";
      ++block;
      if (std::isfinite(f.ci_low)) {
        t << "set object " << i + 1 << " rect from " << f.ci_low << ", graph 0 to " << f.ci_high
          << ", graph 1 fc rgb " << colour << " fs transparent solid 0.12 noborder behind\n";
      }
      t << "set arrow " << i + 1 << " from " << f.best << ", graph 0 to " << f.best << ", graph 1 nohead lc rgb "
        << colour << " dt 3 lw 1.5\n";
    }
  }
  t << "plot " << plot << '\n';
  s.text = t.str();
  s.data.emplace_back("response.dat", data.str());
  return s;
}

// A ladder: every intervention's improvement at each rung (95% CI bars) against the rung's
// training FLOPs on a log axis, its fitted line (dashed on to the target, with the prediction
// interval there), 0 dashed, and ±δ shaded when declared.
Script ladder_script(const Analysis& a) {
  Script s;
  if (!a.ladder || a.ladder->trends.empty()) {
    return s;
  }
  const LadderSummary& l = *a.ladder;
  std::ostringstream t, data;
  t.precision(10);
  data.precision(10);
  t << "set title " << quoted("Improvement over the baseline at each rung (95% CI) and its trend in log compute" +
                              std::string(a.design.min_effect > 0 ? " (shaded: ±δ)" : ""))
    << "\nset xlabel 'training FLOPs of the rung (log scale)'\nset ylabel "
    << quoted("improvement in " + metric_label(a.metric) + ", > 0 = better") << "\nset logscale x\nset format x '%.0e'\n"
    << "set xzeroaxis lt 1 dt 2 lc rgb '#444444'\n";
  if (a.design.min_effect > 0) {
    t << "set object 1 rect from graph 0, first " << -a.design.min_effect << " to graph 1, first " << a.design.min_effect
      << " fc rgb '#888888' fs transparent solid 0.15 noborder behind\n";
  }
  const bool target = std::isfinite(l.target_flops);
  if (target) {
    t << "set arrow 1 from " << l.target_flops << ", graph 0 to " << l.target_flops
      << ", graph 1 nohead lc rgb '#888888' dt 3\nset label 1 " << quoted("target") << " at " << l.target_flops
      << ", graph 0.97 right offset -0.5,0 tc rgb '#555555'\n";
  }
  std::string plot;
  int block = 0;
  const auto m = static_cast<double>(l.trends.size());
  for (size_t i = 0; i < l.trends.size(); ++i) {
    const Trend& tr = l.trends[i];
    const std::string colour = quoted(palette_colour(static_cast<size_t>(tr.position)));
    const double nudge = std::pow(10.0, 0.012 * (static_cast<double>(i) - (m - 1) / 2));  // bars side by side
    bool any = false;
    for (size_t k = 0; k < a.rungs.size(); ++k) {
      for (const auto& v : a.rungs[k].variants) {
        if (v.name == tr.rung_variants[k] && std::isfinite(v.improvement) && l.rungs[k].flops > 0) {
          data << l.rungs[k].flops * nudge << ' ' << v.improvement << ' '
               << (std::isfinite(v.ci_low) ? v.ci_low : v.improvement) << ' '
               << (std::isfinite(v.ci_high) ? v.ci_high : v.improvement) << '\n';
          any = true;
        }
      }
    }
    data << "\n\n";
    if (!any) {
      ++block;
      continue;
    }
    plot += std::string(plot.empty() ? "" : ", ") + "'ladder.dat' index " + std::to_string(block++) +
            " using 1:2:3:4 with yerrorbars pt 7 ps 1 lw 1.5 lc rgb " + colour + " title " +
            quoted(tr.intervention + ": " + to_string(tr.verdict));
    if (std::isfinite(tr.slope)) {
      const double x0 = std::log10(l.rungs.front().flops), x1 = std::log10(l.rungs.back().flops);
      // the fitted line through the rungs, then on to the target
      auto at = [&](double x) { return tr.low_end + (tr.high_end - tr.low_end) * (x - x0) / (x1 - x0); };
      data << l.rungs.front().flops << ' ' << tr.low_end << '\n' << l.rungs.back().flops << ' ' << tr.high_end << "\n\n\n";
      plot += ", 'ladder.dat' index " + std::to_string(block++) + " using 1:2 with lines lw 2 lc rgb " + colour + " notitle";
      if (target && std::isfinite(tr.at_target)) {
        const double xt = std::log10(l.target_flops);
        data << l.rungs.back().flops << ' ' << tr.high_end << '\n' << l.target_flops << ' ' << at(xt) << "\n\n\n";
        data << l.target_flops * nudge << ' ' << tr.at_target << ' ' << tr.target_low << ' ' << tr.target_high
             << "\n\n\n";
        plot += ", 'ladder.dat' index " + std::to_string(block) + " using 1:2 with lines dt 2 lw 1 lc rgb " + colour +
                " notitle, 'ladder.dat' index " + std::to_string(block + 1) +
                " using 1:2:3:4 with yerrorbars pt 6 ps 1 lw 1 lc rgb " + colour + " notitle";
        block += 2;
      }
    }
  }
  if (plot.empty()) {
    return s;
  }
  t << "plot " << plot << '\n';
  s.text = t.str();
  s.data.emplace_back("ladder.dat", data.str());
  return s;
}

}  // namespace

std::string variant_colour(const VariantStats& v) {
  return v.is_baseline ? "#000000" : palette_colour(static_cast<size_t>(v.position));
}

namespace {

struct Wanted {
  std::string file, title;
  Script script;
};

// The pool's forest plot: each intervention's settings (effect ± 1.96 standard errors), its pooled
// effect with Hartung–Knapp's interval, and the prediction interval for a new setting.
Script pool_script(const Pool& pool) {
  Script s;
  std::ostringstream t, data, tics;
  t.precision(8);
  data.precision(8);
  int row = 0, block = 0;
  std::string plot;
  const auto add = [&](const std::string& label, double at, double lo, double hi, const std::string& style) {
    tics << (row ? ", " : "") << quoted(label) << ' ' << row;
    data << at << ' ' << row << ' ' << lo << ' ' << hi << "\n\n\n";
    plot += (block ? ", " : "") + std::string("'pool.dat' index ") + std::to_string(block) + " using 1:2:3:4 " + style;
    ++row;
    ++block;
  };
  for (const auto& p : pool.pooled) {
    for (const auto& st : p.settings) {
      add(p.intervention + " · " + st.setting, st.effect, st.effect - 1.96 * st.se, st.effect + 1.96 * st.se,
          "with xerrorbars pt 7 ps 1 lw 1.5 lc rgb '#4477aa'");
    }
    add(p.intervention + ": pooled", p.meta.mean, p.meta.ci_low, p.meta.ci_high,
        "with xerrorbars pt 5 ps 1.4 lw 2.5 lc rgb '#000000'");
    if (std::isfinite(p.meta.pi_low)) {
      add(p.intervention + ": a new setting", p.meta.mean, p.meta.pi_low, p.meta.pi_high,
          "with xerrorbars pt 4 ps 1.2 lw 1.5 lc rgb '#cc6677'");
    }
  }
  if (row == 0) {
    return s;
  }
  t << "set terminal svg size 960," << std::max(360, 120 + 22 * row)
    << " dynamic noenhanced font 'sans,12' background '#ffffff'\n";
  t << "set title "
    << quoted("Each intervention across settings: 95% intervals (blue: a setting; black: pooled; red: a new setting)")
    << '\n';
  t << "set xlabel " << quoted("improvement in " + metric_label(pool.metric) + ", > 0 = better") << '\n';
  t << "set yrange [" << row - 0.5 << ":-0.5]\nset ytics (" << tics.str() << ")\nset grid noytics\n";
  t << "set arrow 1 from 0, graph 0 to 0, graph 1 nohead lc rgb '#444444' dt 2\nset key off\nplot " << plot;
  s.text = t.str();
  s.data.emplace_back("pool.dat", data.str());
  return s;
}

// The wanted plots drawn by one gnuplot run in work_dir (removed after); `warning` says why none were.
std::vector<Plot> run_gnuplot(const std::vector<Wanted>& wanted, const fs::path& work_dir, std::string& warning) {
  const std::optional<std::string> gnuplot = find_program("gnuplot");
  if (!gnuplot) {
    warning = "gnuplot not found: the report has no plots (Debian: apt-get install gnuplot-nox)";
    return {};
  }
  fs::create_directories(work_dir);
  std::vector<Plot> plots;
  try {
    std::string script = "cd " + quoted(work_dir.string()) + "\n" + k_terminal;
    for (const auto& w : wanted) {
      if (w.script.text.empty()) {
        continue;
      }
      for (const auto& [name, content] : w.script.data) {
        std::ofstream(work_dir / name) << content;
      }
      script += "reset\n" + std::string(k_terminal) + "set output " + quoted(w.file) + "\n" + w.script.text +
                "\nunset output\n";
    }
    std::ofstream(work_dir / "plots.gp") << script;
    const fs::path log = work_dir / "gnuplot.log";
    const int rc = run_process({*gnuplot, (work_dir / "plots.gp").string()}, log.string());
    if (rc != 0) {
      warning = "gnuplot failed (exit " + std::to_string(rc) + "): the report has no plots; its messages: " +
                read_file(log).substr(0, 2000);
    } else {
      for (const auto& w : wanted) {
        if (!w.script.text.empty()) {
          plots.push_back({w.file, w.title, read_file(work_dir / w.file)});
        }
      }
    }
  } catch (const std::exception& e) {
    warning = std::string("plots not drawn: ") + e.what();
    plots.clear();
  }
  std::error_code ignored;
  fs::remove_all(work_dir, ignored);
  return plots;
}

// The plots of one study (a ladder's rung too), drawn where their script is not empty.
std::vector<Wanted> study_plots(const ReportInput& in, const Analysis& a) {
  return {
      {"curves.svg", "Validation loss vs tokens", curves_script(in, a)},
      {"forest.svg", "Improvement over the baseline", forest_script(a)},
      {"seeds.svg", "Every seed", seeds_script(in, a)},
      {"response.svg", "Response to the axis", response_script(a)},
      {"delta.svg", "Where the effects happen: Δ validation loss along training", delta_script(a)},
      {"target.svg", "Tokens saved to reach the baseline's final loss", target_script(a)},
      {"train.svg", "Training loss", train_script(in, a, TrainMetric::loss)},
      {"grad_norm.svg", "Gradient norm", train_script(in, a, TrainMetric::grad_norm)},
      {"moe_load.svg", "MoE load balance: the busiest expert's tokens ÷ the mean", train_script(in, a, TrainMetric::moe_load)},
  };
}

}  // namespace

std::vector<Plot> draw_plots(const ReportInput& in, const Analysis& a, const fs::path& work_dir, std::string& warning) {
  std::vector<Wanted> wanted;
  if (a.ladder && !a.rungs.empty()) {
    // A ladder: its trends, then the largest rung's plots as a study of its own.
    const std::string rung = a.ladder->rungs.back().name;
    wanted = study_plots(rung_input(in, rung), a.rungs.back());
    for (auto& w : wanted) {
      w.title = "Rung " + rung + ": " + w.title;
    }
    wanted.insert(wanted.begin(), {"ladder.svg", "Improvement against scale", ladder_script(a)});
  } else {
    wanted = study_plots(in, a);
  }
  return run_gnuplot(wanted, work_dir, warning);
}

std::vector<Plot> draw_pool_plot(const Pool& pool, const fs::path& work_dir, std::string& warning) {
  return run_gnuplot({{"pool.svg", "Each intervention across settings", pool_script(pool)}}, work_dir, warning);
}


}  // namespace sweep
