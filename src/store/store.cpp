#include "store/store.h"

#include <SQLiteCpp/SQLiteCpp.h>
#include <sqlite3.h>

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <memory>
#include <nlohmann/json.hpp>

#include "store/results_folder.h"
#include "store/sqlite_util.h"
#include "protocol/events.h"
#include "util/error.h"
#include "util/fs.h"
#include "util/text.h"

namespace sweep {

namespace store_detail {

Error db_error(const std::string& path, const SQLite::Exception& e) {
  const int code = e.getErrorCode() & 0xff;  // the primary code of an extended one
  const bool outside = code == SQLITE_FULL || code == SQLITE_IOERR || code == SQLITE_READONLY ||
                       code == SQLITE_CANTOPEN || code == SQLITE_PERM;
  if (outside) {
    return Error("database " + path + ": " + e.what() +
                     " — free space or fix the folder, then run again: nothing finished is lost",
                 Exit::io_error);
  }
  if (code == SQLITE_CONSTRAINT) {  // a value the schema refuses: sweep's own mistake, the database is whole
    return Error("database " + path + ": " + e.what() + " — sweep tried to store a value its schema refuses; "
                 "nothing of it was written and the database is whole (this is a bug in sweep: please report it)");
  }
  // Anything else is a database that is not what this sweep wrote: the run folders hold it all.
  return Error("database " + path + ": " + e.what() + " — the database is damaged: move it aside and rebuild it "
               "from the run folders with `sweep ingest " + fs::path(path).parent_path().string() + "`");
}

}  // namespace store_detail

using namespace store_detail;

namespace {

std::optional<double> opt_double(const SQLite::Column& c) {
  if (c.isNull()) {
    return std::nullopt;
  }
  return c.getDouble();
}

const char* k_run_columns =
    "run_id, status, attempts, init_seed, data_seed, repeat, steps, total_steps, tokens, test_loss, test_bpb, "
    "wall_seconds, tokens_per_s, last_loss, error, run_dir, pid, config, job, job_state, train_seconds, device";

// `root`: the results folder, against which a relative run folder is resolved.
RunRow read_run(SQLite::Statement& q, const fs::path& root, int offset = 0) {
  RunRow r;
  int i = offset;
  r.run_id = q.getColumn(i++).getString();
  // A state this version does not know (a newer sweep wrote it) reads as failed: shown, never run over.
  r.status = parse_run_state(q.getColumn(i++).getString()).value_or(RunState::failed);
  r.attempts = q.getColumn(i++).getInt64();
  r.init_seed = q.getColumn(i++).getInt64();
  r.data_seed = q.getColumn(i++).getInt64();
  r.repeat = q.getColumn(i++).getInt64();
  r.steps = q.getColumn(i++).getInt64();
  r.total_steps = q.getColumn(i++).getInt64();
  r.tokens = q.getColumn(i++).getInt64();
  r.test_loss = opt_double(q.getColumn(i++));
  r.test_bpb = opt_double(q.getColumn(i++));
  r.wall_seconds = opt_double(q.getColumn(i++));
  r.tokens_per_s = opt_double(q.getColumn(i++));
  r.last_loss = opt_double(q.getColumn(i++));
  r.error = q.getColumn(i++).getString();
  r.run_dir = (root / q.getColumn(i++).getString()).lexically_normal().string();  // an absolute one stays
  r.pid = q.getColumn(i++).getInt64();
  r.config_yaml = q.getColumn(i++).getString();
  r.job = q.getColumn(i++).getString();
  r.job_state = q.getColumn(i++).getString();
  r.train_seconds = opt_double(q.getColumn(i++));
  r.device = q.getColumn(i++).getString();  // NULL: ""
  return r;
}

}  // namespace

bool empty_database(const std::string& path) {
  std::error_code ec;
  return fs::is_regular_file(path, ec) && fs::file_size(path, ec) == 0 && !ec;
}

Error empty_database_error(const std::string& path) {
  const std::string folder = fs::path(path).parent_path().empty() ? "." : fs::path(path).parent_path().string();
  return Error("the database " + path + " is empty (0 bytes): it holds no sweep yet — run a sweep first (`sweep run "
               "FILE`), or `sweep ingest " + folder + "` to rebuild it from the run folders",
               Exit::bad_input);
}

Store::Store(const std::string& path, Access access)
    : m_path(path), m_root(fs::absolute(path).lexically_normal().parent_path()) {
  // A connection that cannot migrate: its schema must be this sweep's (`fix` says what to do).
  const auto require_schema = [&](const std::string& fix, Exit code) {
    if (schema_version() != k_schema_version) {
      throw Error("database " + path + " has schema version " + std::to_string(schema_version()) + ", this sweep " +
                      std::to_string(k_schema_version) + fix,
                  code);
    }
  };
  try {
    if (access != Access::write && fs::exists(path) && ::access(m_root.c_str(), W_OK) != 0) {
      // A folder this process cannot write (read-only media, another user's results): read the
      // database as it is — SQLite could not make its WAL index there.
      std::string uri = "file:";
      for (const char c : path) {
        uri += c == '%' ? "%25" : c == '?' ? "%3f" : c == '#' ? "%23" : std::string(1, c);
      }
      // NOMUTEX: a reading Store is used by one thread at a time (sweep serve's views hold a lock),
      // and SQLite's per-call mutex was a tenth of the time spent reading a large sweep's curves.
      m_db = std::make_unique<SQLite::Database>(uri + "?immutable=1",
                                                SQLite::OPEN_READONLY | SQLite::OPEN_URI | SQLite::OPEN_NOMUTEX);
      require_schema(", and its folder cannot be written — run a sweep command where it can, to migrate it",
                     Exit::io_error);
      return;
    }
    if (access == Access::reader) {
      // Read-only, beside a writer: SQLite keeps the WAL index in the -shm file the writer made.
      // A busy timeout covers the moment a checkpoint holds it.
      if (!fs::exists(path)) {
        throw Error("no database at " + path + " — run a sweep first (`sweep run FILE`) or pass --results DIR",
                    Exit::bad_input);
      }
      if (empty_database(path)) {
        throw empty_database_error(path);
      }
      m_db = std::make_unique<SQLite::Database>(path, SQLite::OPEN_READONLY | SQLite::OPEN_NOMUTEX, 10000);
      require_schema(" — run `sweep ls --results " + m_root.string() + "` once to migrate it, then serve it",
                     Exit::bad_input);
      return;
    }
    fs::create_directories(fs::path(path).parent_path().empty() ? fs::path(".") : fs::path(path).parent_path());
    m_db = std::make_unique<SQLite::Database>(path, SQLite::OPEN_READWRITE | SQLite::OPEN_CREATE, 10000);
    m_db->exec("PRAGMA journal_mode=WAL");
    m_db->exec("PRAGMA synchronous=NORMAL");
    m_db->exec("PRAGMA foreign_keys=ON");
    migrate();
  } catch (const SQLite::Exception& e) {
    throw db_error(path, e);
  }
}

Store::~Store() = default;

void Store::record_sweep(const SweepSpec& spec) try {
  SQLite::Transaction tx(*m_db);
  SQLite::Statement sweep(*m_db,
                          "INSERT INTO sweeps(name, file, spec, baseline, updated_at, axes, design) VALUES (?, ?, ?, ?, ?, ?, ?) "
                          "ON CONFLICT(name) DO UPDATE SET file=excluded.file, spec=excluded.spec, "
                          "baseline=excluded.baseline, updated_at=excluded.updated_at, axes=excluded.axes, "
                          "design=excluded.design");
  nlohmann::json axes = nlohmann::json::array();
  for (const auto& a : spec.axes) {
    axes.push_back({{"kind", a.kind}, {"keys", a.keys}});
    if (a.kind == AxisKind::scale && spec.ladder) {
      axes.back()["ladder"] = spec.ladder->to_json();
    }
  }
  sweep.bind(1, spec.name);
  sweep.bind(2, spec.file);
  sweep.bind(3, spec.text);
  sweep.bind(4, spec.baseline);
  sweep.bind(5, now());
  sweep.bind(6, axes.dump());
  nlohmann::json design{{"first", spec.design.first}, {"max_seeds", spec.design.max_seeds}};
  if (spec.design.sequential()) {
    design["spending"] = spec.design.spending;
    design["interventions"] = static_cast<int64_t>(spec.variants.size()) - 1;
    nlohmann::json first = nlohmann::json::object();
    for (const auto& r : spec.runs) {
      if (!first.contains(r.variant)) {
        first[r.variant] = r.run_id;
      }
    }
    design["variant_runs"] = first;
  }
  if (spec.design.min_effect > 0) {
    design["min_effect"] = spec.design.min_effect;
  }
  if (spec.design.better_by > 0) {
    design["better_by"] = spec.design.better_by;
    design["better_by_alpha"] = spec.design.better_by_alpha;
  }
  if (spec.design.eliminate) {
    design["eliminate"] = spec.design.eliminate->to_json();
  }
  sweep.bind(7, design.dump());
  sweep.exec();
  // The sweep's membership is replaced as a whole: a variant removed from the file leaves it.
  SQLite::Statement clear_variants(*m_db, "DELETE FROM variants WHERE sweep = ?");
  clear_variants.bind(1, spec.name);
  clear_variants.exec();
  SQLite::Statement kept_references(*m_db, "SELECT name FROM reference_scores WHERE sweep = ?");
  kept_references.bind(1, spec.name);
  std::vector<std::string> dropped;
  while (kept_references.executeStep()) {
    const std::string name = kept_references.getColumn(0).getString();
    if (std::none_of(spec.references.begin(), spec.references.end(), [&](const ReferenceModel& r) { return r.name == name; })) {
      dropped.push_back(name);
    }
  }
  for (const auto& name : dropped) {  // a reference the file no longer names is not shown
    SQLite::Statement drop(*m_db, "DELETE FROM reference_scores WHERE sweep = ? AND name = ?");
    drop.bind(1, spec.name);
    drop.bind(2, name);
    drop.exec();
  }
  SQLite::Statement clear_members(*m_db, "DELETE FROM sweep_runs WHERE sweep = ?");
  clear_members.bind(1, spec.name);
  clear_members.exec();
  for (size_t i = 0; i < spec.variants.size(); ++i) {
    nlohmann::ordered_json overrides = nlohmann::ordered_json::object();
    for (const auto& o : spec.variants[i].overrides) {
      overrides[o.path] = flow_yaml(o.value);
    }
    const Variant& v = spec.variants[i];
    SQLite::Statement q(*m_db,
                        "INSERT INTO variants(sweep, name, position, overrides, intervention, parts, axes) "
                        "VALUES (?, ?, ?, ?, ?, ?, ?)");
    q.bind(1, spec.name);
    q.bind(2, v.name);
    q.bind(3, static_cast<int64_t>(i));
    q.bind(4, overrides.dump());
    q.bind(5, v.intervention.empty() ? v.name : v.intervention);
    q.bind(6, nlohmann::json(v.parts).dump());
    q.bind(7, v.axes.dump());
    q.exec();
  }
  SQLite::Statement run(*m_db,
                        "INSERT INTO runs(run_id, config, init_seed, data_seed, repeat, status, run_dir, updated_at) "
                        "VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT(run_id) DO NOTHING");
  SQLite::Statement member(*m_db, "INSERT OR IGNORE INTO sweep_runs(sweep, variant, run_id) VALUES (?, ?, ?)");
  for (const auto& r : spec.runs) {
    run.bind(1, r.run_id);
    run.bind(2, r.config.to_yaml());
    run.bind(3, r.config.seeds.init);
    run.bind(4, r.config.seeds.data);
    run.bind(5, r.repeat);
    run.bind(6, to_string(RunState::pending));
    run.bind(7, run_folder_of(r.run_id));  // relative to the results folder
    run.bind(8, now());
    run.exec();
    run.reset();
    member.bind(1, spec.name);
    member.bind(2, r.variant);
    member.bind(3, r.run_id);
    member.exec();
    member.reset();
  }
  tx.commit();
} catch (const SQLite::Exception& e) {
  throw db_error(m_path, e);
}

std::optional<RunRow> Store::run(const std::string& run_id) try {
  SQLite::Statement q(*m_db, std::string("SELECT ") + k_run_columns + " FROM runs WHERE run_id = ?");
  q.bind(1, run_id);
  if (!q.executeStep()) {
    return std::nullopt;
  }
  return read_run(q, m_root);
} catch (const SQLite::Exception& e) {
  throw db_error(m_path, e);
}

std::vector<SweepRunRow> Store::sweep_runs(const std::string& sweep) try {
  SQLite::Statement q(*m_db, std::string("SELECT s.variant, ") + k_run_columns +
                                 " FROM sweep_runs s JOIN runs USING (run_id) JOIN variants v"
                                 " ON v.sweep = s.sweep AND v.name = s.variant WHERE s.sweep = ?"
                                 " ORDER BY v.position, init_seed, data_seed, repeat");
  q.bind(1, sweep);
  std::vector<SweepRunRow> out;
  while (q.executeStep()) {
    out.push_back({q.getColumn(0).getString(), read_run(q, m_root, 1)});
  }
  return out;
} catch (const SQLite::Exception& e) {
  throw db_error(m_path, e);
}

std::vector<SweepSummary> Store::sweeps() try {
  std::vector<SweepSummary> out;
  SQLite::Statement q(*m_db, "SELECT name, file FROM sweeps ORDER BY updated_at DESC");
  while (q.executeStep()) {
    out.push_back({q.getColumn(0).getString(), q.getColumn(1).getString()});
  }
  return out;
} catch (const SQLite::Exception& e) {
  throw db_error(m_path, e);
}

std::optional<SweepInfo> Store::sweep_info(const std::string& sweep) try {
  SQLite::Statement q(*m_db, "SELECT name, file, spec, baseline, axes, design FROM sweeps WHERE name = ?");
  q.bind(1, sweep);
  if (!q.executeStep()) {
    return std::nullopt;
  }
  SweepInfo info{q.getColumn(0).getString(), q.getColumn(1).getString(), q.getColumn(2).getString(),
                 q.getColumn(3).getString(), {}, {}, {}, {}};
  const nlohmann::json design = nlohmann::json::parse(q.getColumn(5).getString());
  info.design.first = design.value("first", int64_t{0});
  info.design.max_seeds = design.value("max_seeds", int64_t{0});
  info.design.min_effect = design.value("min_effect", 0.0);
  info.design.better_by = design.value("better_by", 0.0);
  info.design.better_by_alpha = design.value("better_by_alpha", info.design.better_by_alpha);
  // Sequential designs recorded before the spending was (commits c41573a–49ee4ff) used O'Brien–Fleming's.
  const std::string spending = design.value("spending", info.design.sequential() ? "obrien-fleming" : "pocock");
  info.design.spending = parse_choice<Spending>(spending).value_or(Spending::pocock);
  info.design.interventions = design.value("interventions", int64_t{0});
  info.design.variant_runs = design.value("variant_runs", std::map<std::string, std::string>{});
  if (design.contains("eliminate")) {
    info.design.eliminate = EliminationDesign::from_json(design["eliminate"]);
  }
  for (const auto& a : nlohmann::json::parse(q.getColumn(4).getString())) {
    const std::string kind = a.at("kind").get<std::string>();
    const std::optional<AxisKind> known = parse_choice<AxisKind>(kind);
    if (!known) {
      throw Error("sweep " + sweep + " in the database has an axis of kind '" + kind + "', which this sweep does not " +
                      "know (one of " + join(choice_names<AxisKind>(), ", ") + ") — a newer sweep wrote it",
                  Exit::bad_input);
    }
    info.axes.push_back({*known, a.at("keys").get<std::vector<std::string>>()});
    if (a.contains("ladder")) {
      info.ladder = Ladder::from_json(a["ladder"]);
    }
  }
  SQLite::Statement v(*m_db, "SELECT name, intervention, parts, axes FROM variants WHERE sweep = ? ORDER BY position");
  v.bind(1, sweep);
  while (v.executeStep()) {
    Variant variant;
    variant.name = v.getColumn(0).getString();
    // Sweeps recorded before schema 3 have no intervention: each variant is its own.
    variant.intervention = v.getColumn(1).getString().empty() ? variant.name : v.getColumn(1).getString();
    variant.parts = nlohmann::json::parse(v.getColumn(2).getString()).get<std::vector<std::string>>();
    variant.axes = nlohmann::ordered_json::parse(v.getColumn(3).getString());
    info.variants.push_back(variant);
  }
  return info;
} catch (const SQLite::Exception& e) {
  throw db_error(m_path, e);
}

void Store::record_reference(const std::string& sweep, const ReferenceScore& r) try {
  SQLite::Statement q(*m_db,
                      "INSERT OR REPLACE INTO reference_scores(sweep, name, model, model_sha256, dataset, loss, bpb, tokens, "
                      "parameters, block_size, scored_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)");
  q.bind(1, sweep);
  q.bind(2, r.name);
  q.bind(3, r.model);
  q.bind(4, r.model_sha256);
  q.bind(5, r.dataset);
  q.bind(6, r.loss);
  if (r.bpb) {
    q.bind(7, *r.bpb);
  } else {
    q.bind(7);
  }
  q.bind(8, r.tokens);
  q.bind(9, r.parameters);
  q.bind(10, r.block_size);
  q.bind(11, now());
  q.exec();
} catch (const SQLite::Exception& e) {
  throw db_error(m_path, e);
}

std::vector<ReferenceScore> Store::references(const std::string& sweep) try {
  SQLite::Statement q(*m_db,
                      "SELECT name, model, model_sha256, dataset, loss, bpb, tokens, parameters, block_size FROM "
                      "reference_scores WHERE sweep = ? ORDER BY loss");
  q.bind(1, sweep);
  std::vector<ReferenceScore> out;
  while (q.executeStep()) {
    out.push_back({q.getColumn(0).getString(), q.getColumn(1).getString(), q.getColumn(2).getString(),
                   q.getColumn(3).getString(), q.getColumn(4).getDouble(), opt_double(q.getColumn(5)),
                   q.getColumn(6).getInt64(), q.getColumn(7).getInt64(), q.getColumn(8).getInt64()});
  }
  return out;
} catch (const SQLite::Exception& e) {
  throw db_error(m_path, e);
}

// A large sweep's curves are millions of rows: read through SQLite's C API, where SQLiteCpp's
// Column copied a shared pointer per value (a third of the time `sweep serve` took to read them).
std::vector<MetricPoint> Store::metrics(const std::string& run_id, const std::string& split) {
  std::vector<MetricPoint> out;
  metrics(run_id, split, [&](const MetricPoint& p) { out.push_back(p); });
  return out;
}

void Store::metrics(const std::string& run_id, const std::string& split,
                    const std::function<void(const MetricPoint&)>& each) try {
  sqlite3* db = m_db->getHandle();
  sqlite3_stmt* raw = nullptr;
  if (const int rc = sqlite3_prepare_v2(db,
                                        "SELECT step, tokens, loss, grad_norm, moe, tokens_per_s, lr FROM metrics "
                                        "WHERE run_id = ? AND split = ? ORDER BY step",
                                        -1, &raw, nullptr);
      rc != SQLITE_OK) {
    throw SQLite::Exception(db, rc);
  }
  const std::unique_ptr<sqlite3_stmt, int (*)(sqlite3_stmt*)> q(raw, &sqlite3_finalize);
  sqlite3_bind_text(q.get(), 1, run_id.data(), static_cast<int>(run_id.size()), SQLITE_STATIC);
  sqlite3_bind_text(q.get(), 2, split.data(), static_cast<int>(split.size()), SQLITE_STATIC);
  const auto number = [&](int i) -> std::optional<double> {
    if (sqlite3_column_type(q.get(), i) == SQLITE_NULL) {
      return std::nullopt;
    }
    return sqlite3_column_double(q.get(), i);
  };
  MetricPoint p;
  int rc = SQLITE_OK;
  while ((rc = sqlite3_step(q.get())) == SQLITE_ROW) {
    p.moe_load_max.clear();
    p.step = sqlite3_column_int64(q.get(), 0);
    p.tokens = sqlite3_column_int64(q.get(), 1);
    p.loss = number(2);
    p.grad_norm = number(3);
    p.lr = number(6);
    p.tokens_per_s = number(5);
    if (sqlite3_column_type(q.get(), 4) != SQLITE_NULL) {  // every layer's number, or none when one is not a number
      const auto* text = reinterpret_cast<const char*>(sqlite3_column_text(q.get(), 4));
      const auto moe = nlohmann::json::parse(text, text + sqlite3_column_bytes(q.get(), 4), nullptr, false);
      if (moe.is_object() && moe.contains("load_max") && moe["load_max"].is_array()) {
        for (const auto& v : moe["load_max"]) {
          p.moe_load_max.push_back(v.is_number() ? v.get<double>() : std::nan(""));
        }
        if (!std::all_of(p.moe_load_max.begin(), p.moe_load_max.end(), [](double x) { return std::isfinite(x); })) {
          p.moe_load_max.clear();
        }
      }
    }
    each(p);
  }
  if (rc != SQLITE_DONE) {
    throw SQLite::Exception(db, rc);
  }
} catch (const SQLite::Exception& e) {
  throw db_error(m_path, e);
}

std::vector<std::pair<int64_t, double>> Store::test_blocks(const std::string& run_id) try {
  SQLite::Statement q(*m_db, "SELECT test_blocks FROM runs WHERE run_id = ?");
  q.bind(1, run_id);
  std::vector<std::pair<int64_t, double>> out;
  if (q.executeStep() && !q.getColumn(0).isNull()) {
    for (const auto& b : nlohmann::json::parse(q.getColumn(0).getString())) {
      out.emplace_back(b[0].get<int64_t>(), b[1].get<double>());
    }
  }
  return out;
} catch (const SQLite::Exception& e) {
  throw db_error(m_path, e);
}

std::vector<Segment> Store::segments(const std::string& run_id) try {
  SQLite::Statement q(*m_db,
                      "SELECT started, last_event, step, code, numerics FROM segments WHERE run_id = ? ORDER BY started");
  q.bind(1, run_id);
  std::vector<Segment> out;
  while (q.executeStep()) {
    Segment s;
    s.started = q.getColumn(0).getDouble();
    s.last_event = q.getColumn(1).getDouble();
    s.step = q.getColumn(2).getInt64();
    s.code = q.getColumn(3).getString();
    if (!q.getColumn(4).isNull()) {
      s.numerics = q.getColumn(4).getInt64();
    }
    out.push_back(s);
  }
  return out;
} catch (const SQLite::Exception& e) {
  throw db_error(m_path, e);
}

void Store::mark_launched(const std::string& run_id, int64_t pid, bool counts_as_attempt, const std::string& device) try {
  SQLite::Statement q(*m_db,
                      "UPDATE runs SET status = ?, pid = ?, attempts = attempts + ?, error = '', "
                      "job = '', job_state = '', device = ?, updated_at = ? WHERE run_id = ?");
  q.bind(1, to_string(RunState::running));
  q.bind(2, pid);
  q.bind(3, counts_as_attempt ? 1 : 0);
  q.bind(4, device);
  q.bind(5, now());
  q.bind(6, run_id);
  q.exec();
} catch (const SQLite::Exception& e) {
  throw db_error(m_path, e);
}

void Store::set_job(const std::string& run_id, const std::string& job, const std::string& state) try {
  SQLite::Statement q(*m_db, "UPDATE runs SET job = ?, job_state = ?, updated_at = ? WHERE run_id = ?");
  q.bind(1, job);
  q.bind(2, state);
  q.bind(3, now());
  q.bind(4, run_id);
  q.exec();
} catch (const SQLite::Exception& e) {
  throw db_error(m_path, e);
}

void Store::note_attempts(const std::string& run_id, int64_t attempts) try {
  SQLite::Statement q(*m_db, "UPDATE runs SET attempts = MAX(attempts, ?) WHERE run_id = ?");
  q.bind(1, attempts);
  q.bind(2, run_id);
  q.exec();
} catch (const SQLite::Exception& e) {
  throw db_error(m_path, e);
}

void Store::set_status(const std::string& run_id, RunState status, const std::string& error) try {
  SQLite::Statement q(*m_db, "UPDATE runs SET status = ?, error = ?, pid = 0, updated_at = ? WHERE run_id = ?");
  q.bind(1, to_string(status));
  q.bind(2, error);
  q.bind(3, now());
  q.bind(4, run_id);
  q.exec();
} catch (const SQLite::Exception& e) {
  throw db_error(m_path, e);
}

std::string Store::stored_dir(const std::string& run_dir) const {
  // Relative to the results folder when inside it (the folder then moves as a whole), else absolute.
  const fs::path dir = fs::absolute(run_dir).lexically_normal();
  const fs::path inside = dir.lexically_relative(m_root);
  return !inside.empty() && *inside.begin() != ".." ? inside.string() : dir.string();
}

void Store::ensure_run(const std::string& run_id, const std::string& config_yaml, const std::string& run_dir,
                       int64_t init_seed, int64_t data_seed) try {
  SQLite::Statement q(*m_db,
                      "INSERT INTO runs(run_id, config, init_seed, data_seed, status, run_dir, updated_at) "
                      "VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT(run_id) DO NOTHING");
  q.bind(1, run_id);
  q.bind(2, config_yaml);
  q.bind(3, init_seed);
  q.bind(4, data_seed);
  q.bind(5, to_string(RunState::pending));
  q.bind(6, stored_dir(run_dir));
  q.bind(7, now());
  q.exec();
} catch (const SQLite::Exception& e) {
  throw db_error(m_path, e);
}

void Store::forget_events(const std::string& run_id) try {
  SQLite::Transaction tx(*m_db);
  for (const char* sql : {"DELETE FROM metrics WHERE run_id = ?", "DELETE FROM segments WHERE run_id = ?",
                          "UPDATE runs SET status = 'pending', error = '', steps = 0, total_steps = 0, tokens = 0, "
                          "test_loss = NULL, test_bpb = NULL, test_blocks = NULL, last_loss = NULL, wall_seconds = NULL, "
                          "train_seconds = NULL, tokens_per_s = NULL WHERE run_id = ?"}) {
    SQLite::Statement q(*m_db, sql);
    q.bind(1, run_id);
    q.exec();
  }
  tx.commit();
} catch (const SQLite::Exception& e) {
  throw db_error(m_path, e);
}

void Store::set_run_dir(const std::string& run_id, const std::string& run_dir) try {
  SQLite::Statement q(*m_db, "UPDATE runs SET run_dir = ?, updated_at = ? WHERE run_id = ?");
  q.bind(1, stored_dir(run_dir));
  q.bind(2, now());
  q.bind(3, run_id);
  q.exec();
} catch (const SQLite::Exception& e) {
  throw db_error(m_path, e);
}

int64_t Store::data_version() try { return m_db->execAndGet("PRAGMA data_version").getInt64(); } catch (const SQLite::Exception& e) {
  throw db_error(m_path, e);
}

std::string Store::integrity_check() { return m_db->execAndGet("PRAGMA integrity_check").getString(); }

int64_t Store::metric_rows(const std::string& run_id) try {
  SQLite::Statement q(*m_db, "SELECT COUNT(*) FROM metrics WHERE run_id = ?");
  q.bind(1, run_id);
  q.executeStep();
  return q.getColumn(0).getInt64();
} catch (const SQLite::Exception& e) {
  throw db_error(m_path, e);
}

}  // namespace sweep
