// The report's tables and their sentences, shared by every document: the ranked table's columns
// and rows, the method and noise sentences, and tables as text, Markdown and HTML.
#include "report/render/tables.h"

#include <algorithm>
#include <cmath>
#include <sstream>

#include "util/text.h"

namespace sweep {

std::string p_text(double p) { return !std::isfinite(p) ? "-" : p < 1e-4 ? "<0.0001" : format_number("%.4f", p); }


// A fixed design whose --eliminate stopped an arm shows where, beside the power figure.
bool shows_eliminations(const Analysis& a) {
  return !a.design.sequential() &&
         std::any_of(a.variants.begin(), a.variants.end(), [](const VariantStats& v) { return !v.stopped.empty(); });
}

// The ranked table's columns: a sequential design (--until-decided) shows its looks instead of
// Holm's p and the power figure; a smallest effect of interest adds the equivalence test's p.
std::vector<std::string> headers(const Analysis& a) {
  std::vector<std::string> h{"#", "variant", "n", "mean ± sd", "improvement", a.design.sequential() ? "RCI" : "95% CI",
                             "test", "corr"};
  if (!a.design.sequential()) {
    h.push_back("p (Holm)");
    if (a.design.min_effect > 0) {
      h.push_back("p equiv (Holm)");
    }
    if (a.design.better_by > 0) {
      h.push_back("p by m (Holm)");
    }
  }
  h.insert(h.end(), {"P(better)", "verdict"});
  if (shows_eliminations(a)) {
    h.push_back("stopped");
  }
  h.push_back(a.design.sequential() ? "stopped" : "seeds for 80%");
  h.insert(h.end(), {"tokens", "tokens/s", "wall"});
  return h;
}

// Columns of text, left-aligned; the others are numbers, right-aligned.
bool left_aligned(const std::string& header) {
  return header == "variant" || header == "intervention" || header == "trend" || header == "test" || header == "verdict" || header == "stopped" ||
         header == "combination" || header == "parts" || header == "ladder" || header == "hidden rung";
}

std::string verdict_name(const VariantStats& v) {
  return v.verdict == Verdict::diverged && v.finished > 0
             ? "diverged " + std::to_string(v.diverged) + "/" + std::to_string(v.runs)
             : to_string(v.verdict);
}

std::string verdict_text(const VariantStats& v, double better_by) {
  return verdict_name(v) + (v.below_min_effect ? " (< δ)" : "") + (v.no_op ? " (no-op)" : "") +
         (v.better_by ? " (by > " + format_number("%g", better_by) + ")" : "");
}

// A row of the ranked table, in the order of headers(a).
std::vector<Cell> cells(const Analysis& a, const VariantStats& v, int rank) {
  const std::string n = v.seeds == v.seeds_planned ? std::to_string(v.seeds)
                                                   : std::to_string(v.seeds) + "/" + std::to_string(v.seeds_planned);
  const std::string mean = v.summary.n == 0   ? "-"
                           : v.summary.n == 1 ? format_number("%.4f", v.summary.mean)
                                              : format_number("%.4f", v.summary.mean) + " ± " + format_number("%.4f", v.summary.sd);
  // a one-seed comparison's interval comes from σ of other seeds: labelled so
  const std::string ci = std::isfinite(v.ci_low) ? std::string(v.method == Method::band ? "band " : "") + "[" +
                                                       format_number("%+.4f", v.ci_low) + ", " +
                                                       format_number("%+.4f", v.ci_high) + "]"
                                                 : "-";
  const double p = v.p_holm;
  std::vector<Cell> row{
      {std::to_string(rank), static_cast<double>(rank)},
      {v.name, std::nan("")},
      {n, static_cast<double>(v.finished)},
      {mean, v.summary.mean},
      {v.is_baseline ? "0" : format_number("%+.4f", v.improvement), v.improvement},
      {ci, v.ci_low},
      {v.method == Method::baseline ? "-" : to_string(v.method), std::nan("")},
      {format_number("%+.2f", v.correlation), v.correlation},
  };
  if (!a.design.sequential()) {
    row.push_back({p_text(p), p});
    if (a.design.min_effect > 0) {
      row.push_back({p_text(v.p_equivalence_holm), v.p_equivalence_holm});
    }
    if (a.design.better_by > 0) {
      row.push_back({p_text(v.p_better_by_holm), v.p_better_by_holm});
    }
  }
  row.push_back({format_number("%.2f", v.prob_improvement), v.prob_improvement});
  row.push_back({verdict_text(v, a.design.better_by), std::nan("")});
  if (a.design.sequential() || shows_eliminations(a)) {
    row.push_back({v.stopped.empty() ? "-" : v.stopped, std::nan("")});
  }
  if (!a.design.sequential()) {
    row.push_back({v.seeds_needed < 0 ? "-" : std::to_string(v.seeds_needed), static_cast<double>(v.seeds_needed)});
  }
  row.push_back({std::isfinite(v.tokens) ? format_count(v.tokens) : "-", v.tokens});
  row.push_back({std::isfinite(v.tokens_per_s) ? format_count(v.tokens_per_s) : "-", v.tokens_per_s});
  row.push_back({std::isfinite(v.wall_seconds) ? format_duration(v.wall_seconds) : "-", v.wall_seconds});
  return row;
}

Rows ranked_rows(const Analysis& a) {
  Rows rows;
  for (size_t i = 0; i < a.variants.size(); ++i) {
    std::vector<std::string> row;
    for (const auto& c : cells(a, a.variants[i], static_cast<int>(i + 1))) {
      row.push_back(c.text);
    }
    rows.push_back(row);
  }
  return rows;
}

size_t display_width(const std::string& s) {
  size_t n = 0;
  for (unsigned char c : s) {
    n += (c & 0xC0) != 0x80;  // count code points, not bytes
  }
  return n;
}

std::string method_sentence(const Analysis& a) {
  size_t tested = 0, band = 0;
  for (const auto& v : a.variants) {
    tested += v.method == Method::paired || v.method == Method::welch;
    band += v.method == Method::band;
  }
  const double delta = a.design.min_effect;
  const std::string m = std::to_string(std::max<size_t>(1, a.variants.size() - 1));
  const std::string margin = delta > 0 ? "±δ = ±" + format_number("%g", delta) + " (the smallest effect of interest, from " +
                                             to_string(a.min_effect_source) + ")"
                                       : "";
  std::string s;
  if (tested > 0 && a.design.sequential()) {
    s += "Verdicts (--until-decided, up to " + std::to_string(a.design.max_seeds) + " seeds, a look every " +
         std::to_string(a.design.first) + "): t-tests paired by seed (Welch where the seeds differ); at each look, "
         "repeated confidence intervals (Jennison & Turnbull) from " +
         std::string(a.design.spending == Spending::pocock ? "Pocock" : "O'Brien–Fleming") +
         "-type alpha spending (Lan & DeMets) at alpha " + format_number("%g", a.alpha) + " / " + m +
         " interventions, their t boundaries simulated for the look's seeds: better/worse when the two-sided "
         "interval excludes 0, " +
         (delta > 0 ? "equivalent when both one-sided tests at that level put the effect inside " + margin
                    : std::string("equivalent never (no min_effect)")) +
         "; the first look that decides stops the intervention's seeds, else undecided" +
         (a.design.better_by > 0 && !a.better_by_option ? std::string(" (a better one with its margin open goes on: below)")
                                                         : std::string()) +
         ". RCI: the difference's interval at its deciding (or last) look.";
  } else if (tested > 0) {
    s += "Verdicts: two-sided t-test (paired by seed where the baseline has the variant's seeds, Welch otherwise), "
         "p adjusted by Holm across " + plural(static_cast<int64_t>(tested + band), "intervention") +
         ", better/worse when p < " + format_number("%g", a.alpha) +
         (delta > 0 ? "; equivalent when the two one-sided tests (TOST) within " + margin +
                          " give a Holm-adjusted p < " + format_number("%g", a.alpha) + " — the " + format_number("%g", 100 * (1 - 2 * a.alpha)) +
                          "% interval inside ±δ; (< δ): better or worse, yet smaller than δ; else undecided."
                    : "; else undecided — not shown to differ, which is not shown equal: declare a smallest effect "
                      "of interest (min_effect) to test equivalence.") +
         " Seeds for 80%: the seeds per variant a t-test at alpha / " + m +
         " needs to detect the observed improvement with power 0.8.";
  }
  if ((tested > 0 || band > 0) && a.design.better_by > 0) {
    const std::string m = format_number("%g", a.design.better_by);
    s += std::string(s.empty() ? "" : " ") + "(by > " + m + "): better, and shown better by more than the margin m = " + m +
         " (better_by) — " +
         (a.design.sequential()
              ? "a look's one-sided repeated bound, at " + format_number("%g", a.design.better_by_alpha) +
                    " / the interventions, lies above it" +
                    (a.better_by_option ? std::string(" (a margin from --better-by: not one the runner added seeds for).")
                                        : std::string("; a better intervention gets seeds until a look shows that, or puts "
                                                      "the improvement plus the bound's half-width at or below m (out of "
                                                      "reach), or the cap."))
              : "a one-sided t-test of improvement > m, its p Holm-adjusted across the interventions (p by m) below " +
                    format_number("%g", a.design.better_by_alpha) + ".");
  }
  if (tested > 0 || band > 0) {
    s += std::string(s.empty() ? "" : " ") + "n: seeds (identical-seed repeats count once). corr: the correlation of the variant's per-seed values "
         "with the baseline's — high when the seeds' shared noise cancels in the paired test (3 or more seeds).";
  }
  if (band > 0) {
    s += std::string(s.empty() ? "" : " ") +
         "One seed (test: band): no spread of its own, so the improvement is tested against σ, the noise of the "
         "source below — a t-test with σ's " + std::to_string(std::max<int64_t>(0, a.noise.n - 1)) +
         " degrees of freedom (σ is estimated, not known), standard error σ·√(1/n_baseline + 1/n_variant), in the "
         "same Holm family; its 95% CI column reads \"band [low, high]\": that t interval." +
         (tested == 0 ? std::string(" Better/worse when the Holm-adjusted p < ") + format_number("%g", a.alpha) +
                            (delta > 0 ? "; equivalent when TOST within ±δ = ±" + format_number("%g", delta) + " gives a Holm-adjusted p < " + format_number("%g", a.alpha) : "") +
                            "; else undecided."
                      : "");
  }
  return s;
}

std::vector<std::string> noise_lines(const Analysis& a) {
  const NoiseSummary& n = a.noise;
  std::vector<std::string> out{n.source + (std::isfinite(n.sigma) ? ": σ = " + format_number("%.4f", n.sigma) : "")};
  const VarianceComponents& c = n.components;
  if (std::isfinite(c.sigma_init) || std::isfinite(c.sigma_data)) {
    out.push_back("variance components (" + std::to_string(c.n_init) + " init × " + std::to_string(c.n_data) +
                  " data seeds): σ_init = " + format_number("%.4f", c.sigma_init) + ", σ_data = " + format_number("%.4f", c.sigma_data) +
                  ", σ_interaction = " + format_number("%.4f", c.sigma_resid));
  }
  if (std::isfinite(c.sigma_repeat)) {
    out.push_back("σ_repeat (identical seeds run " + std::to_string(c.repeats) +
                  " times: nondeterminism) = " + format_number("%.4g", c.sigma_repeat));
  }
  if (std::isfinite(n.band)) {
    out.push_back("noise band of an improvement with " + plural(n.seeds, "seed") + " per variant: ±" + format_number("%.4f", n.band) +
                  " (t·σ·√(2/seeds), t for σ's " + std::to_string(n.n - 1) + " degrees of freedom: the 95% half-width "
                  "of one unpaired comparison)");
  }
  if (std::isfinite(n.test_se)) {
    out.push_back("test-set sampling: one run's " + a.metric.name() + " has a standard error of ±" +
                  format_number("%.4f", n.test_se) + " from its test split's " + std::to_string(n.test_blocks) +
                  " blocks (the median over the baseline's runs) — more seeds do not shrink it: every seed is "
                  "scored on the same test tokens");
  }
  if (std::isfinite(n.detectable)) {
    out.push_back("smallest improvement " + std::to_string(n.seeds) +
                  " seeds per variant detect with power 0.8 (unpaired, alpha " + format_number("%g", a.alpha) +
                  (n.alpha < a.alpha ? " / " + std::to_string(std::lround(a.alpha / n.alpha)) + " interventions" : "") +
                  ", as the seeds-for-80% column): " + format_number("%.4f", n.detectable));
  }
  if (a.signals.size() >= 2) {
    std::string line = "metric signal (the sd of the arms' means ÷ the seed sd within an arm; the paired improvement "
                       "its seeds detect with power 0.8), highest first:";
    const auto loss = std::find_if(a.signals.begin(), a.signals.end(),
                                   [](const MetricSignal& m) { return m.metric == Metric::Kind::test_loss; });
    for (const auto& m : a.signals) {
      // Every arm scored on the same test bytes: bits per byte is test_loss times one constant,
      // the same signal — said, so that its smaller "detects" is not read as a better metric.
      const bool rescaled = m.metric == Metric::Kind::test_bpb && loss != a.signals.end() && loss->signal > 0 &&
                            std::abs(m.snr - loss->snr) <= 1e-6 * std::abs(loss->snr);  // bpb printed to 9 digits
      line += " " + m.metric.name() + " " + format_number("%.3g", m.snr) + " (" +
              (rescaled ? "= test_loss × " + format_number("%.4g", m.signal / loss->signal) +
                              ", every arm scored on the same test bytes: the same signal"
                        : format_number("%.4f", m.signal) + " ÷ " + format_number("%.4f", m.noise) +
                              (std::isfinite(m.detectable) ? "; detects " + (m.detectable < 5e-5 ? std::string("< 0.0001")
                                                                                                    : format_number("%.4f", m.detectable))
                                                            : "")) +
              ")" + (&m == &a.signals.back() ? "" : ";");
    }
    out.push_back(line + " — " +
                  (a.signals.front().snr > 0 ? a.signals.front().metric.name() + " separates these arms most reliably"
                                             : "no metric separates these arms: their means are the same"));
  }
  for (const auto& m : a.signals) {
    if (m.hides_min_effect) {
      out.push_back(m.metric.name() + ": too noisy for the smallest effect of interest — its seeds detect " +
                    format_number("%.4f", m.detectable) + ", more than min_effect " + format_number("%g", a.design.min_effect));
    }
  }
  return out;
}

std::string headline(const Analysis& a) {
  return "sweep " + a.sweep + ": " + a.metric.name() + " against the baseline '" + a.baseline +
         "', ranked by improvement = mean(baseline) − mean(variant), positive = better";
}

// The longest run of backticks in `s`: a Markdown code span or fence around it needs more.
size_t backtick_run(const std::string& s) {
  size_t longest = 0, run = 0;
  for (char c : s) {
    run = c == '`' ? run + 1 : 0;
    longest = std::max(longest, run);
  }
  return longest;
}

// `s` as Markdown inline code (in a table cell too), whatever backticks or pipes it holds.
std::string md_code(const std::string& s) {
  std::string t;
  for (char c : s) {
    t += c == '|' ? std::string("\\|") : c == '\n' ? std::string(" ") : std::string(1, c);
  }
  const std::string ticks(backtick_run(t) + 1, '`');
  return t.find('`') == std::string::npos ? ticks + t + ticks : ticks + " " + t + " " + ticks;
}


nlohmann::json number_or_null(double v) { return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(nullptr); }

nlohmann::json optional_number(const std::optional<double>& v) {
  return v ? number_or_null(*v) : nlohmann::json(nullptr);
}

// A CSV cell. One a spreadsheet would run as a formula (= + - @ first) is led by a quote mark.
std::string csv_field(const std::string& text) {
  const std::string s = !text.empty() && std::string("=+-@\t\r").find(text[0]) != std::string::npos ? "'" + text : text;
  if (s.find_first_of(",\"\n\r") == std::string::npos) {
    return s;
  }
  std::string out = "\"";
  for (char c : s) {
    out += c == '"' ? std::string("\"\"") : std::string(1, c);
  }
  return out + "\"";
}


std::string csv_number(const std::optional<double>& v) {
  return v && std::isfinite(*v) ? format_number("%.17g", *v) : "";  // 17 digits: read back bit for bit
}

std::string text_table(const std::vector<std::string>& headers, const Rows& rows, const std::string& indent) {
  std::vector<size_t> width(headers.size(), 0);
  for (size_t c = 0; c < headers.size(); ++c) {
    width[c] = display_width(headers[c]);
    for (const auto& row : rows) {
      width[c] = std::max(width[c], display_width(row[c]));
    }
  }
  std::ostringstream out;
  auto line = [&](const std::vector<std::string>& row) {
    std::string l;
    for (size_t c = 0; c < row.size(); ++c) {
      const std::string pad(width[c] - display_width(row[c]), ' ');
      l += (c ? "  " : "") + (left_aligned(headers[c]) ? row[c] + pad : pad + row[c]);
    }
    out << indent << l.substr(0, l.find_last_not_of(' ') + 1) << '\n';
  };
  line(headers);
  for (const auto& row : rows) {
    line(row);
  }
  return out.str();
}

// Cells must already be Markdown (md_code for user strings).
std::string markdown_table(const std::vector<std::string>& headers, const Rows& rows) {
  std::ostringstream out;
  for (const auto& h : headers) {
    out << "| " << h << ' ';
  }
  out << "|\n";
  for (const auto& h : headers) {
    out << (left_aligned(h) ? "|:--" : "|--:");
  }
  out << "|\n";
  for (const auto& row : rows) {
    for (const auto& cell : row) {
      out << "| " << cell << ' ';
    }
    out << "|\n";
  }
  return out.str();
}

std::string html_table(const std::vector<std::string>& headers, const Rows& rows) {
  std::ostringstream out;
  out << "<div class=\"wide\"><table><thead><tr>";
  for (const auto& h : headers) {
    out << "<th" << (left_aligned(h) ? " class=\"name\"" : "") << ">" << html_escape(h) << "</th>";
  }
  out << "</tr></thead>\n<tbody>\n";
  for (const auto& row : rows) {
    out << "<tr>";
    for (size_t c = 0; c < row.size(); ++c) {
      out << "<td" << (left_aligned(headers[c]) ? " class=\"name\"" : "") << ">" << html_escape(row[c]) << "</td>";
    }
    out << "</tr>\n";
  }
  out << "</tbody></table></div>\n";
  return out.str();
}

// ---- responses: the metric along a numeric axis, and its best value ----
std::string html_escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&#39;"; break;
      default: out += c;
    }
  }
  return out;
}

}  // namespace sweep
