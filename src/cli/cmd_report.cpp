// `sweep report`: ranks a sweep's variants against its baseline and writes the report files.
#include <cmath>
#include <cstdio>
#include <memory>
#include <unistd.h>

#include "cli/commands.h"
#include "cli/results.h"
#include "report/analyze.h"
#include "report/load.h"
#include "report/render/plots.h"
#include "report/render/render.h"
#include "store/store.h"
#include "util/fs.h"
#include "util/text.h"

namespace sweep {

using commands::sweep_to_read;

namespace {

// --min-effect or --better-by: a number above 0 (`what` it is, for the error)
double parse_margin(const std::string& option, const std::string& text, const std::string& metric, const std::string& what) {
  size_t used = 0;
  double v = std::nan("");
  try {
    v = std::stod(text, &used);
  } catch (const std::exception&) {
  }
  if (text.empty() || text.find_first_of("xX") != std::string::npos || used != text.size() || !std::isfinite(v) ||
      v <= 0) {
    throw Error(option + " " + printable(text) + ": must be a number above 0 — " + what + ", in " +
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
  cmd->add_option("--metric", o.metric, "What to rank by: test_loss, test_bpb, val_loss or val_lastK (the mean of the last K validation evaluations)")
      ->check(metric_name())
      ->capture_default_str();
  cmd->add_option("--out", o.out, "Folder for the report files (default: reports/<sweep>)");
  cmd->add_option("--noise-from", o.noise_from, "A sweep whose baseline's seeds give σ (e.g. a noise study)");
  cmd->add_option("--min-effect", o.min_effect,
                  "The smallest improvement that matters, in the metric's units: verdicts become better, worse, "
                  "equivalent (within ±it) or undecided (default: the sweep file's min_effect)")
      ->each([&o](const std::string&) { o.min_effect_given = true; });
  cmd->add_option("--better-by", o.better_by,
                  "A margin in the metric's units: a better variant is also tested for an improvement of more than "
                  "it, one-sided (default: the sweep file's better_by), e.g. --better-by 0.005 --better-by-alpha 0.01")
      ->each([&o](const std::string&) { o.better_by_given = true; });
  cmd->add_option("--better-by-alpha", o.better_by_alpha, "--better-by's level (default: the sweep file's, else 0.05)")
      ->check(between(0.0001, 0.5));
  cmd->add_option("--format", o.format, "What to print: text (the ranked table), markdown, csv or json")
      ->check(CLI::IsMember(choice_names<OutputFormat>()))
      ->capture_default_str();
  return cmd;
}

Exit run_report(const ReportOptions& o) {
  std::unique_ptr<Store> owned;
  const std::string sweep = sweep_to_read(o.results, o.sweep, owned);
  Store& store = *owned;
  ReportInput input = load_report_input(store, sweep, parse_metric(o.metric), o.noise_from);
  if (o.min_effect_given) {
    input.design.min_effect = parse_margin("--min-effect", o.min_effect, o.metric, "the smallest improvement that matters");
    input.min_effect_source = MinEffectSource::option;
  }
  input.better_by_option = o.better_by_given || o.better_by_alpha > 0;
  if (o.better_by_given) {
    input.design.better_by = parse_margin("--better-by", o.better_by, o.metric, "the margin an improvement must be shown to exceed");
  }
  if (o.better_by_alpha > 0) {
    if (!(input.design.better_by > 0)) {
      throw Error("--better-by-alpha " + format_number("%g", o.better_by_alpha) + ": no margin to test it at on " + o.metric +
                      " — pass --better-by M too (or set better_by in the sweep file), e.g. --better-by 0.005",
                  Exit::bad_input);
    }
    input.design.better_by_alpha = o.better_by_alpha;
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

  const OutputFormat format = choice_of<OutputFormat>(o.format);
  const std::string shown = format == OutputFormat::markdown ? render_markdown(input, analysis, plots)
                            : format == OutputFormat::csv    ? render_csv(input, analysis)
                            : format == OutputFormat::json   ? render_json(input, analysis)
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
