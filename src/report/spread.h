// An arm whose seeds disagree far more than the other arms' do: some of its seeds trained
// differently (an early stall, a loss spike recovered late), not the seed noise every arm shares.
// Every improvement against such an arm carries its instability — against the baseline, all of
// them — so the report names it. The test: the arm's seed variance against the other arms' pooled
// variance, a one-sided F test, Bonferroni across the arms tested at 0.01 — exact for normal
// seed noise of one variance: a study flags an arm falsely at most 1% of the time.
#pragma once

#include <string>
#include <vector>

#include "report/seeds.h"

namespace sweep {

struct UnstableArm {
  std::string variant;
  int64_t seeds = 0;
  double sd = 0, others_sd = 0;  // its seeds' sd; the other arms' pooled
  double p = 0;                  // the one-sided F test's, before Bonferroni
  int64_t arms = 0;              // arms tested (the Bonferroni divisor)
  SeedKey farthest{};            // its seed farthest from its median, and that seed's value
  double farthest_value = 0, median = 0;
};

// The arms with 3 or more seeds whose spread the test flags, tested against every other arm with
// 2 or more seeds (4 or more degrees of freedom among them, else none is tested).
std::vector<UnstableArm> unstable_arms(const ReportInput& in);

// One note per such arm, added to `notes`.
void note_unstable_arms(const ReportInput& in, std::vector<std::string>& notes);

}  // namespace sweep
