#include "store/store.h"

#include <SQLiteCpp/SQLiteCpp.h>
#include <sqlite3.h>

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <memory>
#include <type_traits>
#include <nlohmann/json.hpp>

#include "protocol/event_check.h"
#include "protocol/events.h"
#include "protocol/json_line.h"
#include "util/error.h"
#include "util/fs.h"
#include "util/text.h"

namespace sweep {

namespace field = events::field;

namespace {

// A database error in one line naming the file; a full disk, a read-only folder or an I/O error
// exits io_error (nothing is lost: the transaction rolled back, the runs resume).
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

double now() { return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count(); }

// A field of an event another process wrote: its value, or `fallback` when it is missing or of
// another type. A malformed line is data to skip, never a failed ingest.
template <typename T>
T field_or(const nlohmann::json& ev, const char* key, T fallback) {
  const auto it = ev.find(key);
  if (it == ev.end()) {
    return fallback;
  }
  if constexpr (std::is_same_v<T, std::string>) {
    return it->is_string() ? it->get<std::string>() : fallback;
  } else if constexpr (std::is_integral_v<T>) {
    return it->is_number_integer() ? it->get<T>() : fallback;
  } else {
    return it->is_number() ? it->get<T>() : fallback;
  }
}

// A JSON number, or a non-finite value written as a string: (value, status).
std::pair<std::optional<double>, std::string> number(const nlohmann::json& v) {
  if (v.is_number()) {
    return {v.get<double>(), "finite"};
  }
  if (v.is_string()) {
    return {std::nullopt, v.get<std::string>()};
  }
  return {std::nullopt, "missing"};
}

template <typename T>
void bind_opt(SQLite::Statement& q, int index, const std::optional<T>& v) {
  if (v) {
    q.bind(index, *v);
  } else {
    q.bind(index);
  }
}

std::optional<double> opt_double(const SQLite::Column& c) {
  if (c.isNull()) {
    return std::nullopt;
  }
  return c.getDouble();
}

// An end event's test blocks as stored: every entry [tokens ≥ 1, finite nats ≥ 0], else none.
std::optional<std::string> valid_blocks(const nlohmann::json& ev) {
  const auto it = ev.find(events::field::test_blocks);
  if (it == ev.end() || !it->is_array() || it->empty() || it->size() > 100000) {
    return std::nullopt;
  }
  for (const auto& b : *it) {
    if (!b.is_array() || b.size() != 2 || !b[0].is_number_integer() || b[0].get<int64_t>() < 1 || !b[1].is_number() ||
        !std::isfinite(b[1].get<double>()) || b[1].get<double>() < 0) {
      return std::nullopt;
    }
  }
  return it->dump();
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
    run.bind(7, (fs::path("runs") / r.run_id).string());  // relative to the results folder
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
  info.design.spending = design.value("spending", info.design.sequential() ? "obrien-fleming" : info.design.spending);
  info.design.interventions = design.value("interventions", int64_t{0});
  info.design.variant_runs = design.value("variant_runs", std::map<std::string, std::string>{});
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

void Store::ensure_run(const std::string& run_id, const std::string& config_yaml, const std::string& run_dir) try {
  SQLite::Statement q(*m_db,
                      "INSERT INTO runs(run_id, config, init_seed, data_seed, status, run_dir, updated_at) "
                      "VALUES (?, ?, 0, 0, ?, ?, ?) ON CONFLICT(run_id) DO NOTHING");
  q.bind(1, run_id);
  q.bind(2, config_yaml);
  q.bind(3, to_string(RunState::pending));
  q.bind(4, stored_dir(run_dir));
  q.bind(5, now());
  q.exec();
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

void Store::ingest(const std::string& run_id, const std::vector<std::string>& lines) try {
  SQLite::Transaction tx(*m_db);
  SQLite::Statement put_train(*m_db,
                              "INSERT OR REPLACE INTO metrics(run_id, split, step, tokens, loss, loss_status, lr, "
                              "grad_norm, grad_norm_status, tokens_per_s, moe) VALUES (?, 'train', ?, ?, ?, ?, ?, ?, ?, ?, ?)");
  SQLite::Statement put_eval(*m_db,
                             "INSERT OR REPLACE INTO metrics(run_id, split, step, tokens, loss, loss_status) "
                             "VALUES (?, ?, ?, ?, ?, ?)");
  // An event belongs to the latest segment that started at or before it: extending that
  // segment to the event's time gives the same rows whatever was ingested before (a replay of
  // the whole events.jsonl by `sweep ingest` included).
  SQLite::Statement extend(*m_db,
                           "UPDATE segments SET last_event = MAX(last_event, ?1) WHERE run_id = ?2 AND started = "
                           "(SELECT MAX(started) FROM segments WHERE run_id = ?2 AND started <= ?1)");
  // of the events since the last start in these lines (-inf: none; a plain double, which GCC 12
  // does not misread as uninitialized the way it does an optional here)
  double latest_time = -std::numeric_limits<double>::infinity();
  auto extend_segment = [&]() {
    if (std::isfinite(latest_time)) {
      extend.bind(1, latest_time);
      extend.bind(2, run_id);
      extend.exec();
      extend.reset();
    }
    latest_time = -std::numeric_limits<double>::infinity();
  };
  // The run's progress columns follow its latest train event: written once per batch of lines.
  std::optional<nlohmann::json> latest_train;
  int64_t total_steps = 0;  // as the latest start said: steps past it are no steps of this run
  {
    SQLite::Statement q(*m_db, "SELECT total_steps FROM runs WHERE run_id = ?");
    q.bind(1, run_id);
    if (q.executeStep()) {
      total_steps = q.getColumn(0).getInt64();
    }
  }
  for (const auto& line : lines) {
    // a line cut by a kill (the worker rewrites what follows after resuming), or one too deep or too
    // long to be an event (a folder `sweep ingest` reads may hold anything)
    nlohmann::json ev = events::parse_json_line(line);  // not const: its [] of an absent field reads null
    if (ev.is_discarded() || !ev.is_object()) {
      continue;  // not an event
    }
    // No worker writes these: an event that breaks the protocol's placement rules (a step, a train
    // event's tokens, a loss, a split, an end's state; protocol/event_check.h), or one at a step
    // outside the run (an end's negative step too: its step is optional, and one of another type
    // reads as 0). Skipped, like a line that is no JSON. (A failed worker's end event has no step.)
    if (!events::event_problem(ev, events::Rules::placement).empty()) {
      continue;
    }
    const std::string type = field_or<std::string>(ev, field::event, "");  // "": a type it does not know
    const int64_t step = field_or<int64_t>(ev, field::step, 0);
    if (step < 0 || (type != events::start && total_steps > 0 && step > total_steps)) {
      continue;
    }
    const std::string split = field_or<std::string>(ev, field::split, "");
    const bool has_time = ev.contains(field::time) && ev[field::time].is_number();
    const double time = has_time ? ev[field::time].get<double>() : 0.0;
    if (type == events::start) {
      extend_segment();  // the previous segment ends with the events before this start
      if (has_time) {
        SQLite::Statement seg(*m_db,
                              "INSERT INTO segments(run_id, started, step, last_event, code, numerics) "
                              "VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT(run_id, started) DO NOTHING");
        seg.bind(1, run_id);
        seg.bind(2, time);
        seg.bind(3, step);
        seg.bind(4, time);
        // A numerics field of the wrong type is "not said" (NULL), as a missing one is.
        const bool has_numerics = ev.contains(field::numerics) && ev[field::numerics].is_number_integer();
        seg.bind(5, field_or<std::string>(ev, field::code, ""));
        bind_opt(seg, 6, has_numerics ? std::optional<int64_t>(ev[field::numerics].get<int64_t>()) : std::nullopt);
        seg.exec();
      }
      // Where it trained, as the worker said, for a run no scheduler of this database started
      // (a run folder ingested): the scheduler's own record, its slot, says more.
      if (ev.contains(field::device) && ev[field::device].is_string()) {
        SQLite::Statement where(*m_db, "UPDATE runs SET device = ? WHERE run_id = ? AND (device IS NULL OR device = '')");
        where.bind(1, ev[field::device].get<std::string>().substr(0, 64));
        where.bind(2, run_id);
        where.exec();
      }
      // A (re)start at step k: everything after k will be produced again.
      latest_train.reset();  // its rows after k are gone; so is the progress they reported
      SQLite::Statement drop(*m_db, "DELETE FROM metrics WHERE run_id = ? AND step > ?");
      drop.bind(1, run_id);
      drop.bind(2, step);
      drop.exec();
      SQLite::Statement q(*m_db,
                          "UPDATE runs SET total_steps = ?, steps = ?, test_loss = NULL, test_bpb = NULL, "
                          "test_blocks = NULL, updated_at = ? WHERE run_id = ?");
      total_steps = field_or<int64_t>(ev, field::total_steps, 0);
      q.bind(1, total_steps);
      q.bind(2, step);
      q.bind(3, now());
      q.bind(4, run_id);
      q.exec();
    } else if (type == events::train) {
      auto [loss, loss_status] = number(ev[field::loss]);
      auto [norm, norm_status] = number(ev[field::grad_norm]);
      put_train.bind(1, run_id);
      put_train.bind(2, step);
      put_train.bind(3, field_or<int64_t>(ev, field::tokens, 0));
      bind_opt(put_train, 4, loss);
      put_train.bind(5, loss_status);
      // a number or NULL, never a 0 that was not said
      auto maybe = [&](const char* key) { return ev.contains(key) ? number(ev[key]).first : std::nullopt; };
      bind_opt(put_train, 6, maybe(field::lr));
      bind_opt(put_train, 7, norm);
      put_train.bind(8, norm_status);
      bind_opt(put_train, 9, maybe(field::tokens_per_s));
      if (ev.contains(field::moe) && ev[field::moe].is_object()) {
        put_train.bind(10, ev[field::moe].dump());
      } else {
        put_train.bind(10);  // NULL: a dense model
      }
      put_train.exec();
      put_train.reset();
      latest_train = ev;
    } else if (type == events::eval) {
      auto [loss, loss_status] = number(ev[field::loss]);
      put_eval.bind(1, run_id);
      put_eval.bind(2, split);
      put_eval.bind(3, step);
      put_eval.bind(4, field_or<int64_t>(ev, field::tokens, 0));
      bind_opt(put_eval, 5, loss);
      put_eval.bind(6, loss_status);
      put_eval.exec();
      put_eval.reset();
    } else if (type == events::end) {
      // A run is done only with a finite test loss (older workers said done without one); an
      // end without a state this version knows is a failure.
      const RunState said = parse_run_state(field_or<std::string>(ev, field::status, "")).value_or(RunState::failed);
      const bool no_result = said == RunState::done && ev.contains(field::test_loss) &&
                             !number(ev[field::test_loss]).first.has_value();
      const RunState status = no_result ? RunState::diverged : said;
      SQLite::Statement q(*m_db,
                          "UPDATE runs SET status = ?, error = ?, test_loss = ?, test_bpb = ?, pid = 0, updated_at = ?, "
                          "test_blocks = ? WHERE run_id = ?");
      q.bind(1, to_string(status));
      q.bind(2, no_result ? std::string("non-finite test loss") : field_or<std::string>(ev, field::reason, ""));
      bind_opt(q, 3, ev.contains(field::test_loss) ? number(ev[field::test_loss]).first : std::nullopt);
      bind_opt(q, 4, ev.contains(field::test_bpb) ? number(ev[field::test_bpb]).first : std::nullopt);
      q.bind(5, now());
      bind_opt(q, 6, valid_blocks(ev));
      q.bind(7, run_id);
      q.exec();
    }
    if (has_time) {
      latest_time = std::max(latest_time, time);
    }
  }
  extend_segment();
  if (latest_train) {
    nlohmann::json& ev = *latest_train;
    SQLite::Statement q(*m_db,
                        "UPDATE runs SET steps = ?, tokens = ?, last_loss = ?, updated_at = ? WHERE run_id = ?");
    q.bind(1, field_or<int64_t>(ev, field::step, 0));
    q.bind(2, field_or<int64_t>(ev, field::tokens, 0));
    bind_opt(q, 3, number(ev[field::loss]).first);
    q.bind(4, now());
    q.bind(5, run_id);
    q.exec();
  }
  // Time columns, from the rows above: the wall time of every segment (a resume, a retry, a
  // preemption each add theirs), and the training time of the run's own steps — each step once,
  // evaluations and checkpoints excluded — which gives its tokens/s.
  SQLite::Statement times(*m_db, R"sql(
    UPDATE runs SET
      wall_seconds = (SELECT SUM(last_event - started) FROM segments WHERE run_id = ?1),
      train_seconds = (SELECT SUM(CAST(tokens AS REAL) / step / tokens_per_s) FROM metrics
                       WHERE run_id = ?1 AND split = 'train' AND step > 0 AND tokens_per_s > 0)
    WHERE run_id = ?1)sql");
  times.bind(1, run_id);
  times.exec();
  SQLite::Statement rate(*m_db,
                         "UPDATE runs SET tokens_per_s = CASE WHEN train_seconds > 0 THEN tokens / train_seconds END "
                         "WHERE run_id = ?");
  rate.bind(1, run_id);
  rate.exec();
  tx.commit();
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
