// Store::ingest: a batch of a run's events (lines of its events.jsonl) into its rows — metrics,
// segments and the run's own columns — in one transaction. Events come from another process, or
// from a folder `sweep ingest` reads: a line that is no event, or breaks the placement rules, is
// skipped, never a failed ingest; the same lines ingested twice give the same rows.
#include <SQLiteCpp/SQLiteCpp.h>

#include <cmath>
#include <limits>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <nlohmann/json.hpp>

#include "protocol/event_check.h"
#include "protocol/event_order.h"
#include "protocol/events.h"
#include "protocol/json_line.h"
#include "store/sqlite_util.h"
#include "store/store.h"

namespace sweep {

using namespace store_detail;
namespace field = events::field;

namespace {

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

// One batch of one run's events into the database, within the caller's transaction.
class EventIngest {
 public:
  EventIngest(SQLite::Database& db, const std::string& run_id)
      : m_db(db),
        m_run_id(run_id),
        m_put_train(db,
                    "INSERT OR REPLACE INTO metrics(run_id, split, step, tokens, loss, loss_status, lr, "
                    "grad_norm, grad_norm_status, tokens_per_s, moe) VALUES (?, 'train', ?, ?, ?, ?, ?, ?, ?, ?, ?)"),
        m_put_eval(db,
                   "INSERT OR REPLACE INTO metrics(run_id, split, step, tokens, loss, loss_status) "
                   "VALUES (?, ?, ?, ?, ?, ?)"),
        // An event belongs to the latest segment that started at or before it: extending that
        // segment to the event's time gives the same rows whatever was ingested before (a replay of
        // the whole events.jsonl by `sweep ingest` included).
        m_extend(db,
                 "UPDATE segments SET last_event = MAX(last_event, ?1) WHERE run_id = ?2 AND started = "
                 "(SELECT MAX(started) FROM segments WHERE run_id = ?2 AND started <= ?1)") {
    SQLite::Statement q(m_db, "SELECT total_steps FROM runs WHERE run_id = ?");
    q.bind(1, m_run_id);
    if (q.executeStep()) {
      m_total_steps = q.getColumn(0).getInt64();
    }
  }

  void take(const std::string& line) {
    // a line cut by a kill (the worker rewrites what follows after resuming), or one too deep or too
    // long to be an event (a folder `sweep ingest` reads may hold anything)
    nlohmann::json ev = events::parse_json_line(line);  // not const: its [] of an absent field reads null
    if (ev.is_discarded() || !ev.is_object()) {
      return;  // not an event
    }
    // No worker writes these: an event that breaks the protocol's placement rules (a step, a train
    // event's tokens, a loss, a split, an end's state; protocol/event_check.h), or one at a step
    // outside the run (protocol/event_order.h: past total_steps, but for an end; an end's step is
    // optional, and one of another type reads as 0). Skipped, like a line that is no JSON.
    if (!events::event_problem(ev, events::Rules::placement).empty()) {
      return;
    }
    const std::string type = field_or<std::string>(ev, field::event, "");  // "": a type it does not know
    const int64_t step = field_or<int64_t>(ev, field::step, 0);
    if (!events::outside_run(type, step, m_total_steps).empty()) {
      return;
    }
    const bool has_time = ev.contains(field::time) && ev[field::time].is_number();
    const double time = has_time ? ev[field::time].get<double>() : 0.0;
    if (type == events::start) {
      start(ev, step, has_time, time);
    } else if (type == events::train) {
      train(ev, step);
    } else if (type == events::eval) {
      eval(ev, step);
    } else if (type == events::end) {
      end(ev);
    }
    // The scheduler's own end of an attempt says how it ended, not that the run trained until then: a
    // worker stopped while starting, after a pause, would otherwise add the whole pause to its segment.
    const bool by_scheduler = field_or<std::string>(ev, field::by, "") == events::k_by_scheduler;
    if (has_time && !by_scheduler) {
      m_latest_time = std::max(m_latest_time, time);
    }
  }

  // The last segment's extent, the run's progress (its latest train event), and its time columns.
  void finish() {
    extend_segment();
    if (m_latest_train) {
      nlohmann::json& ev = *m_latest_train;
      SQLite::Statement q(m_db,
                          "UPDATE runs SET steps = ?, tokens = ?, last_loss = ?, updated_at = ? WHERE run_id = ?");
      q.bind(1, field_or<int64_t>(ev, field::step, 0));
      q.bind(2, field_or<int64_t>(ev, field::tokens, 0));
      bind_opt(q, 3, number(ev[field::loss]).first);
      q.bind(4, now());
      q.bind(5, m_run_id);
      q.exec();
    }
    // Time columns, from the rows above: the wall time of every segment (a resume, a retry, a
    // preemption each add theirs), and the training time of the run's own steps — each step once,
    // evaluations and checkpoints excluded — which gives its tokens/s.
    SQLite::Statement times(m_db, R"sql(
    UPDATE runs SET
      wall_seconds = (SELECT SUM(last_event - started) FROM segments WHERE run_id = ?1),
      train_seconds = (SELECT SUM(CAST(tokens AS REAL) / step / tokens_per_s) FROM metrics
                       WHERE run_id = ?1 AND split = 'train' AND step > 0 AND tokens_per_s > 0)
    WHERE run_id = ?1)sql");
    times.bind(1, m_run_id);
    times.exec();
    // (the tokens of the steps timed: a branch's steps before its branch point were its parent's)
    SQLite::Statement rate(m_db, R"sql(
    UPDATE runs SET tokens_per_s = CASE WHEN train_seconds > 0 THEN
        (SELECT SUM(CAST(tokens AS REAL) / step) FROM metrics
         WHERE run_id = ?1 AND split = 'train' AND step > 0 AND tokens_per_s > 0) / train_seconds END
    WHERE run_id = ?1)sql");
    rate.bind(1, m_run_id);
    rate.exec();
  }

 private:
  // The segment the events since the last start belong to reaches the latest of their times.
  void extend_segment() {
    if (std::isfinite(m_latest_time)) {
      m_extend.bind(1, m_latest_time);
      m_extend.bind(2, m_run_id);
      m_extend.exec();
      m_extend.reset();
    }
    m_latest_time = -std::numeric_limits<double>::infinity();
  }

  // A (re)start at `step`: a new segment, and everything after the step will be produced again.
  void start(const nlohmann::json& ev, int64_t step, bool has_time, double time) {
    extend_segment();  // the previous segment ends with the events before this start
    if (has_time) {
      SQLite::Statement seg(m_db,
                            "INSERT INTO segments(run_id, started, step, last_event, code, numerics) "
                            "VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT(run_id, started) DO NOTHING");
      seg.bind(1, m_run_id);
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
      SQLite::Statement where(m_db, "UPDATE runs SET device = ? WHERE run_id = ? AND (device IS NULL OR device = '')");
      where.bind(1, ev[field::device].get<std::string>().substr(0, 64));
      where.bind(2, m_run_id);
      where.exec();
    }
    m_latest_train.reset();  // its rows after the step are gone; so is the progress they reported
    SQLite::Statement drop(m_db, "DELETE FROM metrics WHERE run_id = ? AND step > ?");
    drop.bind(1, m_run_id);
    drop.bind(2, step);
    drop.exec();
    // its progress is where it starts: the train row at or before its step (whatever was ingested
    // before, in this batch or another), else the tokens it says
    SQLite::Statement q(m_db, R"sql(
    UPDATE runs SET total_steps = ?2, steps = ?3, test_loss = NULL, test_bpb = NULL, test_blocks = NULL, updated_at = ?4,
      tokens = COALESCE((SELECT tokens FROM metrics WHERE run_id = ?1 AND split = 'train' AND step <= ?3
                         ORDER BY step DESC LIMIT 1), ?5),
      last_loss = (SELECT loss FROM metrics WHERE run_id = ?1 AND split = 'train' AND step <= ?3 ORDER BY step DESC LIMIT 1)
    WHERE run_id = ?1)sql");
    m_total_steps = field_or<int64_t>(ev, field::total_steps, 0);
    q.bind(1, m_run_id);
    q.bind(2, m_total_steps);
    q.bind(3, step);
    q.bind(4, now());
    q.bind(5, step > 0 ? field_or<int64_t>(ev, field::tokens, 0) : int64_t{0});
    q.exec();
  }

  void train(const nlohmann::json& ev, int64_t step) {
    auto [loss, loss_status] = number(ev.value(field::loss, nlohmann::json()));
    auto [norm, norm_status] = number(ev.value(field::grad_norm, nlohmann::json()));
    m_put_train.bind(1, m_run_id);
    m_put_train.bind(2, step);
    m_put_train.bind(3, field_or<int64_t>(ev, field::tokens, 0));
    bind_opt(m_put_train, 4, loss);
    m_put_train.bind(5, loss_status);
    // a number or NULL, never a 0 that was not said
    auto maybe = [&](const char* key) { return ev.contains(key) ? number(ev[key]).first : std::nullopt; };
    bind_opt(m_put_train, 6, maybe(field::lr));
    bind_opt(m_put_train, 7, norm);
    m_put_train.bind(8, norm_status);
    bind_opt(m_put_train, 9, maybe(field::tokens_per_s));
    if (ev.contains(field::moe) && ev[field::moe].is_object()) {
      m_put_train.bind(10, ev[field::moe].dump());
    } else {
      m_put_train.bind(10);  // NULL: a dense model
    }
    m_put_train.exec();
    m_put_train.reset();
    m_latest_train = ev;
  }

  void eval(const nlohmann::json& ev, int64_t step) {
    auto [loss, loss_status] = number(ev.value(field::loss, nlohmann::json()));
    m_put_eval.bind(1, m_run_id);
    m_put_eval.bind(2, field_or<std::string>(ev, field::split, ""));
    m_put_eval.bind(3, step);
    m_put_eval.bind(4, field_or<int64_t>(ev, field::tokens, 0));
    bind_opt(m_put_eval, 5, loss);
    m_put_eval.bind(6, loss_status);
    m_put_eval.exec();
    m_put_eval.reset();
  }

  void end(const nlohmann::json& ev) {
    const events::EndOfRun said = events::end_of_run(ev);  // the trainer host's rule (protocol/event_order.h)
    SQLite::Statement q(m_db,
                        "UPDATE runs SET status = ?, error = ?, test_loss = ?, test_bpb = ?, pid = 0, updated_at = ?, "
                        "test_blocks = ? WHERE run_id = ?");
    q.bind(1, to_string(said.state));
    q.bind(2, said.reason);
    bind_opt(q, 3, ev.contains(field::test_loss) ? number(ev[field::test_loss]).first : std::nullopt);
    bind_opt(q, 4, ev.contains(field::test_bpb) ? number(ev[field::test_bpb]).first : std::nullopt);
    q.bind(5, now());
    bind_opt(q, 6, valid_blocks(ev));
    q.bind(7, m_run_id);
    q.exec();
  }

  SQLite::Database& m_db;
  const std::string& m_run_id;
  SQLite::Statement m_put_train, m_put_eval, m_extend;
  // the latest time of the events since the last start in these lines (-inf: none; a plain double,
  // which GCC 12 does not misread as uninitialized the way it does an optional here)
  double m_latest_time = -std::numeric_limits<double>::infinity();
  // The run's progress columns follow its latest train event: written once per batch of lines.
  std::optional<nlohmann::json> m_latest_train;
  int64_t m_total_steps = 0;  // as the latest start said: steps past it are no steps of this run
};

}  // namespace

void Store::ingest(const std::string& run_id, const std::vector<std::string>& lines) try {
  SQLite::Transaction tx(*m_db);
  EventIngest batch(*m_db, run_id);
  for (const auto& line : lines) {
    batch.take(line);
  }
  batch.finish();
  tx.commit();
} catch (const SQLite::Exception& e) {
  throw db_error(m_path, e);
}

}  // namespace sweep
