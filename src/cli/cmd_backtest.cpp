// `sweep backtest [SWEEP...]`: how often a ladder's small-scale predictions come true — each
// rung with 2 or more below it hidden and predicted from them (report/ladder/backtest.h), for the ladders
// named or every ladder in the results.
#include <cstdio>
#include <map>
#include <memory>
#include <set>

#include "cli/commands.h"
#include "cli/results.h"
#include "report/analyze.h"
#include "report/load.h"
#include "report/render/backtest_render.h"
#include "report/render/report_json.h"
#include "util/text.h"

namespace sweep {

CLI::App* setup_backtest(CLI::App& app, BacktestOptions& o) {
  CLI::App* cmd = app.add_subcommand(
      "backtest", "Hide each rung of a scale ladder, predict it from the rungs below, and say how often it came true");
  cmd->add_option("sweeps", o.sweeps, "Ladders to backtest (default: every sweep with a scale ladder)");
  cmd->add_option("--results", o.results, "Output root holding sweep.db")->capture_default_str();
  cmd->add_option("--metric", o.metric, "The metric the improvements are in")
      ->check(metric_name())
      ->capture_default_str();
  cmd->add_option("--format", o.format, "text (a table), markdown or json")
      ->check(CLI::IsMember(
          {to_string(OutputFormat::text), to_string(OutputFormat::markdown), to_string(OutputFormat::json)}))
      ->capture_default_str();
  return cmd;
}

Exit run_backtest(const BacktestOptions& o) {
  const std::unique_ptr<Store> store = commands::open_results(o.results);
  std::vector<std::string> names = o.sweeps;
  const bool every = names.empty();
  if (every) {
    for (const auto& s : store->sweeps()) {
      if (const auto info = store->sweep_info(s.name); info && info->ladder) {
        names.push_back(s.name);
      }
    }
    if (names.empty()) {
      throw Error("no sweep in " + database_path(o.results) + " has a scale ladder (a `scale:` section): nothing to "
                  "backtest", Exit::bad_input);
    }
  }
  std::vector<BacktestRow> rows;
  std::vector<std::string> without;  // every ladder: those that cannot be backtested, and why
  std::vector<std::string> partial;  // the ladders with runs still to finish
  std::vector<std::string> unscored;  // rungs not hidden, and ladders counted under another name
  std::set<std::string> seen;
  commands::StudiesSeen ladders_seen;
  for (const auto& name : names) {
    if (!seen.insert(name).second) {
      continue;  // a ladder named twice is backtested once: its rows would count twice in the pooled row
    }
    const ReportInput in = load_report_input(*store, name, parse_metric(o.metric), "");
    // one ladder under two names (a sweep file copied, run again): its runs counted once
    if (const std::string first = ladders_seen.same_runs_as(in); !first.empty()) {
      unscored.push_back(in.sweep + ": the same runs as " + first + " — counted once");
      continue;
    }
    if (!in.ladder) {
      throw Error("sweep " + in.sweep + " has no scale ladder (no `scale:` section in " + in.file +
                      "): a backtest hides a rung of a ladder and predicts it from the rungs below",
                  Exit::bad_input);
    }
    int64_t unfinished = 0;
    for (const auto& v : in.variants) {
      for (const auto& r : v.runs) {
        unfinished += !finished(r.status);
      }
    }
    if (unfinished > 0) {
      partial.push_back(in.sweep + ": " + plural(unfinished, "run") + " not finished (pending, running or failed) — "
                        "the backtest changes as they finish");
    }
    const Analysis a = analyze(in);
    const Backtest& b = a.ladder->backtest;
    for (const auto& u : b.unscored) {
      unscored.push_back(in.sweep + ": " + u);
    }
    if (b.rows.empty()) {
      if (!every) {
        throw Error("sweep " + in.sweep + " cannot be backtested on " + o.metric + ": " + b.why, Exit::bad_input);
      }
      without.push_back(in.sweep + ": " + b.why);
    }
    rows.insert(rows.end(), b.rows.begin(), b.rows.end());
  }
  if (rows.empty()) {
    throw Error("no ladder can be backtested on " + o.metric + " — " + join(without, "; "), Exit::bad_input);
  }
  std::string out;
  const OutputFormat format = choice_of<OutputFormat>(o.format);
  if (format == OutputFormat::json) {
    nlohmann::ordered_json j{{"metric", o.metric},
                             {"rows", json_array(rows)},
                             {"pooled", json_of(pool_backtest(rows))},
                             {"without", without},
                             {"partial", partial},
                             {"unscored", unscored}};
    out = j.dump(2) + "\n";
  } else {
    const Rows table = backtest_table(rows);
    out = (format == OutputFormat::markdown ? markdown_table(backtest_headers(), table)
                                            : text_table(backtest_headers(), table)) +
          "\n" + o.metric + ": " + backtest_sentence(rows) + ".\n";
    for (const auto& w : without) {
      out += "not backtested: " + w + "\n";
    }
    for (const auto& w : partial) {
      out += "partial: " + w + "\n";
    }
    for (const auto& w : unscored) {
      out += "not scored: " + w + "\n";
    }
  }
  std::fputs(out.c_str(), stdout);
  return Exit::ok;
}

}  // namespace sweep
