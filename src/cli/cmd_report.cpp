// `sweep report`: ranks a sweep's variants against its baseline and writes the report files.
#include <cmath>
#include <cstdio>
#include <memory>
#include <unistd.h>

#include "cli/commands.h"
#include "report/calibration.h"
#include "report/load.h"
#include "report/plots.h"
#include "report/render.h"
#include "store/store.h"
#include "util/fs.h"
#include "util/text.h"

namespace sweep {

namespace {

double parse_min_effect(const std::string& option, const std::string& text, const std::string& metric) {
  size_t used = 0;
  double v = std::nan("");
  try {
    v = std::stod(text, &used);
  } catch (const std::exception&) {
  }
  if (text.empty() || text.find_first_of("xX") != std::string::npos || used != text.size() || !std::isfinite(v) ||
      v <= 0) {
    throw Error(option + " " + printable(text) + ": must be a number above 0 — the smallest improvement that matters, in " +
                    metric + "'s units (e.g. " + option + " 0.01)",
                Exit::bad_input);
  }
  return v;
}

}  // namespace

CLI::App* setup_report(CLI::App& app, ReportOptions& o) {
  CLI::App* cmd = app.add_subcommand("report", "Rank a sweep's interventions against its baseline: table, plots, files");
  cmd->add_option("sweep", o.sweep, "Sweep name (default: the latest sweep)");
  cmd->add_option("--results", o.results, "Output root holding sweep.db")->capture_default_str();
  cmd->add_option("--metric", o.metric, "What to rank by")
      ->check(CLI::IsMember(k_report_metrics))
      ->capture_default_str();
  cmd->add_option("--out", o.out, "Folder for the report files (default: reports/<sweep>)");
  cmd->add_option("--noise-from", o.noise_from, "A sweep whose baseline's seeds give σ (e.g. a noise study)");
  cmd->add_option("--min-effect", o.min_effect,
                  "The smallest improvement that matters, in the metric's units: verdicts become better, worse, "
                  "equivalent (within ±it) or undecided (default: the sweep file's min_effect)")
      ->each([&o](const std::string&) { o.min_effect_given = true; });
  cmd->add_option("--format", o.format, "What to print: text (the ranked table), markdown, csv or json")
      ->check(CLI::IsMember({"text", "markdown", "csv", "json"}))
      ->capture_default_str();
  return cmd;
}

namespace {

// The results database, read-only, and the sweep named (default: the latest).
std::string sweep_to_read(const std::string& results, std::string sweep, std::unique_ptr<Store>& store) {
  const std::string db = (fs::path(results) / "sweep.db").string();
  if (!fs::exists(db)) {
    throw Error("no database at " + db + " — run a sweep first (`sweep run FILE`) or pass --results DIR",
                Exit::bad_input);
  }
  store = std::make_unique<Store>(db, Store::Access::read);
  if (sweep.empty()) {
    const auto all = store->sweeps();
    if (all.empty()) {
      throw Error("the database " + db + " holds no sweep yet", Exit::bad_input);
    }
    sweep = all.front().name;
  }
  return sweep;
}

}  // namespace

CLI::App* setup_calibrate(CLI::App& app, CalibrateOptions& o) {
  CLI::App* cmd = app.add_subcommand(
      "calibrate", "Measure the verdicts' error rates on synthetic studies with a known truth (a Markdown table)");
  cmd->add_option("sweep", o.sweep, "Take σ, ρ, δ, the seeds and the interventions from this sweep's results");
  cmd->add_option("--results", o.results, "Output root holding sweep.db")->capture_default_str();
  cmd->add_option("--sigma", o.sigma, "Seed-to-seed standard deviation of one variant's metric")
      ->check(at_least(0, true));
  cmd->add_option("--rho", o.rho, "Correlation of a variant's and the baseline's metric at one seed")
      ->check(between(-0.99, 0.9999));
  cmd->add_option("--min-effect", o.min_effect, "The smallest effect of interest δ")->check(at_least(0, true));
  cmd->add_option("--seeds", o.seeds, "Declared seeds (default: the sweep's, else 3)")->check(CLI::Range(2, 1000));
  cmd->add_option("--max-seeds", o.max_seeds, "--until-decided's cap (default: the sweep's, else 4 × seeds)")
      ->check(CLI::Range(2, 1000));
  cmd->add_option("--interventions", o.interventions, "Interventions per study (default: the sweep's, else 1)")
      ->check(CLI::Range(1, 1000));
  cmd->add_option("--effects", o.effects, "True improvements, in multiples of δ, comma-separated")->capture_default_str();
  cmd->add_option("--replicates", o.replicates, "Studies per effect")->check(CLI::Range(1, 1000000))->capture_default_str();
  cmd->add_option("--seed", o.seed, "Random seed of the studies")->check(unsigned_integer())->capture_default_str();
  cmd->add_option("--spending", o.spending, "--until-decided's alpha spending, to compare (sweep run uses pocock)")
      ->check(CLI::IsMember({"pocock", "obrien-fleming"}))
      ->capture_default_str();
  return cmd;
}

Exit run_calibrate(const CalibrateOptions& o) {
  CalibrationSetup setup;
  if (!o.sweep.empty()) {
    std::unique_ptr<Store> store;
    const std::string sweep = sweep_to_read(o.results, o.sweep, store);
    const ReportInput input = load_report_input(*store, sweep, "test_loss", "");
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
  // each value of the list a number: CLI11's own splitting dropped an empty one ("1,,2")
  setup.effects.clear();
  for (const std::string& value : split(o.effects, ',')) {
    const auto v = validate::number(trim(value));
    if (!v || !std::isfinite(*v)) {
      throw Error("--effects " + o.effects + ": '" + value + "' is not a finite number — list multiples of δ, e.g. 0,0.5,1,2",
                  Exit::bad_input);
    }
    setup.effects.push_back(*v);
  }
  setup.replicates = o.replicates;
  setup.seed = o.seed;
  setup.spending = o.spending;
  if (setup.max_seeds < setup.seeds) {
    throw Error("calibrate: --max-seeds " + std::to_string(setup.max_seeds) + " is below --seeds " +
                    std::to_string(setup.seeds),
                Exit::bad_input);
  }
  const std::string table = calibration_markdown(setup, calibrate(setup));
  std::fputs(table.c_str(), stdout);
  return Exit::ok;
}

Exit run_report(const ReportOptions& o) {
  std::unique_ptr<Store> owned;
  const std::string sweep = sweep_to_read(o.results, o.sweep, owned);
  Store& store = *owned;
  ReportInput input = load_report_input(store, sweep, o.metric, o.noise_from);
  if (o.min_effect_given) {
    input.design.min_effect = parse_min_effect("--min-effect", o.min_effect, o.metric);
    input.min_effect_source = "--min-effect";
  }
  const Analysis analysis = analyze(input);
  const fs::path out = o.out.empty() ? fs::path("reports") / input.sweep : fs::path(o.out);
  std::error_code ec;
  if (fs::create_directories(out, ec); ec || !fs::is_directory(out)) {
    throw Error("cannot write the report into " + out.string() + ": " +
                    (ec ? ec.message() : std::string("it is not a folder")) + " — pass --out a folder you can write",
                // a file where a folder should be is the user's; a read-only or full disk is not
                ec && ec != std::errc::file_exists && ec != std::errc::not_a_directory ? Exit::io_error
                                                                                       : Exit::bad_input);
  }
  std::string warning;
  const std::vector<Plot> plots =
      draw_plots(input, analysis, out / (".plots-" + std::to_string(getpid())), warning);
  const std::vector<std::string> files = write_report(input, analysis, plots, out);

  const std::string shown = o.format == "markdown" ? render_markdown(input, analysis, plots)
                            : o.format == "csv"    ? render_csv(input, analysis)
                            : o.format == "json"   ? render_json(input, analysis)
                                                   : render_text(analysis);
  std::fputs(shown.c_str(), stdout);
  std::fflush(stdout);
  if (!warning.empty()) {
    std::fprintf(stderr, "sweep report: warning: %s\n", warning.c_str());
  }
  std::string list;
  for (const auto& f : files) {
    list += (list.empty() ? "" : ", ") + f;
  }
  std::fprintf(stderr, "sweep report: wrote %s in %s\n", list.c_str(), out.string().c_str());
  return Exit::ok;
}

}  // namespace sweep
