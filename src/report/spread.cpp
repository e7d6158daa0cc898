#include "report/spread.h"

#include <algorithm>
#include <boost/math/distributions/fisher_f.hpp>
#include <cmath>

#include "report/seeds.h"
#include "report/stats.h"
#include "util/text.h"

namespace sweep {

namespace {

constexpr double k_alpha = 0.01;  // per study, split across the arms tested

std::string seed_name(const SeedKey& s) {
  return s.first == s.second ? "seed " + std::to_string(s.first)
                             : "seed (init " + std::to_string(s.first) + ", data " + std::to_string(s.second) + ")";
}

}  // namespace

std::vector<UnstableArm> unstable_arms(const ReportInput& in) {
  struct Arm {
    const VariantRuns* runs;
    std::map<SeedKey, double> by_seed;
    double variance;
  };
  std::vector<Arm> arms;
  for (const auto& v : in.variants) {
    auto by_seed = seed_values(v.runs);
    if (by_seed.size() >= 2) {
      const double sd = summarize(values_of(by_seed)).sd;
      arms.push_back({&v, std::move(by_seed), sd * sd});
    }
  }
  const auto tested = std::count_if(arms.begin(), arms.end(), [](const Arm& a) { return a.by_seed.size() >= 3; });
  std::vector<UnstableArm> out;
  for (const Arm& arm : arms) {
    const auto n = static_cast<int64_t>(arm.by_seed.size());
    double sum = 0, df = 0;
    for (const Arm& other : arms) {
      if (&other != &arm) {
        sum += other.variance * static_cast<double>(other.by_seed.size() - 1);
        df += static_cast<double>(other.by_seed.size() - 1);
      }
    }
    if (n < 3 || df < 4 || !(sum > 0)) {
      continue;
    }
    const double others = sum / df;
    const double p = boost::math::cdf(boost::math::complement(
        boost::math::fisher_f(static_cast<double>(n - 1), df), arm.variance / others));
    if (!(p < k_alpha / static_cast<double>(tested))) {
      continue;
    }
    UnstableArm u;
    u.variant = arm.runs->name;
    u.seeds = n;
    u.sd = std::sqrt(arm.variance);
    u.others_sd = std::sqrt(others);
    u.p = p;
    u.arms = tested;
    u.median = percentile(values_of(arm.by_seed), 0.5);
    u.farthest_value = u.median;
    for (const auto& [seed, value] : arm.by_seed) {
      if (std::abs(value - u.median) > std::abs(u.farthest_value - u.median)) {
        u.farthest = seed;
        u.farthest_value = value;
      }
    }
    out.push_back(u);
  }
  return out;
}

void note_unstable_arms(const ReportInput& in, std::vector<std::string>& notes) {
  for (const UnstableArm& u : unstable_arms(in)) {
    const bool baseline = u.variant == in.baseline;
    notes.push_back(
        u.variant + ": its " + std::to_string(u.seeds) + " seeds spread σ " + format_number("%.4f", u.sd) + ", " +
        format_number("%.3g", u.sd / u.others_sd) + "× the other arms' pooled σ " + format_number("%.4f", u.others_sd) +
        " (one-sided F test p " + format_number("%.2g", u.p) + ", below 0.01 / " + plural(u.arms, "arm") +
        "): some of its seeds trained differently — " + seed_name(u.farthest) + " lies farthest from its median (" +
        format_number("%.4f", u.farthest_value) + " against " + format_number("%.4f", u.median) + ") — not the seed noise the arms share; " +
        (baseline ? "every improvement against it carries that instability"
                  : "its improvement carries that instability") +
        " (seeds.svg, and its seeds' curves)");
  }
}

}  // namespace sweep
