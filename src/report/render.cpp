#include "report/render.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "util/fs.h"
#include "util/text.h"

namespace sweep {

namespace {

std::string p_text(double p) { return !std::isfinite(p) ? "-" : p < 1e-4 ? "<0.0001" : format_number("%.4f", p); }

// One cell of the ranked table: its text, and the number a sortable table sorts it by.
struct Cell {
  std::string text;
  double key = std::nan("");
};

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
  }
  h.insert(h.end(), {"P(better)", "verdict"});
  h.push_back(a.design.sequential() ? "stopped" : "seeds for 80%");
  h.insert(h.end(), {"tokens", "tokens/s", "wall"});
  return h;
}

// Columns of text, left-aligned; the others are numbers, right-aligned.
bool left_aligned(const std::string& header) {
  return header == "variant" || header == "test" || header == "verdict" || header == "stopped" ||
         header == "combination" || header == "parts";
}

std::string verdict_text(const VariantStats& v) { return v.verdict + (v.below_min_effect ? " (< δ)" : ""); }

// A row of the ranked table, in the order of headers(a).
std::vector<Cell> cells(const Analysis& a, const VariantStats& v, int rank) {
  const std::string n = v.seeds == v.seeds_planned ? std::to_string(v.seeds)
                                                   : std::to_string(v.seeds) + "/" + std::to_string(v.seeds_planned);
  const std::string mean = v.summary.n == 0   ? "-"
                           : v.summary.n == 1 ? format_number("%.4f", v.summary.mean)
                                              : format_number("%.4f", v.summary.mean) + " ± " + format_number("%.4f", v.summary.sd);
  const std::string ci = std::isfinite(v.ci_low) ? "[" + format_number("%+.4f", v.ci_low) + ", " + format_number("%+.4f", v.ci_high) + "]"
                                                 : "-";
  const double p = v.method == "band" ? std::nan("") : v.p_holm;
  std::vector<Cell> row{
      {std::to_string(rank), static_cast<double>(rank)},
      {v.name, std::nan("")},
      {n, static_cast<double>(v.finished)},
      {mean, v.summary.mean},
      {v.is_baseline ? "0" : format_number("%+.4f", v.improvement), v.improvement},
      {ci, v.ci_low},
      {v.method.empty() ? "-" : v.method, std::nan("")},
      {format_number("%+.2f", v.correlation), v.correlation},
  };
  if (!a.design.sequential()) {
    row.push_back({p_text(p), p});
    if (a.design.min_effect > 0) {
      row.push_back({p_text(v.p_equivalence_holm), v.p_equivalence_holm});
    }
  }
  row.push_back({format_number("%.2f", v.prob_improvement), v.prob_improvement});
  row.push_back({verdict_text(v), std::nan("")});
  if (a.design.sequential()) {
    row.push_back({v.stopped.empty() ? "-" : v.stopped, std::nan("")});
  } else {
    row.push_back({v.seeds_needed < 0 ? "-" : std::to_string(v.seeds_needed), static_cast<double>(v.seeds_needed)});
  }
  row.push_back({std::isfinite(v.tokens) ? format_count(v.tokens) : "-", v.tokens});
  row.push_back({std::isfinite(v.tokens_per_s) ? format_count(v.tokens_per_s) : "-", v.tokens_per_s});
  row.push_back({std::isfinite(v.wall_seconds) ? format_duration(v.wall_seconds) : "-", v.wall_seconds});
  return row;
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
    tested += v.method == "paired" || v.method == "welch";
    band += v.method == "band";
  }
  const double delta = a.design.min_effect;
  const std::string m = std::to_string(std::max<size_t>(1, a.variants.size() - 1));
  const std::string margin = delta > 0 ? "±δ = ±" + format_number("%g", delta) + " (the smallest effect of interest, from " +
                                             a.min_effect_source + ")"
                                       : "";
  std::string s;
  if (tested > 0 && a.design.sequential()) {
    s += "Verdicts (--until-decided, up to " + std::to_string(a.design.max_seeds) + " seeds, a look every " +
         std::to_string(a.design.first) + "): t-tests paired by seed (Welch where the seeds differ); at each look, "
         "repeated confidence intervals (Jennison & Turnbull) from " +
         std::string(a.design.spending == "pocock" ? "Pocock" : "O'Brien–Fleming") +
         "-type alpha spending (Lan & DeMets) at alpha " + format_number("%g", a.alpha) + " / " + m +
         " interventions, their t boundaries simulated for the look's seeds: better/worse when the two-sided "
         "interval excludes 0, " +
         (delta > 0 ? "equivalent when both one-sided tests at that level put the effect inside " + margin
                    : std::string("equivalent never (no min_effect)")) +
         "; the first look that decides stops the intervention's seeds, else undecided. RCI: the difference's "
         "interval at its deciding (or last) look.";
  } else if (tested > 0) {
    s += "Verdicts: two-sided t-test (paired by seed where the baseline has the variant's seeds, Welch otherwise), "
         "p adjusted by Holm across " + std::to_string(tested) + " intervention" + (tested == 1 ? "" : "s") +
         ", better/worse when p < " + format_number("%g", a.alpha) +
         (delta > 0 ? "; equivalent when the two one-sided tests (TOST) within " + margin +
                          " give a Holm-adjusted p < " + format_number("%g", a.alpha) + " — the " + format_number("%g", 100 * (1 - 2 * a.alpha)) +
                          "% interval inside ±δ; (< δ): better or worse, yet smaller than δ; else undecided."
                    : "; else undecided — not shown to differ, which is not shown equal: declare a smallest effect "
                      "of interest (min_effect) to test equivalence.") +
         " Seeds for 80%: the seeds per variant a t-test at alpha / " + m +
         " needs to detect the observed improvement with power 0.8.";
  }
  if (tested > 0 || band > 0) {
    s += std::string(s.empty() ? "" : " ") + "n: seeds (identical-seed repeats count once). corr: the correlation of the variant's per-seed values "
         "with the baseline's — high when the seeds' shared noise cancels in the paired test (3 or more seeds).";
  }
  if (band > 0) {
    s += std::string(s.empty() ? "" : " ") +
         "One seed: no t-test; better/worse when the improvement lies outside the noise band ±2·√2·σ" +
         (std::isfinite(a.noise.sigma) ? " = ±" + format_number("%.4f", 2 * std::sqrt(2.0) * a.noise.sigma) : "") +
         (delta > 0 ? ", equivalent when improvement ± band lies inside ±δ" : "") +
         ", else undecided (the column 95% CI shows improvement ± band).";
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
    out.push_back("noise band of an improvement with " + std::to_string(n.seeds) + " seed" +
                  (n.seeds == 1 ? "" : "s") + " per variant: ±" + format_number("%.4f", n.band) + " (2·√2·σ/√seeds)");
  }
  if (std::isfinite(n.test_se)) {
    out.push_back("test-set sampling: one run's " + a.metric + " has a standard error of ±" + format_number("%.4f", n.test_se) +
                  " from its test split's " + std::to_string(n.test_blocks) +
                  " blocks (the median over the baseline's runs) — more seeds do not shrink it: every seed is "
                  "scored on the same test tokens");
  }
  if (std::isfinite(n.detectable)) {
    out.push_back("smallest improvement " + std::to_string(n.seeds) +
                  " seeds per variant detect with power 0.8 (unpaired, alpha " + format_number("%g", a.alpha) +
                  "): " + format_number("%.4f", n.detectable));
  }
  return out;
}

std::string headline(const Analysis& a) {
  return "sweep " + a.sweep + ": " + a.metric + " against the baseline '" + a.baseline +
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

// gnuplot's ids are the same in every plot: prefix them so that three inline SVGs can share one page.
std::string inline_svg(const std::string& svg, const std::string& prefix) {
  std::string s = svg.substr(std::min(svg.find("<svg"), svg.size()));
  for (const std::string& attr : {std::string("id=\""), std::string("url(#"), std::string("href=\"#")}) {
    std::string out;
    size_t pos = 0, hit;
    while ((hit = s.find(attr, pos)) != std::string::npos) {
      out += s.substr(pos, hit - pos) + attr + prefix;
      pos = hit + attr.size();
    }
    s = out + s.substr(pos);
  }
  return s;
}

const char* k_style = R"css(
body{font:14px/1.45 system-ui,sans-serif;margin:24px auto;max-width:1400px;color:#222;padding:0 16px}
.wide{overflow-x:auto}
table{border-collapse:collapse;margin:12px 0;font-variant-numeric:tabular-nums}
th,td{padding:4px 8px;border-bottom:1px solid #ddd;text-align:right;white-space:nowrap}
th{cursor:pointer;background:#f4f4f4;user-select:none}th:hover{background:#e8e8e8}
td.name,th.name{text-align:left}
.swatch{display:inline-block;width:10px;height:10px;border-radius:2px;margin-right:6px}
.better{color:#1a7f37;font-weight:600}.worse{color:#c62828;font-weight:600}.equivalent{color:#1f4e9c;font-weight:600}
pre{background:#f6f8fa;padding:12px;overflow:auto}svg{max-width:100%;height:auto}
th[aria-sort=ascending]::after{content:" ▲"}th[aria-sort=descending]::after{content:" ▼"}
)css";

// Sorts by a header click: numbers by data-key, text by content; a second click reverses.
const char* k_script = R"js(
document.querySelectorAll('table.sortable').forEach(function (table) {
  var headers = table.querySelectorAll('th');
  headers.forEach(function (th, col) {
    th.addEventListener('click', function () {
      var dir = th.getAttribute('aria-sort') === 'ascending' ? -1 : 1;
      headers.forEach(function (h) { h.removeAttribute('aria-sort'); });
      th.setAttribute('aria-sort', dir === 1 ? 'ascending' : 'descending');
      var body = table.tBodies[0];
      var rows = Array.prototype.slice.call(body.rows);
      rows.sort(function (a, b) {
        var x = a.cells[col], y = b.cells[col];
        var kx = parseFloat(x.getAttribute('data-key')), ky = parseFloat(y.getAttribute('data-key'));
        if (!isNaN(kx) || !isNaN(ky)) {
          if (isNaN(kx)) return 1;
          if (isNaN(ky)) return -1;
          return dir * (kx - ky);
        }
        return dir * x.textContent.localeCompare(y.textContent);
      });
      rows.forEach(function (r) { body.appendChild(r); });
    });
  });
});
)js";

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
  return v && std::isfinite(*v) ? format_number("%.10g", *v) : "";
}

using Rows = std::vector<std::vector<std::string>>;

std::string text_table(const std::vector<std::string>& headers, const Rows& rows, const std::string& indent = "") {
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

std::vector<std::string> response_headers(const Response& r) {
  return {r.label, "variant", "n", "per seed", "mean ± sd", "95% CI"};
}

Rows response_rows(const Response& r) {
  Rows rows;
  for (const auto& p : r.points) {
    std::string seeds;
    for (const auto& [key, value] : p.values) {
      seeds += (seeds.empty() ? "" : " ") + format_number("%.4f", value);
    }
    rows.push_back({format_number("%g", p.x), p.variant, std::to_string(p.summary.n), seeds.empty() ? "-" : seeds,
                    p.summary.n < 2 ? format_number("%.4f", p.summary.mean) : format_number("%.4f", p.summary.mean) + " ± " + format_number("%.4f", p.summary.sd),
                    std::isfinite(p.summary.ci_low) ? "[" + format_number("%.4f", p.summary.ci_low) + ", " + format_number("%.4f", p.summary.ci_high) + "]" : "-"});
  }
  return rows;
}

std::string response_title(const Analysis& a, const Response& r) {
  return a.metric + " against " + r.label + (r.label == r.keys.front() ? "" : " (" + join(r.keys, ", ") + ")") +
         ", series " + r.series;
}

std::string fit_sentence(const Response& r) {
  const OptimumFit& f = r.fit;
  if (!f.fitted) {
    return "no optimum: " + f.note;
  }
  const std::string against = f.log_x ? "log(" + r.label + ")" : r.label;
  std::string s = "best " + r.label + ": ";
  if (f.inside) {
    s += format_number("%.3g", f.best) + (std::isfinite(f.ci_low) ? ", 95% CI [" + format_number("%.3g", f.ci_low) + ", " + format_number("%.3g", f.ci_high) + "]" : "");
  } else {
    s += (f.best <= r.points.front().x ? "at or below " : "at or above ") + format_number("%.3g", f.best) +
         ", the end of the tried range";
  }
  s += " — a quadratic in " + against + " fitted by least squares to every seed's value at " +
       std::to_string(f.points) + " values";
  if (std::isfinite(f.ci_low)) {
    s += "; " + std::to_string(f.resamples) + " bootstrap resamples of the " + std::to_string(f.seeds) + " seeds, " +
         format_number("%.0f", 100 * f.share_inside) + "% of them with their minimum inside the range";
  }
  return s + (f.note.empty() ? "" : "; " + f.note);
}

// ---- combinations against the sum of their parts ----

const std::vector<std::string> k_additivity_headers{"combination", "parts",  "combined", "sum of parts",
                                                    "best part",   "combined − sum", "95% CI", "test", "verdict"};

Rows additivity_rows(const Analysis& a) {
  Rows rows;
  for (const auto& x : a.additivity) {
    rows.push_back({x.variant, join(x.parts, " + "), format_number("%+.4f", x.combined), format_number("%+.4f", x.sum_of_parts),
                    format_number("%+.4f", x.best_part), format_number("%+.4f", x.difference),
                    std::isfinite(x.ci_low) ? "[" + format_number("%+.4f", x.ci_low) + ", " + format_number("%+.4f", x.ci_high) + "]" : "-",
                    x.method, x.verdict});
  }
  return rows;
}

// ---- seed noise against test-set noise, per intervention ----

const std::vector<std::string> k_noise_headers{"variant", "SE from seeds", "SE from the test set", "narrowed most by"};

Rows noise_rows(const Analysis& a) {
  Rows rows;
  for (const auto& v : a.variants) {
    if (std::isfinite(v.seed_se) && std::isfinite(v.test_se)) {
      rows.push_back({v.name, format_number("%.5f", v.seed_se), format_number("%.5f", v.test_se),
                      v.seed_se >= v.test_se ? "more seeds" : "a larger test set"});
    }
  }
  return rows;
}

const char* k_noise_sentence =
    "The improvement's standard error from seed noise (the t-test's, shrinking as 1/√seeds) beside the one from "
    "the finite test set (the paired per-block differences of the same test tokens, averaged over seeds; it does "
    "not shrink with seeds and is not in the intervals above).";

// ---- where the effects happen: tokens to the baseline's final validation loss ----

const std::vector<std::string> k_target_headers{"variant", "seeds reaching it", "tokens saved", "95% CI"};

std::string percent(double v) { return format_number("%+.1f%%", 100 * v); }

Rows target_rows(const Analysis& a) {
  Rows rows;
  for (const auto& t : a.targets) {
    const Summary& s = t.saving;
    rows.push_back({t.variant, std::to_string(t.reached) + "/" + std::to_string(t.seeds),
                    t.reached > 0 ? percent(s.mean) : "-",
                    std::isfinite(s.ci_low) ? "[" + percent(s.ci_low) + ", " + percent(s.ci_high) + "]" : "-"});
  }
  return rows;
}

const char* k_target_sentence =
    "Tokens saved: 1 − the tokens a variant needs to reach the baseline's final validation loss / the tokens the "
    "baseline needs (the same seed, both curves interpolated linearly to their first crossing); +18% = reaches the "
    "same loss with 18% fewer tokens, − = needs more. Mean and 95% t interval over seeds, the interval only when "
    "every seed reaches it. The paired Δ-loss curves (baseline − variant at the same tokens and seed, mean and 95% "
    "CI band) are in delta.svg.";

const char* k_additivity_sentence =
    "Improvements over the baseline. adds up: the CI of combined − sum contains 0; overlaps: less than the sum, "
    "at least the best part; interferes: less than the best part; better than the sum: the CI lies above 0 (the combination beats what its parts predict, whatever their sign).";

}  // namespace

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

// One line per reference model, beside the baseline's mean: "GPT-2 124M: test_loss 3.5000 (...)".
std::vector<std::string> reference_lines(const Analysis& a) {
  std::vector<std::string> out;
  const auto base = std::find_if(a.variants.begin(), a.variants.end(), [](const VariantStats& v) { return v.is_baseline; });
  for (const auto& r : a.references) {
    const bool bpb = a.metric == "test_bpb";
    std::string line = r.name + ": ";
    if (bpb && !r.bpb) {
      line += "test_bpb unknown (the dataset records no bytes), test_loss " + format_number("%.4f", r.loss);
    } else {
      line += (bpb ? "test_bpb " + format_number("%.4f", *r.bpb) : "test_loss " + format_number("%.4f", r.loss)) +
              (!bpb && r.bpb ? format_number(" (%.4f bits/byte)", *r.bpb) : "");
    }
    if (base != a.variants.end() && base->summary.n > 0 && a.metric != "val_loss" && !(bpb && !r.bpb)) {
      line += " against the baseline's " + format_number("%.4f", base->summary.mean);
    }
    line += "; " + format_count(static_cast<double>(r.parameters)) + " parameters, context " +
            std::to_string(r.block_size) + ", scored on the same " + format_count(static_cast<double>(r.tokens)) +
            " test tokens (" + r.model + ")";
    out.push_back(line);
  }
  return out;
}

std::string render_text(const Analysis& a) {
  Rows rows;
  for (size_t i = 0; i < a.variants.size(); ++i) {
    std::vector<std::string> row;
    for (const auto& c : cells(a, a.variants[i], static_cast<int>(i + 1))) {
      row.push_back(c.text);
    }
    rows.push_back(row);
  }
  std::ostringstream out;
  const std::string method = method_sentence(a);
  out << headline(a) << "\n\n" << text_table(headers(a), rows);
  for (const auto& l : reference_lines(a)) {
    out << "reference " << l << '\n';
  }
  out << (method.empty() ? "" : "\n" + method + "\n") << "\nnoise:\n";
  for (const auto& l : noise_lines(a)) {
    out << "  " << l << '\n';
  }
  if (const Rows rows = noise_rows(a); !rows.empty()) {
    out << text_table(k_noise_headers, rows, "  ") << "  " << k_noise_sentence << '\n';
  }
  for (const auto& r : a.responses) {
    out << "\nresponse: " << response_title(a, r) << "\n"
        << text_table(response_headers(r), response_rows(r), "  ") << "  " << fit_sentence(r) << '\n';
  }
  if (!a.additivity.empty()) {
    out << "\ncombinations against the sum of their parts:\n"
        << text_table(k_additivity_headers, additivity_rows(a), "  ") << "  " << k_additivity_sentence << '\n';
  }
  if (!a.targets.empty()) {
    out << "\nwhere the effects happen — tokens to the baseline's final validation loss:\n"
        << text_table(k_target_headers, target_rows(a), "  ") << "  " << k_target_sentence << '\n';
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

std::string render_markdown(const ReportInput& in, const Analysis& a, const std::vector<Plot>& plots) {
  std::ostringstream out;
  out << "# Sweep " << md_code(a.sweep) << ": " << a.metric << " vs the baseline\n\n" << md_code(headline(a)) << "\n\n";
  Rows rows;
  for (size_t i = 0; i < a.variants.size(); ++i) {
    std::vector<std::string> row;
    const VariantStats& v = a.variants[i];
    for (const auto& c : cells(a, v, static_cast<int>(i + 1))) {
      const bool decided = c.text == verdict_text(v) &&
                           (v.verdict == "better" || v.verdict == "worse" || v.verdict == "equivalent");
      row.push_back(row.size() == 1 ? md_code(c.text) :  decided ? "**" + c.text + "**" : c.text);
    }
    rows.push_back(row);
  }
  const std::string method = method_sentence(a);
  out << markdown_table(headers(a), rows);
  for (const auto& l : reference_lines(a)) {
    out << "\nReference " << md_code(l) << '\n';
  }
  out << (method.empty() ? "" : "\n" + method + "\n") << "\n## Noise\n\n";
  for (const auto& l : noise_lines(a)) {
    out << "- " << l << '\n';
  }
  if (Rows rows = noise_rows(a); !rows.empty()) {
    for (auto& row : rows) {
      row[0] = md_code(row[0]);
    }
    out << '\n' << markdown_table(k_noise_headers, rows) << '\n' << k_noise_sentence << '\n';
  }
  for (const auto& r : a.responses) {
    Rows md = response_rows(r);
    for (auto& row : md) {
      row[1] = md_code(row[1]);
    }
    out << "\n## Response: " << md_code(response_title(a, r)) << "\n\n"
        << markdown_table(response_headers(r), md) << '\n' << md_code(fit_sentence(r)) << '\n';
  }
  if (!a.additivity.empty()) {
    Rows md = additivity_rows(a);
    for (auto& row : md) {
      row[0] = md_code(row[0]);
      row[1] = md_code(row[1]);
    }
    out << "\n## Combinations against the sum of their parts\n\n" << markdown_table(k_additivity_headers, md) << '\n'
        << k_additivity_sentence << '\n';
  }
  if (!a.targets.empty()) {
    Rows md = target_rows(a);
    for (auto& row : md) {
      row[0] = md_code(row[0]);
    }
    out << "\n## Where the effects happen\n\n" << markdown_table(k_target_headers, md) << '\n' << k_target_sentence
        << '\n';
  }
  out << "\n" << md_code(a.code) << "\n";
  if (!a.notes.empty()) {
    out << "\n## Notes\n\n";
    for (const auto& n : a.notes) {
      out << "- " << md_code(n) << '\n';
    }
  }
  if (!plots.empty()) {
    out << "\n## Plots\n\n";
    for (const auto& p : plots) {
      out << "![" << p.title << "](" << p.file << ")\n\n";
    }
  }
  const std::string fence(std::max<size_t>(4, backtick_run(in.spec) + 1), '`');  // nothing in it can close it
  out << "\n## The sweep file\n\n" << md_code(in.file) << " as it was run:\n\n" << fence << "yaml\n" << in.spec
      << (ends_with(in.spec, "\n") ? "" : "\n") << fence << "\n";
  return out.str();
}

std::string render_html(const ReportInput& in, const Analysis& a, const std::vector<Plot>& plots) {
  std::ostringstream out;
  out << "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n"
      << "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'; "
         "script-src 'unsafe-inline'; img-src data:\">\n"
      << "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
      << "<title>sweep report: " << html_escape(a.sweep) << "</title>\n<style>" << k_style << "</style></head>\n<body>\n"
      << "<h1>Sweep " << html_escape(a.sweep) << "</h1>\n<p>" << html_escape(headline(a)) << "</p>\n"
      << "<div class=\"wide\"><table class=\"sortable\" id=\"ranking\"><thead><tr>";
  const std::vector<std::string> columns = headers(a);
  for (size_t c = 0; c < columns.size(); ++c) {
    out << "<th" << (c == 1 ? " class=\"name\"" : "") << ">" << html_escape(columns[c]) << "</th>";
  }
  out << "</tr></thead>\n<tbody>\n";
  for (size_t i = 0; i < a.variants.size(); ++i) {
    const VariantStats& v = a.variants[i];
    out << "<tr>";
    const auto row = cells(a, v, static_cast<int>(i + 1));
    for (size_t c = 0; c < row.size(); ++c) {
      out << "<td";
      if (std::isfinite(row[c].key)) {
        out << " data-key=\"" << format_number("%.10g", row[c].key) << "\"";
      }
      if (c == 1) {
        out << " class=\"name\"><span class=\"swatch\" style=\"background:" << variant_colour(v) << "\"></span>";
      } else if (columns[c] == "verdict" && (v.verdict == "better" || v.verdict == "worse" || v.verdict == "equivalent")) {
        out << " class=\"" << v.verdict << "\">";
      } else {
        out << ">";
      }
      out << html_escape(row[c].text) << "</td>";
    }
    out << "</tr>\n";
  }
  const std::string method = method_sentence(a);
  out << "</tbody></table></div>\n";
  for (const auto& l : reference_lines(a)) {
    out << "<p class=\"reference\">Reference " << html_escape(l) << "</p>\n";
  }
  out << (method.empty() ? "" : "<p>" + html_escape(method) + "</p>\n")
      << "<h2>Noise</h2>\n<ul>\n";
  for (const auto& l : noise_lines(a)) {
    out << "<li>" << html_escape(l) << "</li>\n";
  }
  out << "</ul>\n";
  if (const Rows rows = noise_rows(a); !rows.empty()) {
    out << html_table(k_noise_headers, rows) << "<p>" << html_escape(k_noise_sentence) << "</p>\n";
  }
  for (const auto& r : a.responses) {
    out << "<h2>Response: " << html_escape(response_title(a, r)) << "</h2>\n"
        << html_table(response_headers(r), response_rows(r)) << "<p>" << html_escape(fit_sentence(r)) << "</p>\n";
  }
  if (!a.additivity.empty()) {
    out << "<h2>Combinations against the sum of their parts</h2>\n" << html_table(k_additivity_headers, additivity_rows(a))
        << "<p>" << html_escape(k_additivity_sentence) << "</p>\n";
  }
  if (!a.targets.empty()) {
    out << "<h2>Where the effects happen</h2>\n" << html_table(k_target_headers, target_rows(a)) << "<p>"
        << html_escape(k_target_sentence) << "</p>\n";
  }
  out << "<p>" << html_escape(a.code) << "</p>\n";
  if (!a.notes.empty()) {
    out << "<h2>Notes</h2>\n<ul>\n";
    for (const auto& n : a.notes) {
      out << "<li>" << html_escape(n) << "</li>\n";
    }
    out << "</ul>\n";
  }
  for (size_t i = 0; i < plots.size(); ++i) {
    out << "<h2>" << html_escape(plots[i].title) << "</h2>\n<figure>"
        << inline_svg(plots[i].svg, "p" + std::to_string(i) + "_") << "</figure>\n";
  }
  out << "<h2>The sweep file</h2>\n<p><code>" << html_escape(in.file) << "</code> as it was run:</p>\n<pre>"
      << html_escape(in.spec) << "</pre>\n<script>" << k_script << "</script>\n</body></html>\n";
  return out.str();
}

std::string render_csv(const ReportInput& in, const Analysis& a) {
  std::ostringstream out;
  out << "sweep,variant,run_id,init_seed,data_seed,repeat,status," << in.metric
      << "_value,test_loss,test_bpb,val_loss,tokens,tokens_per_s,wall_seconds,starts,code\n";
  for (const auto& v : in.variants) {
    for (const auto& r : v.runs) {
      out << csv_field(a.sweep) << ',' << csv_field(v.name) << ',' << r.run_id << ',' << r.init_seed << ','
          << r.data_seed << ',' << r.repeat << ',' << csv_field(to_string(r.status)) << ',' << csv_number(r.value) << ','
          << csv_number(r.test_loss) << ',' << csv_number(r.test_bpb) << ',' << csv_number(r.val_loss) << ','
          << r.tokens << ',' << csv_number(r.tokens_per_s) << ',' << csv_number(r.wall_seconds) << ',' << r.starts
          << ',' << csv_field(join(r.codes, "; ")) << '\n';
    }
  }
  return out.str();
}

std::string render_json(const ReportInput& in, const Analysis& a) {
  nlohmann::ordered_json j;
  j["sweep"] = a.sweep;
  j["file"] = in.file;
  j["metric"] = a.metric;
  j["baseline"] = a.baseline;
  j["alpha"] = a.alpha;
  j["references"] = nlohmann::ordered_json::array();
  for (const auto& r : a.references) {
    j["references"].push_back({{"name", r.name}, {"model", r.model}, {"test_loss", r.loss},
                               {"test_bpb", optional_number(r.bpb)}, {"tokens", r.tokens},
                               {"parameters", r.parameters}, {"block_size", r.block_size}});
  }
  j["design"] = {{"min_effect", a.design.min_effect > 0 ? nlohmann::ordered_json(a.design.min_effect) : nlohmann::ordered_json(nullptr)},
                 {"min_effect_source", a.min_effect_source},
                 {"suggested_min_effect", number_or_null(a.suggested_min_effect)},
                 {"sequential", a.design.sequential()},
                 {"first_seeds", a.design.first},
                 {"max_seeds", a.design.max_seeds}};
  const NoiseSummary& n = a.noise;
  j["noise"] = {{"source", n.source},
                {"runs", n.n},
                {"sigma", number_or_null(n.sigma)},
                {"sigma_init", number_or_null(n.components.sigma_init)},
                {"sigma_data", number_or_null(n.components.sigma_data)},
                {"sigma_interaction", number_or_null(n.components.sigma_resid)},
                {"sigma_repeat", number_or_null(n.components.sigma_repeat)},
                {"seeds_per_variant", n.seeds},
                {"band", number_or_null(n.band)},
                {"detectable_effect", number_or_null(n.detectable)},
                {"test_se", number_or_null(n.test_se)},
                {"test_blocks", n.test_blocks}};
  std::map<std::string, const VariantRuns*> runs;
  for (const auto& v : in.variants) {
    runs[v.name] = &v;
  }
  nlohmann::ordered_json variants = nlohmann::ordered_json::array();
  for (size_t i = 0; i < a.variants.size(); ++i) {
    const VariantStats& v = a.variants[i];
    nlohmann::ordered_json values = nlohmann::ordered_json::array();
    for (const auto& r : runs[v.name]->runs) {
      values.push_back({{"run_id", r.run_id},
                        {"init_seed", r.init_seed},
                        {"data_seed", r.data_seed},
                        {"repeat", r.repeat},
                        {"status", to_string(r.status)},
                        {"value", optional_number(r.value)},
                        {"starts", r.starts},
                        {"code", r.codes}});
    }
    variants.push_back({{"rank", i + 1},
                        {"name", v.name},
                        {"baseline", v.is_baseline},
                        {"runs", v.runs},
                        {"finished", v.finished},
                        {"seeds", v.seeds},
                        {"diverged", v.diverged},
                        {"mean", number_or_null(v.summary.mean)},
                        {"sd", number_or_null(v.summary.sd)},
                        {"improvement", number_or_null(v.improvement)},
                        {"ci_low", number_or_null(v.ci_low)},
                        {"ci_high", number_or_null(v.ci_high)},
                        {"method", v.method},
                        {"p", number_or_null(v.p)},
                        {"p_holm", number_or_null(v.p_holm)},
                        {"correlation", number_or_null(v.correlation)},
                        {"probability_of_improvement", number_or_null(v.prob_improvement)},
                        {"seeds_needed", v.seeds_needed < 0 ? nlohmann::ordered_json(nullptr)
                                                            : nlohmann::ordered_json(v.seeds_needed)},
                        {"seed_se", number_or_null(v.seed_se)},
                        {"test_se", number_or_null(v.test_se)},
                        {"p_equivalence", number_or_null(v.p_equivalence)},
                        {"p_equivalence_holm", number_or_null(v.p_equivalence_holm)},
                        {"verdict", v.verdict},
                        {"below_min_effect", v.below_min_effect},
                        {"looks", v.looks},
                        {"stopped", v.stopped},
                        {"tokens", number_or_null(v.tokens)},
                        {"tokens_per_s", number_or_null(v.tokens_per_s)},
                        {"wall_seconds", number_or_null(v.wall_seconds)},
                        {"starts", v.starts},
                        {"runs_detail", values}});
  }
  j["variants"] = variants;
  nlohmann::ordered_json responses = nlohmann::ordered_json::array();
  for (const auto& r : a.responses) {
    nlohmann::ordered_json points = nlohmann::ordered_json::array();
    for (const auto& p : r.points) {
      nlohmann::ordered_json values = nlohmann::ordered_json::array();
      for (const auto& [seed, value] : p.values) {
        values.push_back({{"init_seed", seed.first}, {"data_seed", seed.second}, {"value", value}});
      }
      points.push_back({{"x", p.x},
                        {"variant", p.variant},
                        {"mean", number_or_null(p.summary.mean)},
                        {"ci_low", number_or_null(p.summary.ci_low)},
                        {"ci_high", number_or_null(p.summary.ci_high)},
                        {"values", values}});
    }
    const OptimumFit& f = r.fit;
    responses.push_back({{"axis", r.label},
                         {"keys", r.keys},
                         {"series", r.series},
                         {"points", points},
                         {"fit",
                          {{"fitted", f.fitted},
                           {"log_x", f.log_x},
                           {"quadratic", {number_or_null(f.curve.a), number_or_null(f.curve.b), number_or_null(f.curve.c)}},
                           {"best", number_or_null(f.best)},
                           {"inside", f.inside},
                           {"ci_low", number_or_null(f.ci_low)},
                           {"ci_high", number_or_null(f.ci_high)},
                           {"share_inside", number_or_null(f.share_inside)},
                           {"seeds", f.seeds},
                           {"resamples", f.resamples},
                           {"note", f.note}}}});
  }
  j["responses"] = responses;
  nlohmann::ordered_json combinations = nlohmann::ordered_json::array();
  for (const auto& x : a.additivity) {
    combinations.push_back({{"variant", x.variant},
                            {"parts", x.parts},
                            {"combined", number_or_null(x.combined)},
                            {"sum_of_parts", number_or_null(x.sum_of_parts)},
                            {"best_part", number_or_null(x.best_part)},
                            {"difference", number_or_null(x.difference)},
                            {"ci_low", number_or_null(x.ci_low)},
                            {"ci_high", number_or_null(x.ci_high)},
                            {"method", x.method},
                            {"verdict", x.verdict}});
  }
  j["combinations"] = combinations;
  nlohmann::ordered_json targets = nlohmann::ordered_json::array();
  for (const auto& t : a.targets) {
    targets.push_back({{"variant", t.variant},
                       {"seeds", t.seeds},
                       {"reached", t.reached},
                       {"saving", number_or_null(t.saving.mean)},
                       {"ci_low", number_or_null(t.saving.ci_low)},
                       {"ci_high", number_or_null(t.saving.ci_high)}});
  }
  j["tokens_to_target"] = targets;
  nlohmann::ordered_json deltas = nlohmann::ordered_json::array();
  for (const auto& d : a.deltas) {
    nlohmann::ordered_json points = nlohmann::ordered_json::array();
    for (const auto& [tokens, s] : d.points) {
      points.push_back({{"tokens", tokens},
                        {"seeds", s.n},
                        {"improvement", number_or_null(s.mean)},
                        {"ci_low", number_or_null(s.ci_low)},
                        {"ci_high", number_or_null(s.ci_high)}});
    }
    deltas.push_back({{"variant", d.variant}, {"points", points}});
  }
  j["delta_curves"] = deltas;
  j["code"] = a.code;
  j["notes"] = a.notes;
  return j.dump(2) + "\n";
}

std::vector<std::string> write_report(const ReportInput& in, const Analysis& a, const std::vector<Plot>& plots,
                                      const fs::path& dir) {
  fs::create_directories(dir);
  std::vector<std::pair<std::string, std::string>> files{
      {"report.md", render_markdown(in, a, plots)},
      {"index.html", render_html(in, a, plots)},
      {"summary.csv", render_csv(in, a)},
      {"report.json", render_json(in, a)},
  };
  for (const auto& p : plots) {
    files.emplace_back(p.file, p.svg);
  }
  std::vector<std::string> names;
  for (const auto& [name, content] : files) {
    write_file_atomic(dir / name, content);
    names.push_back(name);
  }
  for (const auto& name : k_plot_files) {  // a plot not drawn this time must not survive from an older report
    if (std::find(names.begin(), names.end(), name) == names.end()) {
      fs::remove(dir / name);
    }
  }
  return names;
}

}  // namespace sweep
