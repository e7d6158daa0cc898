// `sweep check FILE`: an A/A check of a sweep's trainer (report/calibration/aa_check.h has its statistics).
#include <cmath>
#include <cstdio>
#include <map>
#include <vector>

#include "cli/sweep_commands.h"
#include "report/calibration/aa_check.h"
#include "util/text.h"

namespace sweep::commands {

namespace {

// The sweep's baseline (its first rung on a ladder) with seeds 1..N, each trained twice (repeats
// 0 and 1: repeat 0 is the sweep's own run of that seed), recorded as the sweep "<name>-check";
// then whether the repeats agree to the last digit, and σ_repeat against σ_seed.
Exit check_twins(const CheckOptions& o, const SweepPlan& plan) {
  const SweepSpec& spec = plan.spec;
  SweepSpec check = spec;
  check.name = spec.name + "-check";
  check.variants = {spec.variants.front()};
  check.baseline = check.variants.front().name;
  check.axes.clear();
  check.ladder.reset();
  check.references.clear();
  check.design = SeedDesign{};
  check.design.first = o.seeds;
  check.runs.clear();
  const PlannedRun& like = spec.runs.front();  // the baseline's first run
  for (int64_t s = 1; s <= o.seeds; ++s) {
    for (int64_t repeat = 0; repeat < 2; ++repeat) {
      PlannedRun run = like;
      run.repeat = repeat;
      run.config.seeds.init = run.config.seeds.data = s;
      run.run_id = run_id_of(run.config, repeat);
      check.runs.push_back(run);
    }
  }
  RunOptions ro;
  static_cast<SweepFileOptions&>(ro) = o;
  ro.stall_timeout = o.stall_timeout;
  ro.retry_failed = o.retry_failed;
  const Exit ran = train_planned(ro, SweepPlan{check, plan.placement});
  if (ran != Exit::ok) {
    return ran;
  }
  // ---- the verdict: identical twins, and the two noises ----
  Store store(database_path(o.results), Store::Access::read);
  std::map<int64_t, std::vector<double>> by_seed;
  for (const auto& row : store.sweep_runs(check.name)) {
    if (row.run.status == RunState::done && row.run.test_loss) {
      by_seed[row.run.init_seed].push_back(*row.run.test_loss);
    }
  }
  std::printf("\nA/A check of %s's baseline '%s' (%s): %lld seeds, each trained twice\n", spec.name.c_str(),
              check.baseline.c_str(), like.config.trainer ? ("trainer " + like.config.trainer->name).c_str() : "sweep's core",
              static_cast<long long>(o.seeds));
  for (const auto& [seed, values] : by_seed) {
    std::printf("  seed %lld: %s\n", static_cast<long long>(seed),
                values.size() == 2 ? (format_number("%.6f", values[0]) + "  " + format_number("%.6f", values[1]) +
                                      (values[0] == values[1] ? "  identical" : "  differ by " + format_number("%.2g", std::abs(values[0] - values[1]))))
                                         .c_str()
                                   : "a run has no result");
  }
  const AaCheck aa = aa_check(by_seed);
  if (aa.pairs < 2) {
    std::printf("  too few seeds with both runs finished to say more\n");
    return Exit::failed;
  }
  const double largest = aa.largest_gap, sigma_repeat = aa.sigma_repeat, sigma_seed = aa.sigma_seed;
  const int pairs = aa.pairs;
  if (largest == 0) {
    std::printf("  deterministic given its seeds: every repeat equals its twin to the last digit (σ_repeat = 0)\n"
                "  seed noise: σ_seed = %.4g over %d seeds — a fixed-seed \"noise\" study of this trainer would "
                "measure nothing; vary the seeds\n",
                sigma_seed, pairs);
  } else {
    std::printf("  not deterministic given its seeds: twins differ by up to %.3g; σ_repeat = %.3g against σ_seed = "
                "%.3g (%d seeds) — run-to-run noise is %.0f%% of seed noise%s\n",
                largest, sigma_repeat, sigma_seed, pairs, sigma_seed > 0 ? 100 * sigma_repeat / sigma_seed : 100.0,
                sigma_repeat > sigma_seed / 2
                    ? ": a large share — seeds alone do not reproduce its runs (GPU atomics, unseeded data order or "
                      "dropout?); paired verdicts still hold, at lower power"
                    : ": seeds account for most of its noise");
  }
  return Exit::ok;
}

}  // namespace

}  // namespace sweep::commands

namespace sweep {

CLI::App* setup_check(CLI::App& app, CheckOptions& o) {
  CLI::App* check = app.add_subcommand(
      "check", "An A/A check of a sweep's trainer: its baseline twice with each of a few seeds — is it deterministic "
               "given its seeds, and how does its run-to-run noise compare with its seed noise?");
  check->add_option("file", o.file, "Sweep file (YAML): its baseline is trained")->required()->check(CLI::ExistingFile);
  check->add_option("--results", o.results, "Output root")->capture_default_str();
  check->add_option("--devices", o.devices, "As for run");
  check->add_option("--seeds", o.seeds, "Seeds, each trained twice")->check(CLI::Range(2, 100))->capture_default_str();
  check->add_option("--stall-timeout", o.stall_timeout, "As for run")->check(at_least(0));
  check->add_flag("--retry-failed", o.retry_failed, "As for run: train again the check's runs that failed");
  return check;
}

Exit run_check(const CheckOptions& o) {
  return commands::check_twins(o, commands::plan_from_file(o, commands::PlanFor::check));
}

}  // namespace sweep
