// A scale ladder's sections of the report (report/render/render.cpp writes the documents around them):
// the rungs, the table of every intervention's improvement at each rung with its trend and the
// value extrapolated to the target, the trends' verdicts in words, then each rung's ranked table.
#pragma once

#include <string>

#include "report/analysis.h"

namespace sweep {

// The whole terminal report of a ladder (`sweep report`'s text).
std::string ladder_text(const Analysis& a);
// The body of report.md and index.html (between the title and the plots).
std::string ladder_markdown(const Analysis& a);
std::string ladder_html(const Analysis& a);

}  // namespace sweep
