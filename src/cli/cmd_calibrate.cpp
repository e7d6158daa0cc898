// `sweep calibrate [SWEEP]`: the verdicts' error rates measured on synthetic studies with a known
// truth (report/calibration/calibration.h), σ, ρ and δ from a sweep's results or from the options.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <functional>
#include <memory>
#include <set>
#include <vector>

#include "cli/commands.h"
#include "cli/results.h"
#include "cli/run_eliminate.h"
#include "report/analyze.h"
#include "report/calibration/backtest_calibration.h"
#include "report/calibration/eliminate_calibration.h"
#include "report/calibration/pool_calibration.h"
#include "report/calibration/calibration.h"
#include "report/load.h"
#include "report/tuned/tuned.h"
#include "report/calibration/tuned_calibration.h"
#include "util/text.h"

namespace sweep {

using commands::sweep_to_read;

CLI::App* setup_calibrate(CLI::App& app, CalibrateOptions& o) {
  CLI::App* cmd = app.add_subcommand(
      "calibrate", "Measure the verdicts' error rates on synthetic studies with a known truth (a Markdown table)");
  // an option of one mode or two: recorded when given, so that the mode run checks it applies
  const auto of_mode = [&o](CLI::Option* opt) {
    const std::string name = opt->get_name();
    return opt->each([&o, name](const std::string&) { o.given.insert(name); });
  };
  // a loss's noise, effects and curvatures: nats of a loss, never 1e308
  const double most = 100;
  cmd->add_option("sweep", o.sweep, "Take σ, ρ, δ, the seeds and the interventions from this sweep's results");
  cmd->add_option("--results", o.results, "Output root holding sweep.db (with a sweep)")
      ->capture_default_str()
      ->each([&o](const std::string&) { o.given.insert("--results"); });
  cmd->add_option("--sigma", o.sigma, "Seed-to-seed standard deviation of one variant's metric")
      ->check(at_least(0, true))
      ->check(at_most(most));
  of_mode(cmd->add_option("--rho", o.rho, "Correlation of a variant's and the baseline's metric at one seed")
              ->check(between(-0.99, 0.9999)));
  of_mode(cmd->add_option("--min-effect", o.min_effect, "The smallest effect of interest δ")
              ->check(at_least(0, true))
              ->check(at_most(most)));
  of_mode(cmd->add_option("--better-by", o.better_by,
                          "A margin m: also measure how often `better (by > m)` is claimed (e.g. at a true improvement of m)")
              ->check(at_least(0, true))
              ->check(at_most(most)));
  of_mode(cmd->add_option("--better-by-alpha", o.better_by_alpha, "--better-by's level (default: the sweep's, else 0.05)")
              ->check(between(0.0001, 0.5)));
  cmd->add_option("--seeds", o.seeds, "Declared seeds (default: the sweep's, else 3)")->check(CLI::Range(2, 1000));
  of_mode(cmd->add_option("--max-seeds", o.max_seeds,
                          "--until-decided's cap (default: the sweep's, else 4 × seeds; --tune: none, the fixed design only)")
              ->check(CLI::Range(2, 1000)));
  cmd->add_option("--interventions", o.interventions, "Interventions per study (default: the sweep's, else 1; --tune 4, --backtest 3)")
      ->check(CLI::Range(1, 1000));
  of_mode(cmd->add_option("--effects", o.effects, "True improvements, in multiples of δ, comma-separated")->capture_default_str());
  cmd->add_option("--replicates", o.replicates, "Studies per effect")->check(CLI::Range(1, 1000000))->capture_default_str();
  cmd->add_option("--seed", o.seed, "Random seed of the studies")->check(unsigned_integer())->capture_default_str();
  of_mode(cmd->add_option("--spending", o.spending, "--until-decided's alpha spending, to compare (sweep run uses pocock)")
              ->check(CLI::IsMember(choice_names<Spending>()))
              ->capture_default_str());
  cmd->add_flag("--tune", o.tune,
                "The verdicts at each arm's best value of a tune axis: simulated bowls in log(learning rate) "
                "(a fixed design, and with --max-seeds --until-decided too; --effects does not apply)");
  cmd->add_flag("--backtest", o.backtest,
                "The backtest's coverage and decision accuracy on synthetic ladders: straight, bent and crossing 0, "
                "and with a noisier top rung (--sigma, --seeds, --interventions, --replicates, --seed, --rungs, --bend "
                "and --top-noise apply)");
  cmd->add_flag("--pool", o.pool,
                "Pooling across settings on simulated meta-studies: the pooled test's false positives and the "
                "prediction interval's coverage for 2 to 8 settings (--seeds, --replicates and --seed apply)");
  cmd->add_flag("--eliminate", o.eliminate,
                "--eliminate's rule on simulated studies whose arms' curves grow, fade or cross 0: its false "
                "elimination per study and the tokens it saves (--seeds, --interventions, --replicates and --seed "
                "apply)");
  const auto [looks, kept] = commands::add_elimination_options(cmd, o.elimination);
  of_mode(looks);
  of_mode(kept);
  of_mode(cmd->add_option("--rungs", o.rungs, "--backtest: rungs per ladder, a decade of FLOPs apart")
              ->check(CLI::Range(3, 20))
              ->capture_default_str());
  of_mode(cmd->add_option("--bend", o.bend, "--backtest: the bent trends' curvature per decade²")
              ->check(at_least(0))
              ->check(at_most(most))
              ->capture_default_str());
  of_mode(cmd->add_option("--top-noise", o.top_noise, "--backtest: the noisier-top ladders' top rung σ ÷ the others'")
              ->check(at_least(1))
              ->check(at_most(most))
              ->capture_default_str());
  of_mode(cmd->add_option("--curvature", o.curvature, "--tune: the bowl's rise per doubling² of the value")
              ->check(at_least(0, true))
              ->check(at_most(most))
              ->capture_default_str());
  of_mode(cmd->add_option("--asymmetry", o.asymmetry, "--tune: the asymmetric bowls' rise above the minimum ÷ below it")
              ->check(at_least(1))
              ->check(at_most(most))
              ->capture_default_str());
  of_mode(cmd->add_option("--tune-grid", o.tune_grid,
                          "--tune: the values tried, as log2 of each ÷ the base value, comma-separated (0 among them; "
                          "-1,-0.5,0,0.5,1,1.5,2: steps of √2)")
              ->capture_default_str());
  of_mode(cmd->add_option("--run-sigma", o.run_sigma, "--tune: each run's own noise, beside the seed's")
              ->check(at_least(0))
              ->check(at_most(most))
              ->capture_default_str());
  return cmd;
}

namespace {

// The options a mode takes of those of one mode (CalibrateOptions::given): any other given is
// refused by name, with the mode it belongs to.
void refuse_other_modes(const CalibrateOptions& o) {
  struct Mode {
    const char* name;
    bool on;
    std::set<std::string> takes;
  };
  const std::vector<Mode> modes{
      {"--tune", o.tune,
       {"--rho", "--min-effect", "--better-by", "--better-by-alpha", "--max-seeds", "--spending", "--curvature",
        "--asymmetry", "--tune-grid", "--run-sigma"}},
      {"--backtest", o.backtest, {"--rungs", "--bend", "--top-noise"}},
      {"--pool", o.pool, {}},
      {"--eliminate", o.eliminate, {"--looks", "--kept"}},
      {"the plain calibration", !o.tune && !o.backtest && !o.pool && !o.eliminate,
       {"--rho", "--min-effect", "--better-by", "--better-by-alpha", "--max-seeds", "--effects", "--spending"}},
  };
  for (const Mode& m : modes) {
    if (!m.on) {
      continue;
    }
    for (const std::string& given : o.given) {
      if (m.takes.count(given) || given == "--results") {  // every mode's, with a sweep (checked after)
        continue;
      }
      std::vector<std::string> of;
      for (const Mode& other : modes) {
        if (other.takes.count(given)) {
          of.push_back(other.name);
        }
      }
      throw Error("calibrate: " + given + " does not apply to " + m.name + " (it is " + join(of, " and ") +
                      "'s) — drop it" + (m.name == std::string("the plain calibration") ? ", or pass " + of.front() : ""),
                  Exit::bad_input);
    }
  }
}

// --tune-grid: log2 of each value ÷ the base value — 0 among them, 3 values at least, each within
// ±10 (1024× the base value) and 0.05 from its neighbours (values 3.5% apart are one value, to a fit).
std::vector<double> tune_grid(const std::string& text, std::vector<double> grid) {
  const auto refuse = [&](const std::string& why) {
    throw Error("calibrate: --tune-grid " + text + ": " + why + " — e.g. -1,-0.5,0,0.5,1,1.5,2 (steps of √2)",
                Exit::bad_input);
  };
  std::sort(grid.begin(), grid.end());
  for (const double v : grid) {
    if (std::abs(v) > 10) {
      refuse(format_number("%g", v) + " is beyond ±10 (log2 of a value ÷ the base value: at most 1024× either way)");
    }
  }
  if (std::find(grid.begin(), grid.end(), 0.0) == grid.end()) {
    refuse("0, the base value, is not among them");
  }
  for (size_t i = 1; i < grid.size(); ++i) {
    if (grid[i] == grid[i - 1]) {
      refuse("the value " + format_number("%g", grid[i]) + " is in the grid twice — list each value tried once");
    }
    if (grid[i] - grid[i - 1] < 0.05 - 1e-9) {  // 0.3 and 0.35 are 0.05 apart, whatever the rounding
      refuse(format_number("%g", grid[i - 1]) + " and " + format_number("%g", grid[i]) +
             " are less than 0.05 apart (values 3.5% apart are one value to a fit)");
    }
  }
  if (grid.size() < 3) {
    refuse("3 values at least (a fit takes a value's two neighbours)");
  }
  return grid;
}

// How far a long calibration is, on stderr: after 10 s, then every 10 s (a million replicates is a day).
std::function<void(int64_t, int64_t)> progress_line() {
  const auto started = std::chrono::steady_clock::now();
  auto said = std::make_shared<double>(0);  // seconds in, when last said
  return [started, said](int64_t done, int64_t total) {
    const double in = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    if (in < *said + 10) {
      return;
    }
    *said = in;
    std::fprintf(stderr, "sweep calibrate: %lld of %lld studies, %s in, about %s left\n", static_cast<long long>(done),
                 static_cast<long long>(total), format_duration(in).c_str(),
                 done > 0 ? format_duration(in * static_cast<double>(total - done) / static_cast<double>(done)).c_str() : "?");
  };
}

// The header first (what is simulated: a long run says so before its hours), then the table.
template <typename Setup, typename Rows>
void print_calibration(const Setup& setup, const std::string& header, const std::function<Rows(const Setup&)>& run,
                       const std::function<std::string(const Setup&, const Rows&)>& markdown) {
  std::fputs(header.c_str(), stdout);
  std::fflush(stdout);
  Setup with_progress = setup;
  with_progress.progress = progress_line();
  const std::string all = markdown(setup, run(with_progress));
  std::fputs(all.substr(all.rfind(header, 0) == 0 ? header.size() : 0).c_str(), stdout);
}

// The named sweep's study at its base value, whose noise a simulation takes. A scale ladder's
// rungs each have noise of their own: refused, with what to do instead.
ReportInput study_to_simulate(const CalibrateOptions& o) {
  std::unique_ptr<Store> store;
  const std::string sweep = sweep_to_read(o.results, o.sweep, store);
  ReportInput input = base_value_input(load_report_input(*store, sweep, Metric{Metric::Kind::test_loss}, ""));
  if (input.ladder) {
    throw Error("calibrate: sweep " + sweep + " is a scale ladder, each rung with noise of its own — pass one rung's "
                    "σ, ρ and δ (`sweep report " + sweep + "` prints them) as --sigma, --rho and --min-effect without "
                    "the sweep's name; `sweep calibrate --backtest` simulates whole ladders",
                Exit::bad_input);
  }
  return input;
}

// --tune: simulated bowls; σ, ρ, δ, the seeds and arms from the options, else the named sweep's
// results, else TunedCalibrationSetup's defaults.
Exit run_tuned_calibration(const CalibrateOptions& o) {
  TunedCalibrationSetup tuned;
  if (!o.sweep.empty()) {
    // a tune axis: the noise and the arms of the study at the base value, not every value's variants
    const ReportInput input = study_to_simulate(o);
    const CalibrationSetup from = setup_from(analyze(input), input);
    tuned.sigma = from.sigma;
    tuned.rho = from.rho;
    tuned.min_effect = from.min_effect;
    tuned.seeds = from.seeds;
    tuned.interventions = from.interventions;
    tuned.max_seeds = input.design.sequential() ? input.design.max_seeds : 0;
    tuned.alpha = from.alpha;
    tuned.better_by = from.better_by;
    tuned.better_by_alpha = from.better_by_alpha;
  }
  tuned.sigma = o.sigma > 0 ? o.sigma : tuned.sigma;
  tuned.rho = o.rho <= 1 ? o.rho : tuned.rho;
  tuned.min_effect = o.min_effect > 0 ? o.min_effect : tuned.min_effect;
  tuned.seeds = o.seeds > 0 ? o.seeds : tuned.seeds;
  tuned.interventions = o.interventions > 0 ? o.interventions : tuned.interventions;
  tuned.replicates = o.replicates;
  tuned.seed = o.seed;
  tuned.max_seeds = o.max_seeds > 0 ? o.max_seeds : tuned.max_seeds;
  tuned.spending = choice_of<Spending>(o.spending);
  tuned.curvature = o.curvature;
  tuned.run_sigma = o.run_sigma;
  tuned.asymmetry = o.asymmetry;
  tuned.better_by = o.better_by > 0 ? o.better_by : tuned.better_by;
  tuned.better_by_alpha = o.better_by_alpha > 0 ? o.better_by_alpha : tuned.better_by_alpha;
  tuned.grid = tune_grid(o.tune_grid, validate::number_list("--tune-grid", o.tune_grid,
                                                            "-1,0,1,2 (log2 of each value ÷ the base value)"));
  print_calibration<TunedCalibrationSetup, std::vector<TunedCalibrationRow>>(
      tuned, tuned_calibration_header(tuned), calibrate_tuned, tuned_calibration_markdown);
  return Exit::ok;
}

// --backtest: synthetic ladders of the options' size and noise.
Exit run_backtest_calibration(const CalibrateOptions& o) {
  if (!o.sweep.empty()) {
    throw Error("calibrate --backtest simulates ladders of its own (--sigma, --seeds, --interventions, --rungs, "
                "--bend): it takes no sweep — drop " + o.sweep + ", or `sweep backtest " + o.sweep +
                    "` for that ladder's own backtest",
                Exit::bad_input);
  }
  BacktestCalibrationSetup b;
  b.sigma = o.sigma > 0 ? o.sigma : b.sigma;
  b.seeds = o.seeds > 0 ? o.seeds : b.seeds;
  b.interventions = o.interventions > 0 ? o.interventions : b.interventions;
  b.rungs = o.rungs;
  b.bend = o.bend;
  b.top_noise = o.top_noise;
  b.replicates = o.replicates;
  b.seed = o.seed;
  print_calibration<BacktestCalibrationSetup, std::vector<BacktestCalibrationRow>>(
      b, backtest_calibration_header(b), calibrate_backtest, backtest_calibration_markdown);
  return Exit::ok;
}

// --pool: simulated meta-studies.
Exit run_pool_calibration(const CalibrateOptions& o) {
  if (!o.sweep.empty() || o.sigma > 0 || o.interventions > 0) {
    throw Error("calibrate --pool simulates meta-studies of its own (--seeds, --replicates, --seed): it takes no "
                "sweep, --sigma or --interventions — `sweep pool` pools a results folder's studies",
                Exit::bad_input);
  }
  PoolCalibrationSetup p;
  p.seeds = o.seeds > 0 ? o.seeds : p.seeds;
  p.replicates = o.replicates;
  p.seed = o.seed;
  print_calibration<PoolCalibrationSetup, std::vector<PoolCalibrationRow>>(
      p, pool_calibration_header(p), calibrate_pool, pool_calibration_markdown);
  return Exit::ok;
}

// --eliminate: simulated studies whose arms' curves grow, fade or cross 0.
Exit run_elimination_calibration(const CalibrateOptions& o) {
  if (!o.sweep.empty() || o.sigma > 0) {
    throw Error("calibrate --eliminate simulates studies of its own (--seeds, --interventions, --replicates, "
                "--seed): it takes no sweep or --sigma — `sweep replay --eliminate` replays a finished study",
                Exit::bad_input);
  }
  EliminationCalibrationSetup e;
  e.seeds = o.seeds > 0 ? o.seeds : e.seeds;
  e.arms = o.interventions > 0 ? o.interventions : e.arms;
  e.replicates = o.replicates;
  e.seed = o.seed;
  static_cast<EliminationSettings&>(e.rule) = commands::elimination_settings(o.elimination);
  EliminationRule checked = e.rule;
  checked.delta = 1;  // the simulation's unit
  if (const std::string problem = rule_problem(checked); !problem.empty()) {
    throw Error("calibrate --eliminate: " + problem, Exit::bad_input);  // before its first paragraph is printed
  }
  print_calibration<EliminationCalibrationSetup, std::vector<EliminationCalibrationRow>>(
      e, elimination_calibration_header(e), calibrate_elimination, elimination_calibration_markdown);
  return Exit::ok;
}

// The plain calibration: the fixed design and --until-decided, at a sweep's noise or the options'.
Exit run_plain_calibration(const CalibrateOptions& o) {
  CalibrationSetup setup;
  if (!o.sweep.empty()) {
    const ReportInput input = study_to_simulate(o);
    setup = setup_from(analyze(input), input);
  } else if (o.sigma <= 0 || o.rho > 1 || o.min_effect <= 0) {
    throw Error("calibrate: name a sweep whose results give the noise, or pass --sigma, --rho and --min-effect",
                Exit::bad_input);
  } else {
    setup.seeds = 3;
    setup.max_seeds = 12;
    setup.source = "given";
  }
  setup.sigma = o.sigma > 0 ? o.sigma : setup.sigma;
  setup.rho = o.rho <= 1 ? o.rho : setup.rho;
  setup.min_effect = o.min_effect > 0 ? o.min_effect : setup.min_effect;
  setup.seeds = o.seeds > 0 ? o.seeds : setup.seeds;
  setup.max_seeds = o.max_seeds > 0 ? o.max_seeds : o.seeds > 0 ? std::max(setup.max_seeds, o.seeds) : setup.max_seeds;
  setup.interventions = o.interventions > 0 ? o.interventions : setup.interventions;
  setup.effects = validate::number_list("--effects", o.effects, "0,0.5,1,2 (multiples of δ)");
  for (const double e : setup.effects) {
    if (std::abs(e) > 1000) {
      throw Error("calibrate: --effects " + o.effects + ": " + format_number("%g", e) +
                      " is beyond ±1000 (multiples of δ) — e.g. 0,0.5,1,2",
                  Exit::bad_input);
    }
  }
  setup.replicates = o.replicates;
  setup.seed = o.seed;
  setup.spending = choice_of<Spending>(o.spending);
  setup.better_by = o.better_by > 0 ? o.better_by : setup.better_by;
  setup.better_by_alpha = o.better_by_alpha > 0 ? o.better_by_alpha : setup.better_by_alpha;
  if (setup.max_seeds < setup.seeds) {
    throw Error("calibrate: --max-seeds " + std::to_string(setup.max_seeds) + " is below --seeds " +
                    std::to_string(setup.seeds),
                Exit::bad_input);
  }
  print_calibration<CalibrationSetup, std::vector<CalibrationRow>>(setup, calibration_header(setup), calibrate,
                                                                   calibration_markdown);
  return Exit::ok;
}

}  // namespace

Exit run_calibrate(const CalibrateOptions& o) {
  if (static_cast<int>(o.tune) + static_cast<int>(o.backtest) + static_cast<int>(o.pool) +
          static_cast<int>(o.eliminate) >
      1) {
    throw Error("calibrate: --tune, --backtest, --pool and --eliminate measure different things: pass one",
                Exit::bad_input);
  }
  refuse_other_modes(o);
  if (o.given.count("--better-by-alpha") && !o.given.count("--better-by") && o.sweep.empty()) {
    throw Error("calibrate: --better-by-alpha is the level of --better-by's claim, and no margin is given — pass "
                "--better-by M too (or a sweep whose file sets better_by)",
                Exit::bad_input);
  }
  if (o.given.count("--results") && o.sweep.empty()) {
    throw Error("calibrate: --results names where a sweep's results are read, and no sweep is named — name the sweep "
                "whose noise to simulate, or drop --results",
                Exit::bad_input);
  }
  if (o.tune) {
    return run_tuned_calibration(o);
  }
  if (o.backtest) {
    return run_backtest_calibration(o);
  }
  if (o.pool) {
    return run_pool_calibration(o);
  }
  if (o.eliminate) {
    return run_elimination_calibration(o);
  }
  return run_plain_calibration(o);
}

}  // namespace sweep
