// The report's analysis of a sweep: a dispatcher over the three kinds — a scale ladder's
// (report/ladder), a tune axis's (report/tuned) and the plain one (report/analysis.h). The top of
// the analysis: only what uses an analysis (render, calibration, the CLI, serve) includes it.
#pragma once

#include "report/analysis.h"

namespace sweep {

Analysis analyze(const ReportInput& input);

}  // namespace sweep
