// The report's vocabularies — a variant's verdict and test, a combination's, a trend's — each an
// enum with its one string table: the words the report, its JSON and the live view print.
#pragma once

namespace sweep {

// A variant against the baseline.
enum class Verdict {
  better,      // shown to improve the metric (Holm-adjusted, or decided by --until-decided)
  worse,       // shown to harm it
  equivalent,  // shown within ±min_effect
  undecided,   // neither shown
  baseline,    // the variant the others are compared with
  diverged,    // every run diverged, or some did (then "diverged k/n": never judged on its survivors)
  no_result,   // no finished run on its side
  unknown,     // a comparison without a noise estimate (one seed, σ unknown)
};

// How it was compared.
enum class Method {
  none,      // nothing to compare: no result on a side
  baseline,  // the baseline itself (printed empty)
  paired,    // paired t-test on the seeds both sides have
  welch,     // Welch's t-test: the seeds cannot pair
  band,      // one seed against the noise band σ
};

// Where the smallest effect of interest (min_effect) comes from.
enum class MinEffectSource {
  none,          // none declared
  sweep_file,    // the sweep file's min_effect
  option,        // sweep report --min-effect
  none_for_bpb,  // the file's, in nats per token, dropped for test_bpb (the report says why)
  simulation,    // sweep calibrate's simulated studies
};

// A combination against the sum of its parts.
enum class SumVerdict { adds_up, overlaps, interferes, better_than_sum, unknown };

// An intervention's improvement across a ladder's rungs.
enum class TrendVerdict { holds, grows, shrinks, flips_sign, undecided, no_result };

// An arm of a sweep with a tune axis: its verdict at the base value against its verdict at its
// own best value (report/tuned.h).
enum class TunedOutcome {
  agrees,       // the same verdict at the base value and at the best
  confounded,   // they differ: printed "<key>-confounded" (lr-confounded)
  extend_grid,  // its best value (or the baseline's) may lie beyond the values tried
  diverges,     // some of its runs diverged at a value where the baseline's all trained: never equivalent
  no_result,    // no tuned verdict: too few values with results
};

constexpr const char* to_string(Verdict v) {
  switch (v) {
    case Verdict::better: return "better";
    case Verdict::worse: return "worse";
    case Verdict::equivalent: return "equivalent";
    case Verdict::undecided: return "undecided";
    case Verdict::baseline: return "baseline";
    case Verdict::diverged: return "diverged";
    case Verdict::no_result: return "no result";
    case Verdict::unknown: return "unknown";
  }
  return "unknown";
}

// better, worse or equivalent: the verdicts a test reached (the others say why none was reached)
constexpr bool decided(Verdict v) { return v == Verdict::better || v == Verdict::worse || v == Verdict::equivalent; }

constexpr const char* to_string(Method m) {
  switch (m) {
    case Method::none: return "none";
    case Method::baseline: return "";
    case Method::paired: return "paired";
    case Method::welch: return "welch";
    case Method::band: return "band";
  }
  return "none";
}

constexpr const char* to_string(MinEffectSource s) {
  switch (s) {
    case MinEffectSource::none: return "";
    case MinEffectSource::sweep_file: return "the sweep file";
    case MinEffectSource::option: return "--min-effect";
    case MinEffectSource::none_for_bpb: return "none for test_bpb";
    case MinEffectSource::simulation: return "the simulation";
  }
  return "";
}

constexpr const char* to_string(SumVerdict v) {
  switch (v) {
    case SumVerdict::adds_up: return "adds up";
    case SumVerdict::overlaps: return "overlaps";
    case SumVerdict::interferes: return "interferes";
    case SumVerdict::better_than_sum: return "better than the sum";
    case SumVerdict::unknown: return "unknown";
  }
  return "unknown";
}

constexpr const char* to_string(TrendVerdict v) {
  switch (v) {
    case TrendVerdict::holds: return "holds";
    case TrendVerdict::grows: return "grows";
    case TrendVerdict::shrinks: return "shrinks";
    case TrendVerdict::flips_sign: return "flips sign";
    case TrendVerdict::undecided: return "undecided";
    case TrendVerdict::no_result: return "no result";
  }
  return "no result";
}

constexpr const char* to_string(TunedOutcome o) {
  switch (o) {
    case TunedOutcome::agrees: return "agrees";
    case TunedOutcome::confounded: return "confounded";
    case TunedOutcome::extend_grid: return "extend the grid";
    case TunedOutcome::diverges: return "diverges";
    case TunedOutcome::no_result: return "no result";
  }
  return "no result";
}

}  // namespace sweep
