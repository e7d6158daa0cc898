// What the calibrations (`sweep calibrate`, `--tune`) count of their simulated studies' verdicts:
// the arms judged, each verdict's share of them, and the share of studies with a false better or
// worse. Every true improvement they simulate is 0 or more, so a worse is always false.
#pragma once

#include <algorithm>
#include <cstdint>

#include "report/verdict.h"

namespace sweep {

struct VerdictShares {
  int64_t judged = 0;  // arms judged: replicates × interventions
  double better = 0, worse = 0, equivalent = 0, undecided = 0;  // shares of them
  double any_false = 0;  // share of studies with a false better or worse (worse, or better at a truth of 0)
};

class VerdictTally {
 public:
  // One arm of the study being counted: its verdict, and its true improvement.
  void add(Verdict v, double truth) {
    ++m_judged;
    m_better += v == Verdict::better;
    m_worse += v == Verdict::worse;
    m_equivalent += v == Verdict::equivalent;
    m_undecided += v == Verdict::undecided;
    m_false_in_study |= v == Verdict::worse || (truth == 0 && v == Verdict::better);
  }
  // The study's arms are counted: on to the next.
  void end_study() {
    m_studies_false += m_false_in_study;
    m_false_in_study = false;
    ++m_studies;
  }
  int64_t judged() const { return m_judged; }
  int64_t studies() const { return m_studies; }
  VerdictShares shares() const {
    const double j = static_cast<double>(std::max<int64_t>(1, m_judged));
    return {m_judged,
            static_cast<double>(m_better) / j,
            static_cast<double>(m_worse) / j,
            static_cast<double>(m_equivalent) / j,
            static_cast<double>(m_undecided) / j,
            static_cast<double>(m_studies_false) / static_cast<double>(std::max<int64_t>(1, m_studies))};
  }

 private:
  int64_t m_judged = 0, m_better = 0, m_worse = 0, m_equivalent = 0, m_undecided = 0;
  int64_t m_studies = 0, m_studies_false = 0;
  bool m_false_in_study = false;
};

}  // namespace sweep
