// Random-effects meta-analysis of one intervention's effect across settings: each setting's
// estimate y_i with its standard error s_i; the between-setting variance τ² by Paule–Mandel
// (the τ² ≥ 0 at which the generalised Q equals k − 1: Veroniki et al. 2016 recommend it over
// DerSimonian–Laird), its 95% interval by the Q-profile method (Viechtbauer 2007); the pooled
// effect with Hartung–Knapp–Sidik–Jonkman's interval (t on k − 1 degrees of freedom, whose
// false-positive rate stays near nominal with few settings where DerSimonian–Laird's z does not:
// IntHout et al. 2014), its variance factor Σw(y − μ)²/(k − 1) floored at 1 (Röver, Knapp & Friede
// 2015): settings that agree more closely than their standard errors allow — correlated ones, that
// share a baseline's runs — would otherwise give an interval narrower than any one of them; and
// the prediction interval for the effect in a new setting, from τ²'s confidence distribution
// (predictive_interval). Matches statsmodels' combine_effects(method_re="pm") and its HKSJ interval
// before the floor; Higgins, Thompson & Spiegelhalter's prediction interval beside it.
// Pure: no database, no files.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

namespace sweep {

struct MetaResult {
  int64_t k = 0;                                  // settings
  double mean = 0, se = 0, ci_low = 0, ci_high = 0;  // pooled effect, its HKSJ standard error and interval
  double hk_se = 0;                               // Hartung–Knapp's before the floor (se: its factor floored at 1)
  double p = 0;                                   // the pooled effect ≠ 0 (HKSJ t on k − 1)
  double tau2 = 0, tau2_low = 0, tau2_high = 0;   // between-setting variance and its Q-profile interval
  double q = 0, q_p = 0;                          // Cochran's Q (fixed-effect weights) and its χ²_{k−1} p
  double spread_p = 0;                            // the settings differ (pool_effects: Welch's ANOVA; NaN: not run)
  double pi_low = 0, pi_high = 0;                 // for the effect in a new setting (NaN with k < 3): never
                                                  // inside [ci_low, ci_high]
  double hts_pi_low = 0, hts_pi_high = 0;         // Higgins–Thompson–Spiegelhalter's: t on k − 2, τ̂² + se²
};

// The prediction interval for a new setting's effect (plus `extra_var`, its own sampling variance,
// when the interval is for what it will measure) at `level`, k ≥ 3 (else NaN): Nagashima, Noma &
// Furukawa (2019), with τ² drawn from its Q-profile confidence distribution — a draw of χ²_{k−1}
// solved for the τ² at which the generalised Q equals it (0 below Q(0)) — and for each draw the
// pooled mean at that τ², a new setting's spread τ·z and the mean's Hartung–Knapp error t_{k−1}·se,
// its factor floored at 1 as the pooled interval's is (Nagashima et al. leave it unfloored: settings
// that agree more closely than their errors — copies of one study, a key that changes nothing —
// then drew every point at μ̂, an interval of width 0); the interval is the draws' quantiles.
// Higgins–Thompson–Spiegelhalter's interval plugs in τ̂², which Paule–Mandel often puts at 0 where
// the spread is one to three standard errors: it covered 83–90% there with 4 to 8 settings (`sweep
// calibrate --pool`). k_predictive_draws draws from a fixed seed: the same settings give the same
// interval.
constexpr int64_t k_predictive_draws = 10000;
constexpr uint64_t k_predictive_seed = 1;
std::pair<double, double> predictive_interval(const std::vector<double>& y, const std::vector<double>& se,
                                              double level = 0.95, double extra_var = 0);

// y: the settings' estimates; se: their standard errors (all > 0). k ≥ 2; `level` of every interval.
MetaResult random_effects(const std::vector<double>& y, const std::vector<double>& se, double level = 0.95);

// The settings' standard errors from their seed variances pooled: √(σ̄²/n_i), σ̄² the seeds' variance
// (n_i·se_i²) averaged over the settings with n_i − 1 degrees of freedom each. A standard error
// from 3 seeds is itself so noisy that weighting by it makes the pooled test and the prediction
// interval run wide of their levels (`sweep calibrate --pool`: 9–15% false positives at a
// nominal 5% with the settings' own); pooled, the weights are steady, and Hartung–Knapp's
// variance, measured from the settings' spread, keeps the interval honest where the true seed
// noise differs between settings.
std::vector<double> pooled_noise_se(const std::vector<double>& se, const std::vector<int64_t>& seeds);

// Whether the settings' true effects differ — Welch's heteroscedastic one-way ANOVA on the settings'
// means y_i with their own standard errors se_i over n_i seeds: its F and p. Cochran's Q on
// standard errors from 3 seeds calls 21–47% of homogeneous settings different at a nominal 5%
// (`sweep calibrate --pool`), Q on the pooled seed variance 8–18% where one setting is noisier;
// Welch's test corrects the degrees of freedom for both.
std::pair<double, double> welch_anova(const std::vector<double>& y, const std::vector<double>& se,
                                      const std::vector<int64_t>& seeds);

}  // namespace sweep
