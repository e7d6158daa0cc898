// The report's tables and their sentences, shared by every document (report/render/render.cpp, and a
// ladder's sections in report/render/ladder_render.cpp): the ranked table's columns and rows, the
// method and noise sentences, tables as text, Markdown and HTML, and cell formats.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "report/analysis.h"

namespace sweep {

// A p-value as a table shows it: 4 decimals, "<0.0001", "-" for none.
std::string p_text(double p);

// One cell of the ranked table: its text, and the number a sortable table sorts it by.
struct Cell {
  std::string text;
  double key = std::nan("");
};

// The ranked table's columns: a sequential design (--until-decided) shows its looks instead of
// Holm's p and the power figure; a smallest effect of interest adds the equivalence test's p.
std::vector<std::string> headers(const Analysis& a);
// A row of the ranked table, in the order of headers(a).
std::vector<Cell> cells(const Analysis& a, const VariantStats& v, int rank);
// The ranked table's rows as text, best first.
using Rows = std::vector<std::vector<std::string>>;
Rows ranked_rows(const Analysis& a);
// Columns of text, left-aligned; the others are numbers, right-aligned.
bool left_aligned(const std::string& header);
// The verdict as report.json and the live view spell it: "diverged k/n" when some of its runs finished.
std::string verdict_name(const VariantStats& v);
// ... and as the tables print it: " (< δ)" after a difference shown smaller than min_effect,
// " (by > m)" after one shown larger than the design's better_by margin m.
std::string verdict_text(const VariantStats& v, double better_by);
// How the verdicts were reached, in words.
std::string method_sentence(const Analysis& a);
// Where σ comes from, its components, the noise band and the detectable effect.
std::vector<std::string> noise_lines(const Analysis& a);
std::string headline(const Analysis& a);

size_t display_width(const std::string& s);
// The longest run of backticks in `s`: a Markdown code span or fence around it needs more.
size_t backtick_run(const std::string& s);
// `s` as Markdown inline code (in a table cell too), whatever backticks or pipes it holds.
std::string md_code(const std::string& s);
std::string html_escape(const std::string& s);

nlohmann::json number_or_null(double v);
nlohmann::json optional_number(const std::optional<double>& v);
// A CSV cell. One a spreadsheet would run as a formula (= + - @ first) is led by a quote mark.
std::string csv_field(const std::string& text);
std::string csv_number(const std::optional<double>& v);

std::string text_table(const std::vector<std::string>& headers, const Rows& rows, const std::string& indent = "");
// Cells must already be Markdown (md_code for user strings).
std::string markdown_table(const std::vector<std::string>& headers, const Rows& rows);
std::string html_table(const std::vector<std::string>& headers, const Rows& rows);

}  // namespace sweep
