// `sweep replay --eliminate [SWEEP|REPORT...]`: finished studies replayed through --eliminate's rule
// (report/eliminate/replay.h) — which arms it would have stopped, when, against what the full
// design found, and the tokens saved. No training.
#include <cstdio>
#include <memory>
#include <set>

#include "cli/commands.h"
#include "cli/results.h"
#include "cli/run_eliminate.h"
#include "report/analyze.h"
#include "report/eliminate/replay.h"
#include "report/load.h"
#include "report/pool/from_report.h"
#include "util/text.h"

namespace sweep {

CLI::App* setup_replay(CLI::App& app, ReplayOptions& o) {
  CLI::App* cmd = app.add_subcommand(
      "replay", "Replay finished studies through a rule as if they were live: --eliminate, the arms it would have "
                "stopped early and the tokens saved (no training)");
  cmd->add_option("sweeps", o.sweeps,
                  "Sweeps by name, or reports by path (a report.json or its folder, with a '/') — default: every "
                  "sweep in the results; a ladder's rungs are studies each");
  cmd->add_option("--results", o.results, "Output root holding sweep.db")->capture_default_str();
  cmd->add_flag("--eliminate", o.eliminate, "Replay --eliminate's rule: losing arms stopped at the looks");
  commands::add_elimination_options(cmd, o.elimination);
  cmd->add_option("--format", o.format, "text (a Markdown table of the arms stopped) or json (every arm)")
      ->check(CLI::IsMember({to_string(OutputFormat::text), to_string(OutputFormat::json)}))
      ->capture_default_str();
  return cmd;
}

namespace {

// The studies named, replayed and printed.
Exit print_replay(const ReplayOptions& o) {
  if (!o.eliminate) {
    throw Error("replay: say which rule to replay — --eliminate", Exit::bad_input);
  }
  EliminationRule rule;
  static_cast<EliminationSettings&>(rule) = commands::elimination_settings(o.elimination);
  rule.delta = 1;  // each study's own, in replay()
  if (const std::string problem = rule_problem(rule); !problem.empty()) {
    throw Error("replay --eliminate: " + problem, Exit::bad_input);
  }
  std::unique_ptr<Store> store;
  std::vector<std::string> twice;
  const std::vector<commands::StudyArg> named = commands::studies_named(o.sweeps, o.results, store, twice);
  std::vector<std::string> notes;
  for (const std::string& name : twice) {
    notes.push_back(name + ": named twice — replayed once");
  }
  std::vector<ReplayStudy> studies;
  commands::StudiesSeen studies_seen;
  for (const auto& [name, report] : named) {
    std::vector<ReplayStudy> more;
    std::string first;
    if (report) {
      const nlohmann::json j = commands::read_report(*report);
      more = replay_studies(j, report->string());
      first = studies_seen.same_runs_as(report_runs(j), name);
    } else {
      const ReportInput in = load_report_input(*store, name, Metric{}, "");
      first = studies_seen.same_runs_as(in);
      more = first.empty() ? replay_studies(analyze(in), name) : more;
    }
    if (!first.empty()) {
      notes.push_back(name + ": the same runs as " + first + " — replayed once");
      continue;
    }
    studies.insert(studies.end(), more.begin(), more.end());
  }
  replay(studies, rule);
  if (choice_of<OutputFormat>(o.format) == OutputFormat::json) {
    nlohmann::ordered_json j = replay_json(studies, rule);
    j["notes"] = notes;
    std::fputs((j.dump(2) + "\n").c_str(), stdout);
  } else {
    std::string text = replay_text(studies, rule) + (notes.empty() ? "" : "\n");
    for (const std::string& n : notes) {
      text += "note: " + n + "\n";
    }
    std::fputs(text.c_str(), stdout);
  }
  return Exit::ok;
}

}  // namespace

Exit run_replay(const ReplayOptions& o) {
  try {
    return print_replay(o);
  } catch (const Error& e) {  // a sweep not found may be a report's folder written without a '/'
    throw Error(e.what() + commands::report_folder_hint(o.sweeps), e.code());
  }
}

}  // namespace sweep
