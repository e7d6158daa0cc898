// `sweep calibrate --pool`: the pooled test and the prediction interval (report/pool/meta.h) on
// simulated meta-studies with a known truth. k settings, each an intervention's paired
// improvement measured over `seeds` seeds whose paired differences spread σ_i (equal: σ; unequal:
// σ·2^u, u evenly from −1 to 1 across the settings), the setting's true effect μ + τ·z with τ in
// units of σ/√seeds (one setting's standard error at equal precision); a third precision puts one
// setting's noise at 10σ; two more give the pool copies it must count once (report/pool/pool.h's
// same_measurement): every setting the first one's runs again, or the last. Each meta-study goes
// through pool_measured, as `sweep pool`'s settings do. With μ = 0 it measures how
// often the pooled interval excludes 0 (Hartung–Knapp, and DerSimonian–Laird's z beside it) and how
// often the verdict says "holds across settings"; at every μ, how often the prediction interval
// holds a new setting's true effect.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace sweep {

struct PoolCalibrationSetup {
  std::vector<int64_t> ks{2, 3, 4, 5, 6, 8};
  std::vector<double> taus{0, 1, 2, 3};  // in units of one setting's standard error (σ/√seeds)
  int64_t seeds = 3;
  double effect = 0.5;  // μ for the coverage rows, in the same units (the false-positive rows have μ = 0)
  int64_t replicates = 2000;
  uint64_t seed = 1;
  std::function<void(int64_t done, int64_t total)> progress{};
};

struct PoolCalibrationRow {
  int64_t k = 0;
  double tau = 0;
  std::string precision;         // equal, ½× to 2×, one 10×, identical settings, one setting duplicated
  double false_positive = 0;     // μ = 0: Hartung–Knapp's 95% interval excludes 0
  double dl_false_positive = 0;  // ... DerSimonian–Laird's z interval
  double false_holds = 0;        // μ = 0: "holds across settings"
  double varies = 0;             // μ = 0: "varies with the setting" (false at τ = 0)
  double pi_coverage = 0;        // μ = effect: a new setting's true effect inside the 95% PI (NaN: k < 3)
  double pi_half_width = 0;      // its mean half-width, in units of σ/√seeds
  double hts_pi_coverage = 0;    // the same for Higgins–Thompson–Spiegelhalter's interval (τ̂² plugged in)
};

std::vector<PoolCalibrationRow> calibrate_pool(const PoolCalibrationSetup& setup);
// Its first paragraph, what the meta-studies are: pool_calibration_markdown begins with it.
std::string pool_calibration_header(const PoolCalibrationSetup& setup);
std::string pool_calibration_markdown(const PoolCalibrationSetup& setup, const std::vector<PoolCalibrationRow>& rows);

}  // namespace sweep
