// A tune axis's section of the report (report/tuned/tuned.h): each arm at the base value and at its own
// best value side by side, with its best value, what a 2× error in it costs and the outcome —
// as text, Markdown and HTML, for render.cpp's documents.
#pragma once

#include <string>

#include "report/analysis.h"
#include "report/render/tables.h"

namespace sweep {

std::vector<std::string> tuned_headers(const TunedSummary& t);
Rows tuned_rows(const Analysis& a);  // ranked by the improvement at each arm's best
std::string tuned_title(const TunedSummary& t);
std::string tuned_sentence(const Analysis& a);  // how the tuned verdicts are reached

std::string tuned_text(const Analysis& a);
std::string tuned_markdown(const Analysis& a);
std::string tuned_html(const Analysis& a);

}  // namespace sweep
