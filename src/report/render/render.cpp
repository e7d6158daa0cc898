#include "report/render/render.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "report/render/ladder_render.h"
#include "report/render/report_json.h"
#include "report/response.h"
#include "report/render/tables.h"
#include "report/render/tuned_render.h"
#include "util/fs.h"
#include "util/text.h"

namespace sweep {

namespace {

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
  return a.metric.name() + " against " + r.label + (r.label == r.keys.front() ? "" : " (" + join(r.keys, ", ") + ")") +
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
  s += " — a quadratic in " + against + " fitted by least squares to every seed's value at the 3 of " +
       std::to_string(f.points) + " values around the lowest mean (" + format_number("%g", f.fit_low) + " to " +
       format_number("%g", f.fit_high) + ")";
  if (std::isfinite(f.ci_low)) {
    s += "; the CI: the t interval of each seed's own fit's minimum, widened by " +
         format_number("%g", k_best_shape_allowance) + " of a step each side for a curve up to 4× steeper on one side "
         "of its best; " + std::to_string(f.resamples) + " bootstrap resamples of the " + std::to_string(f.seeds) +
         " seeds, " + format_number("%.0f", 100 * f.share_inside) + "% of them with their minimum inside the range";
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
                    to_string(x.method), to_string(x.verdict)});
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

const std::vector<std::string> k_target_headers{"variant", "seeds reaching it", "tokens saved", "95% CI",
                                                "FLOPs saved", "95% CI", "time saved", "95% CI"};

std::string percent(double v) { return format_number("%+.1f%%", 100 * v); }
std::string percent_ci(const Summary& s) {
  return std::isfinite(s.ci_low) ? "[" + percent(s.ci_low) + ", " + percent(s.ci_high) + "]" : "-";
}

Rows target_rows(const Analysis& a) {
  Rows rows;
  for (const auto& t : a.targets) {
    rows.push_back({t.variant, std::to_string(t.reached) + "/" + std::to_string(t.seeds),
                    t.reached > 0 ? percent(t.saving.mean) : "-", percent_ci(t.saving),
                    t.flops_reached > 0 ? percent(t.flops_saving.mean) : "-", percent_ci(t.flops_saving),
                    t.time_reached > 0 ? percent(t.time_saving.mean) : "-", percent_ci(t.time_saving)});
  }
  return rows;
}

// ---- at equal compute: the improvement at equal tokens, training FLOPs and training time ----

const std::vector<std::string> k_matched_headers{"variant", "FLOPs/token", "time/token", "at equal tokens", "95% CI",
                                                 "at equal FLOPs", "95% CI", "at equal time", "95% CI"};

Rows matched_rows(const Analysis& a) {
  auto value = [](const Summary& s) { return s.n > 0 ? format_number("%+.4f", s.mean) : std::string("-"); };
  auto ci = [](const Summary& s) {
    return std::isfinite(s.ci_low) ? "[" + format_number("%+.4f", s.ci_low) + ", " + format_number("%+.4f", s.ci_high) + "]"
                                   : std::string("-");
  };
  Rows rows;
  for (const auto& m : a.matched) {
    rows.push_back({m.variant, factor_text(m.flops_ratio), factor_text(m.time_ratio), value(m.at_tokens), ci(m.at_tokens),
                    value(m.at_flops), ci(m.at_flops), value(m.at_time), ci(m.at_time)});
  }
  return rows;
}

const char* k_matched_sentence =
    "The final validation loss's improvement (baseline − variant, paired by seed, mean and 95% t interval over "
    "seeds) at equal budgets: each pair compared at the smaller of the two runs' totals, the other's curve "
    "interpolated linearly there. FLOPs: tokens × the model's training FLOPs per token (6 × the matmul "
    "parameters a token goes through — active experts only — plus attention), from the config (a trainer of your "
    "own's: 6 × the params its start events report); an intervention "
    "that costs more per token is judged where both spent the same. Time: each training step's tokens over its "
    "measured speed, evaluations left out — machine-dependent and noisy (runs that share the cores slow each "
    "other), so read it for its direction on this machine, not as a property of the method. FLOPs/token and "
    "time/token: the variant's ÷ the baseline's.";

const char* k_target_sentence =
    "Tokens saved: 1 − the tokens a variant needs to reach the baseline's final validation loss / the tokens the "
    "baseline needs (the same seed, both curves interpolated linearly to their first crossing); +18% = reaches the "
    "same loss with 18% fewer tokens, − = needs more. Mean and 95% t interval over seeds, the interval only when "
    "every seed reaches it. FLOPs saved and time saved: the same with training FLOPs and measured training time "
    "in place of tokens (see at equal compute). The paired Δ-loss curves (baseline − variant at the same tokens "
    "and seed, mean and 95% CI band) are in delta.svg.";

const char* k_additivity_sentence =
    "Improvements over the baseline. adds up: the CI of combined − sum contains 0; overlaps: less than the sum, "
    "at least the best part; interferes: less than the best part; better than the sum: the CI lies above 0 (the combination beats what its parts predict, whatever their sign).";

}  // namespace

// One line per reference model, beside the baseline's mean: "GPT-2 124M: test_loss 3.5000 (...)".
std::vector<std::string> reference_lines(const Analysis& a) {
  std::vector<std::string> out;
  const auto base = std::find_if(a.variants.begin(), a.variants.end(), [](const VariantStats& v) { return v.is_baseline; });
  for (const auto& r : a.references) {
    const bool bpb = a.metric == Metric::Kind::test_bpb;
    std::string line = r.name + ": ";
    if (bpb && !r.bpb) {
      line += "test_bpb unknown (the dataset records no bytes), test_loss " + format_number("%.4f", r.loss);
    } else {
      line += (bpb ? "test_bpb " + format_number("%.4f", *r.bpb) : "test_loss " + format_number("%.4f", r.loss)) +
              (!bpb && r.bpb ? format_number(" (%.4f bits/byte)", *r.bpb) : "");
    }
    if (base != a.variants.end() && base->summary.n > 0 && a.metric != Metric::Kind::val_loss && !(bpb && !r.bpb)) {
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
  if (a.ladder) {
    return ladder_text(a);
  }
  std::ostringstream out;
  const std::string method = method_sentence(a);
  out << headline(a) << "\n\n" << text_table(headers(a), ranked_rows(a));
  for (const auto& l : reference_lines(a)) {
    out << "reference " << l << '\n';
  }
  out << (method.empty() ? "" : "\n" + method + "\n") << (a.tuned ? tuned_text(a) : "") << "\nnoise:\n";
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
    out << "\nwhere the effects happen — tokens, FLOPs and time to the baseline's final validation loss:\n"
        << text_table(k_target_headers, target_rows(a), "  ") << "  " << k_target_sentence << '\n';
  }
  if (!a.matched.empty()) {
    out << "\nat equal compute:\n" << text_table(k_matched_headers, matched_rows(a), "  ") << "  " << k_matched_sentence
        << '\n';
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

namespace {

// report.md's body for one study: the ranked table, the noise, responses, combinations, targets.
std::string study_markdown(const Analysis& a) {
  std::ostringstream out;
  out << md_code(headline(a)) << "\n\n";
  Rows rows;
  for (size_t i = 0; i < a.variants.size(); ++i) {
    std::vector<std::string> row;
    const VariantStats& v = a.variants[i];
    for (const auto& c : cells(a, v, static_cast<int>(i + 1))) {
      const bool decided = c.text == verdict_text(v, a.design.better_by) && sweep::decided(v.verdict);
      row.push_back(row.size() == 1 ? md_code(c.text) :  decided ? "**" + c.text + "**" : c.text);
    }
    rows.push_back(row);
  }
  const std::string method = method_sentence(a);
  out << markdown_table(headers(a), rows);
  for (const auto& l : reference_lines(a)) {
    out << "\nReference " << md_code(l) << '\n';
  }
  out << (method.empty() ? "" : "\n" + method + "\n") << (a.tuned ? tuned_markdown(a) : "") << "\n## Noise\n\n";
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
  if (!a.matched.empty()) {
    Rows md = matched_rows(a);
    for (auto& row : md) {
      row[0] = md_code(row[0]);
    }
    out << "\n## At equal compute\n\n" << markdown_table(k_matched_headers, md) << '\n' << k_matched_sentence << '\n';
  }
  return out.str();
}

}  // namespace

std::string render_markdown(const ReportInput& in, const Analysis& a, const std::vector<Plot>& plots) {
  std::ostringstream out;
  out << "# Sweep " << md_code(a.sweep) << ": " << a.metric.name() << " vs the baseline\n\n"
      << (a.ladder ? ladder_markdown(a) : study_markdown(a));
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

namespace {

// index.html's body for one study: the sortable ranked table, the noise, responses, combinations, targets.
std::string study_html(const Analysis& a) {
  std::ostringstream out;
  out << "<p>" << html_escape(headline(a)) << "</p>\n"
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
      } else if (columns[c] == "verdict" && decided(v.verdict)) {
        out << " class=\"" << to_string(v.verdict) << "\">";
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
  out << (method.empty() ? "" : "<p>" + html_escape(method) + "</p>\n") << (a.tuned ? tuned_html(a) : "")
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
  if (!a.matched.empty()) {
    out << "<h2>At equal compute</h2>\n" << html_table(k_matched_headers, matched_rows(a)) << "<p>"
        << html_escape(k_matched_sentence) << "</p>\n";
  }
  return out.str();
}

}  // namespace

std::string render_html(const ReportInput& in, const Analysis& a, const std::vector<Plot>& plots) {
  std::ostringstream out;
  out << "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n"
      << "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'; "
         "script-src 'unsafe-inline'; img-src data:\">\n"
      << "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
      << "<title>sweep report: " << html_escape(a.sweep) << "</title>\n<style>" << k_style << "</style></head>\n<body>\n"
      << "<h1>Sweep " << html_escape(a.sweep) << "</h1>\n" << (a.ladder ? ladder_html(a) : study_html(a));
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
  out << "sweep,variant,run_id,init_seed,data_seed,repeat,status," << in.metric.name()
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
  j["metric"] = a.metric.name();
  j["baseline"] = a.baseline;
  j["alpha"] = a.alpha;
  j["references"] = json_array(a.references);
  j["design"] = design_json(a);
  j["noise"] = json_of(a.noise);
  j["metric_signal"] = json_array(a.signals);
  if (a.ladder) {  // each rung is a study of its own, with its own signal (the whole sweep's is empty)
    nlohmann::ordered_json by_rung = nlohmann::ordered_json::object();
    for (size_t k = 0; k < a.rungs.size(); ++k) {
      by_rung[a.ladder->rungs[k].name] = json_array(a.rungs[k].signals);
    }
    j["metric_signal_by_rung"] = by_rung;
  }
  std::map<std::string, const VariantRuns*> runs;
  for (const auto& v : in.variants) {
    runs[v.name] = &v;
  }
  nlohmann::ordered_json variants = nlohmann::ordered_json::array();
  std::map<std::string, std::pair<std::string, size_t>> rung_rank;  // a ladder: variant -> its rung, its rank there
  for (size_t k = 0; a.ladder && k < a.rungs.size(); ++k) {
    for (size_t i = 0; i < a.rungs[k].variants.size(); ++i) {
      rung_rank[a.rungs[k].variants[i].name] = {a.ladder->rungs[k].name, i + 1};
    }
  }
  for (size_t i = 0; i < a.variants.size(); ++i) {
    const VariantStats& v = a.variants[i];
    const auto rung = rung_rank.find(v.name);
    nlohmann::ordered_json row{
        {"rank", rung == rung_rank.end() ? i + 1 : rung->second.second},
        {"rung", rung == rung_rank.end() ? nlohmann::ordered_json(nullptr) : nlohmann::ordered_json(rung->second.first)}};
    row.update(json_of(v));
    // what `sweep pool` reads of a report: the intervention a grid point or a rung's variant expands, and its
    // point on the grid (the baseline's is the one pooled)
    const VariantRuns& r = *runs[v.name];
    row["intervention"] = r.intervention.empty() ? v.name : r.intervention;
    row["axes"] = r.axes;
    if (a.design.better_by > 0) {
      row.update(margin_json(v));
    }
    row["runs_detail"] = json_array(r.runs);
    variants.push_back(std::move(row));
  }
  j["variants"] = variants;
  j["ladder"] = a.ladder ? json_of(*a.ladder) : nlohmann::ordered_json(nullptr);
  j["responses"] = json_array(a.responses);
  j["combinations"] = json_array(a.additivity);
  j["tokens_to_target"] = json_array(a.targets);
  j["compute_matched"] = json_array(a.matched);
  j["delta_curves"] = json_array(a.deltas);
  if (a.tuned) {  // only then: the reports of sweeps without a tune axis keep their bytes
    j["tuned"] = json_of(*a.tuned);
    for (size_t i = 0; a.design.better_by > 0 && i < a.tuned->at_best.size(); ++i) {
      j["tuned"]["at_best"][i].update(margin_json(a.tuned->at_best[i]));
    }
  }
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
