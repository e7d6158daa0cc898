// `sweep pool [SWEEP|REPORT...]`: each intervention's effect pooled across the settings that measured it
// (report/pool/pool.h) — the sweeps and reports named, or every sweep in the results; a ladder's rungs are
// settings each.
#include <algorithm>
#include <cstdio>
#include <memory>
#include <set>

#include "cli/commands.h"
#include "cli/results.h"
#include "report/analyze.h"
#include "report/load.h"
#include "report/render/plots.h"
#include "report/pool/from_report.h"
#include "report/render/pool_render.h"
#include "util/fs.h"
#include "util/text.h"

namespace sweep {

CLI::App* setup_pool(CLI::App& app, PoolOptions& o) {
  CLI::App* cmd = app.add_subcommand(
      "pool", "Pool each intervention across the settings that measured it: does its effect carry over, and what "
              "will it be in a new setting?");
  cmd->add_option("sweeps", o.sweeps,
                  "Sweeps to pool, by name, or reports by path (a report.json or its folder, with a '/': "
                  "reports/ladder) — default: every sweep in the results; a ladder's rungs are settings each");
  cmd->add_option("--results", o.results, "Output root holding sweep.db")->capture_default_str();
  cmd->add_option("--metric", o.metric, "The metric every setting is compared on")
      ->check(metric_name())
      ->capture_default_str();
  cmd->add_option("--out", o.out, "Also write pool.md, pool.json and the forest plot pool.svg into this folder");
  cmd->add_option("--format", o.format, "text, markdown or json")
      ->check(CLI::IsMember(
          {to_string(OutputFormat::text), to_string(OutputFormat::markdown), to_string(OutputFormat::json)}))
      ->capture_default_str();
  return cmd;
}

namespace {

Measured read_report(const fs::path& path, const Metric& metric, commands::StudiesSeen& seen, std::string& copy) {
  const nlohmann::json report = commands::read_report(path);
  Measured m = measure_report(report, path.string(), metric);
  copy = seen.same_runs_as(report_runs(report), report["sweep"].get<std::string>() + " (" + path.string() + ")");
  return m;
}

// Two studies of one name (a report and a sweep, two reports of sweeps named alike): the later one's
// settings named with where they came from, so that no two read alike.
Measured labelled_apart(Measured m, std::set<std::string>& labels, const std::string& from) {
  const bool clash = std::any_of(m.settings.begin(), m.settings.end(),
                                 [&](const std::string& s) { return labels.count(s) > 0; });
  for (std::string& s : m.settings) {
    s = clash ? s + " (" + from + ")" : s;
    labels.insert(s);
  }
  for (PoolSetting& p : m.measured) {
    p.setting = clash ? p.setting + " (" + from + ")" : p.setting;
  }
  return m;
}

// The pool of the studies named, printed (and written with --out).
Exit print_pool(const PoolOptions& o) {
  const bool every = o.sweeps.empty();
  std::unique_ptr<Store> store;
  std::vector<std::string> twice;
  const std::vector<commands::StudyArg> studies = commands::studies_named(o.sweeps, o.results, store, twice);
  if (every && studies.empty()) {
    throw Error("no sweep in " + database_path(o.results) + ": nothing to pool", Exit::bad_input);
  }
  if (!o.out.empty()) {  // the folder written last is checked first: nothing half-done after the work
    std::error_code ec;
    fs::create_directories(o.out, ec);
    if (ec || !fs::is_directory(o.out)) {
      throw Error("--out " + o.out + ": cannot be a folder to write into (" + (ec ? ec.message() : "not a folder") +
                      ") — name another",
                  Exit::bad_input);
    }
  }
  const Metric metric = parse_metric(o.metric);
  std::vector<Measured> measured;
  std::vector<std::string> skipped;
  for (const std::string& name : twice) {
    skipped.push_back(name + ": named twice — pooled once");
  }
  commands::StudiesSeen studies_seen;
  std::set<std::string> labels;  // the settings' names so far
  for (const auto& [name, report] : studies) {
    std::string first;
    if (report) {
      Measured m = read_report(*report, metric, studies_seen, first);
      if (first.empty()) {
        measured.push_back(labelled_apart(std::move(m), labels, report->string()));
      } else {
        skipped.push_back(name + ": the same runs as " + first + " — pooled once");
      }
      continue;
    }
    const ReportInput in = load_report_input(*store, name, metric, "");
    if (first = studies_seen.same_runs_as(in); !first.empty()) {
      skipped.push_back(in.sweep + ": the same runs as " + first + " — pooled once");
      continue;
    }
    const Analysis a = analyze(in);
    if (!every && !measures_anything(a)) {  // every sweep: measure_study leaves it out and says so
      throw Error("sweep " + in.sweep + " has no finished baseline run with " + o.metric +
                      " — finish its runs (sweep run), pool on a metric it records (--metric), or leave it out",
                  Exit::bad_input);
    }
    measured.push_back(labelled_apart(measure_study({&in, &a}), labels, "results"));
  }
  Pool pool = pool_measured(measured, metric);
  pool.notes.insert(pool.notes.begin(), skipped.begin(), skipped.end());
  const OutputFormat format = choice_of<OutputFormat>(o.format);
  const std::string out = format == OutputFormat::json       ? pool_json(pool).dump(2) + "\n"
                          : format == OutputFormat::markdown ? pool_markdown(pool)
                                                             : pool_text(pool);
  std::fputs(out.c_str(), stdout);
  if (!o.out.empty()) {
    write_file_atomic(fs::path(o.out) / "pool.md", pool_markdown(pool));
    write_file_atomic(fs::path(o.out) / "pool.json", pool_json(pool).dump(2) + "\n");
    std::string warning;
    const std::vector<Plot> plots = draw_pool_plot(pool, fs::path(o.out) / ".pool-plots", warning);
    for (const auto& p : plots) {
      write_file_atomic(fs::path(o.out) / p.file, p.svg);
    }
    std::fprintf(stderr, "sweep pool: wrote pool.md, pool.json%s in %s%s\n", plots.empty() ? "" : ", pool.svg",
                 o.out.c_str(), warning.empty() ? "" : (" — " + warning).c_str());
  }
  return Exit::ok;
}

}  // namespace

Exit run_pool(const PoolOptions& o) {
  std::error_code ec;
  const bool new_out = !o.out.empty() && !fs::exists(o.out, ec);
  try {
    return print_pool(o);
  } catch (const Error& e) {
    if (new_out) {
      fs::remove(o.out, ec);  // the --out folder this run made, still empty: a refused run leaves nothing
    }
    // a sweep not found may be a report's folder written without a '/'
    throw Error(e.what() + commands::report_folder_hint(o.sweeps), e.code());
  }
}

}  // namespace sweep
