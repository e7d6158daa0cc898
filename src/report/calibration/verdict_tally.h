// What the calibrations (`sweep calibrate`, `--tune`) count of their simulated studies' verdicts:
// the arms judged, each verdict's share of them, the share of studies with a false better or
// worse, and the `better (by > m)` claims per arm and per study. Every true improvement they
// simulate is 0 or more, so a worse is always false.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "report/verdict.h"

namespace sweep {

struct VerdictShares {
  int64_t judged = 0;  // arms judged: replicates × interventions
  double better = 0, worse = 0, equivalent = 0, undecided = 0;  // shares of them
  double any_false = 0;  // share of studies with a false better or worse (worse, or better at a truth of 0)
  double better_by = 0, any_better_by = 0;  // shares called better by more than the margin, per arm
                                            // and per study (false where the truth is the margin or less)
};

// The half-width of a share p's 95% binomial interval over n trials (at least that of one in n).
inline double binomial_half(double p, double n) { return 1.96 * std::sqrt(std::max(p * (1 - p), 1.0 / n) / n); }

class VerdictTally {
 public:
  // One arm of the study being counted: its verdict, its true improvement, and whether it was
  // also called better by more than the margin.
  void add(Verdict v, double truth, bool better_by = false) {
    ++m_judged;
    m_better_by += better_by;
    m_better_by_in_study |= better_by;
    m_better += v == Verdict::better;
    m_worse += v == Verdict::worse;
    m_equivalent += v == Verdict::equivalent;
    m_undecided += v == Verdict::undecided;
    m_false_in_study |= v == Verdict::worse || (truth == 0 && v == Verdict::better);
  }
  // The study's arms are counted: on to the next.
  void end_study() {
    m_studies_false += m_false_in_study;
    m_studies_better_by += m_better_by_in_study;
    m_false_in_study = m_better_by_in_study = false;
    ++m_studies;
  }
  int64_t judged() const { return m_judged; }
  int64_t studies() const { return m_studies; }
  VerdictShares shares() const {
    const double j = static_cast<double>(std::max<int64_t>(1, m_judged));
    const double studies = static_cast<double>(std::max<int64_t>(1, m_studies));
    return {m_judged,
            static_cast<double>(m_better) / j,
            static_cast<double>(m_worse) / j,
            static_cast<double>(m_equivalent) / j,
            static_cast<double>(m_undecided) / j,
            static_cast<double>(m_studies_false) / studies,
            static_cast<double>(m_better_by) / j,
            static_cast<double>(m_studies_better_by) / studies};
  }

 private:
  int64_t m_judged = 0, m_better = 0, m_worse = 0, m_equivalent = 0, m_undecided = 0;
  int64_t m_studies = 0, m_studies_false = 0, m_better_by = 0, m_studies_better_by = 0;
  bool m_false_in_study = false, m_better_by_in_study = false;
};

}  // namespace sweep
