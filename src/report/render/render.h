// The report's outputs, as strings: the terminal table, report.md, index.html (self-contained:
// inline SVG, inline script and style, a Content-Security-Policy that forbids any fetch),
// summary.csv (one row per run) and report.json (per-variant statistics for pipelines).
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "report/analysis.h"
#include "report/render/plots.h"

namespace sweep {

std::string render_text(const Analysis& a);
std::string render_markdown(const ReportInput& in, const Analysis& a, const std::vector<Plot>& plots);
std::string render_html(const ReportInput& in, const Analysis& a, const std::vector<Plot>& plots);
std::string render_csv(const ReportInput& in, const Analysis& a);
std::string render_json(const ReportInput& in, const Analysis& a);

// Writes report.md, index.html, summary.csv, report.json and the plots into `dir`, each file
// atomically. Returns the file names written.
std::vector<std::string> write_report(const ReportInput& in, const Analysis& a, const std::vector<Plot>& plots,
                                      const std::filesystem::path& dir);

}  // namespace sweep
