#include "report/analyze.h"

#include "report/ladder/ladder.h"
#include "report/tuned/tuned.h"

namespace sweep {

Analysis analyze(const ReportInput& in) {
  if (in.ladder) {
    return analyze_ladder(in);
  }
  if (tune_axis(in) != nullptr) {
    return analyze_tuned(in);
  }
  return analyze_plain(in);
}

}  // namespace sweep
