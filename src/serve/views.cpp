#include "serve/views.h"

#include <sys/stat.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <memory>
#include <set>

#include "report/analyze.h"
#include "report/load.h"
#include "report/pool/pool.h"
#include "report/render/plots.h"
#include "report/render/pool_render.h"
#include "report/render/render.h"
#include "report/render/report_json.h"
#include "report/render/tables.h"
#include "serve/downsample.h"
#include "store/results_folder.h"
#include "util/fs.h"
#include "util/text.h"

namespace sweep {

using json = nlohmann::json;

namespace {

// Ended, not to be trained again by this sweep unless retried: no part of the time left.
bool settled(RunState s) { return finished(s) || s == RunState::failed || s == RunState::oom; }

// The runs per state, and when the rest may be done: each running run's remaining steps at its
// own pace so far, each pending run at the mean time of the finished ones, over the runs at work.
json progress(const std::vector<SweepRunRow>& rows) {
  std::map<std::string, int64_t> states;
  double done_seconds = 0, remaining = 0;
  int64_t done_timed = 0, running = 0, pending = 0;
  for (const auto& r : rows) {
    ++states[to_string(r.run.status)];
    if (r.run.status == RunState::done && r.run.wall_seconds) {
      done_seconds += *r.run.wall_seconds;
      ++done_timed;
    } else if (r.run.status == RunState::running) {
      ++running;
      if (r.run.steps > 0 && r.run.train_seconds && r.run.total_steps > r.run.steps) {
        remaining += *r.run.train_seconds / static_cast<double>(r.run.steps) *
                     static_cast<double>(r.run.total_steps - r.run.steps);
      }
    } else if (!settled(r.run.status)) {
      ++pending;
    }
  }
  json eta = nullptr;
  if (running > 0 && (pending == 0 || done_timed > 0)) {
    eta = (remaining + static_cast<double>(pending) * (done_timed ? done_seconds / static_cast<double>(done_timed) : 0)) /
          static_cast<double>(running);
  }
  return {{"runs", rows.size()}, {"states", states}, {"eta_seconds", eta}};
}

// An exponential moving average (TensorBoard's, debiased) of y along the curve; weight in [0, 1).
std::vector<double> smoothed(const std::vector<double>& y, double weight) {
  if (weight <= 0) {
    return y;
  }
  std::vector<double> out(y.size());
  double ema = 0, scale = 0;
  for (size_t i = 0; i < y.size(); ++i) {
    if (!std::isfinite(y[i])) {
      out[i] = y[i];
      continue;
    }
    ema = weight * ema + (1 - weight) * y[i];
    scale = weight * scale + (1 - weight);
    out[i] = ema / scale;
  }
  return out;
}

// One run's curve of `metric`: (tokens, value), tokens ascending.
void run_curve(const ReportRun& r, Curve metric, std::vector<double>& x, std::vector<double>& y) {
  if (metric == Curve::val_loss) {
    for (const auto& [tokens, loss] : r.val_curve) {
      x.push_back(static_cast<double>(tokens));
      y.push_back(loss);
    }
    return;
  }
  for (const auto& p : r.train_curve) {
    x.push_back(static_cast<double>(p.tokens));
    y.push_back(metric == Curve::train_loss     ? p.loss
                : metric == Curve::grad_norm    ? p.grad_norm
                : metric == Curve::lr           ? p.lr
                : metric == Curve::tokens_per_s ? p.tokens_per_s
                                                : p.moe_load);
  }
}

// The curves `ys` over `x` at the points the first `choosing` of them keep (each its buckets'
// extremes); the others follow along.
json thinned(const std::vector<double>& x, const std::vector<const std::vector<double>*>& ys,
             const std::vector<std::string>& names, size_t buckets, size_t choosing) {
  const std::vector<size_t> keep =
      minmax_keep_all(x, std::vector<const std::vector<double>*>(ys.begin(), ys.begin() + choosing), buckets);
  json out = json::object();
  json xs = json::array();
  for (size_t i : keep) {
    xs.push_back(x[i]);
  }
  out["x"] = std::move(xs);
  for (size_t k = 0; k < ys.size(); ++k) {
    json v = json::array();
    for (size_t i : keep) {
      v.push_back(number_or_null((*ys[k])[i]));
    }
    out[names[k]] = std::move(v);
  }
  out["points"] = x.size();
  return out;
}

}  // namespace

namespace {

// The device and inode of a file ({0, 0}: none there).
std::pair<uint64_t, uint64_t> file_identity(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 ? std::pair<uint64_t, uint64_t>(st.st_dev, st.st_ino) : std::pair<uint64_t, uint64_t>(0, 0);
}

}  // namespace

Views::Views(const std::string& results)
    : m_results(results),
      m_path(database_path(results)),
      m_opened(std::make_unique<Store>(m_path, Store::Access::reader)),
      m_file(file_identity(m_path)) {}

int64_t Views::current_version() {
  // A database moved into place (another file at the path) is opened again, its answers read anew;
  // the version says so (a page polling it fetches again). One that cannot be opened: the old
  // stays open, and the next request tries again.
  if (const auto now = file_identity(m_path); now != m_file && now.second != 0) {
    // The write-ahead log beside it is the replaced database's (this server's connection kept it):
    // SQLite would read the two as one, a mix of both, and damage the new file. Refused until
    // the log is gone; the old database is still served.
    std::error_code ec;
    if (fs::file_size(m_path + "-wal", ec) > 0 && !ec) {
      throw std::runtime_error(m_path + " was replaced while the write-ahead log of the database it replaced (" + m_path +
                               "-wal) is beside it: SQLite would read the two as one and damage it — put the old "
                               "database back, stop sweep serve, then replace it");
    }
    auto reopened = std::make_unique<Store>(m_path, Store::Access::reader);
    m_opened = std::move(reopened);
    m_file = now;
    m_analyses.clear();
    ++m_reopened;
  }
  return m_opened->data_version() + (m_reopened << 40);
}

json Views::version() {
  std::lock_guard<std::mutex> lock(m_mutex);
  return {{"version", current_version()}};
}

json Views::pool() {
  std::lock_guard<std::mutex> lock(m_mutex);
  const int64_t version = current_version();
  std::vector<PoolStudy> studies;
  for (const auto& s : m_opened->sweeps()) {
    const Cached& c = analysed(s.name);
    studies.push_back({c.input.get(), c.analysis.get()});
  }
  json out = pool_json(pool_studies(studies, Metric{Metric::Kind::test_loss}));
  out["version"] = version;
  return out;
}

json Views::sweeps() {
  std::lock_guard<std::mutex> lock(m_mutex);
  const int64_t version = current_version();  // before the data: a commit after it is seen next time
  json out = json::array();
  for (const auto& s : m_opened->sweeps()) {
    const auto rows = m_opened->sweep_runs(s.name);
    std::set<std::string> codes;
    for (const auto& r : rows) {
      for (const auto& seg : m_opened->segments(r.run.run_id)) {
        codes.insert(seg.code_label());
      }
    }
    json entry = progress(rows);
    entry["name"] = s.name;
    entry["file"] = s.file;
    entry["codes"] = codes;
    out.push_back(std::move(entry));
  }
  return {{"results", fs::absolute(m_results).lexically_normal().string()}, {"sweeps", out}, {"version", version}};
}

void Views::read_sweep(Store& store, const std::string& name, Cached& c) {
  auto input =
      std::make_unique<ReportInput>(load_report_input(store, name, Metric{Metric::Kind::test_loss}, "", c.input.get()));
  c.analysis = std::make_unique<const Analysis>(analyze(*input));
  c.input = std::move(input);
  c.page.reset();
}

Views::Cached& Views::analysed(const std::string& name) {
  const int64_t version = current_version();
  auto it = m_analyses.find(name);
  if (it != m_analyses.end() && it->second.version == version) {
    return it->second;
  }
  const auto known = m_opened->sweeps();
  if (std::none_of(known.begin(), known.end(), [&](const SweepSummary& s) { return s.name == name; })) {
    throw NotFound("no sweep named '" + name + "'");
  }
  Cached& c = m_analyses[name];
  try {
    read_sweep(*m_opened, name, c);
  } catch (...) {
    m_analyses.erase(name);  // its runs may be half taken by the failed load
    throw;
  }
  c.version = version;
  return c;
}

std::shared_ptr<const json> Views::sweep(const std::string& name) {
  std::lock_guard<std::mutex> lock(m_mutex);
  Cached& c = analysed(name);
  if (!c.page) {
    c.page = std::make_shared<const json>(sweep_page(name, c));
  }
  return c.page;
}

json Views::sweep_page(const std::string& name, const Cached& c) {
  const ReportInput& in = *c.input;
  const Analysis& a = *c.analysis;
  json table = {{"headers", headers(a)}, {"rows", json::array()}};
  json variants = json::array();
  for (size_t i = 0; i < a.variants.size(); ++i) {
    const VariantStats& v = a.variants[i];
    json row = json::array();
    for (const Cell& cell : cells(a, v, static_cast<int>(i) + 1)) {
      row.push_back({{"text", cell.text}, {"key", number_or_null(cell.key)}});
    }
    table["rows"].push_back({{"variant", v.name}, {"verdict", verdict_name(v)}, {"colour", variant_colour(v)}, {"cells", std::move(row)}});
    variants.push_back({{"name", v.name}, {"colour", variant_colour(v)}, {"baseline", v.is_baseline}, {"position", v.position}});
  }
  std::sort(variants.begin(), variants.end(), [](const json& l, const json& r) { return l["position"] < r["position"]; });
  json runs = json::array();
  const auto rows = m_opened->sweep_runs(name);
  for (const auto& r : rows) {
    runs.push_back({{"variant", r.variant},
                    {"run_id", r.run.run_id},
                    {"init_seed", r.run.init_seed},
                    {"data_seed", r.run.data_seed},
                    {"status", to_string(r.run.status)},
                    {"attempts", r.run.attempts},
                    {"steps", r.run.steps},
                    {"total_steps", r.run.total_steps},
                    {"test_loss", optional_number(r.run.test_loss)},
                    {"error", r.run.error}});
  }
  // the report's JSON of each (report/render/report_json.h), with what the page draws them by
  json deltas = json::array();
  for (const auto& d : a.deltas) {
    const auto v = std::find_if(a.variants.begin(), a.variants.end(), [&](const VariantStats& s) { return s.name == d.variant; });
    json delta = json_of(d);
    delta["colour"] = v == a.variants.end() ? "#888888" : variant_colour(*v);
    deltas.push_back(std::move(delta));
  }
  json responses = json::array();
  for (const auto& r : a.responses) {
    json response = json_of(r);
    response["log_x"] = r.log_x;
    responses.push_back(std::move(response));
  }
  json ladder = nullptr;
  if (a.ladder) {
    ladder = {{"rungs", json_array(a.ladder->rungs)}, {"trends", json::array()}};
    for (const auto& t : a.ladder->trends) {
      json points = json::array();
      for (size_t k = 0; k < t.rung_variants.size() && k < a.ladder->rungs.size(); ++k) {
        const auto v = std::find_if(a.variants.begin(), a.variants.end(),
                                    [&](const VariantStats& s) { return s.name == t.rung_variants[k]; });
        if (v != a.variants.end()) {
          points.push_back({{"rung", a.ladder->rungs[k].name}, {"flops", number_or_null(a.ladder->rungs[k].flops)},
                            {"improvement", number_or_null(v->improvement)}, {"ci_low", number_or_null(v->ci_low)},
                            {"ci_high", number_or_null(v->ci_high)}});
        }
      }
      json trend = json_of(t);
      trend["points"] = std::move(points);
      ladder["trends"].push_back(std::move(trend));
    }
  }
  json out = progress(rows);
  out.update({{"name", name},
              {"file", in.file},
              {"spec", in.spec},
              {"baseline", in.baseline},
              {"metric", a.metric.name()},
              {"headline", headline(a)},
              {"method", method_sentence(a)},
              {"noise", noise_lines(a)},
              {"code", a.code},
              {"notes", a.notes},
              {"report", render_text(a)},
              {"version", c.version}});
  // moved in, not copied (an initializer list copies: a tenth of the answer's time at 1,000 runs)
  out["table"] = std::move(table);
  out["variants"] = std::move(variants);
  out["runs"] = std::move(runs);
  out["deltas"] = std::move(deltas);
  out["responses"] = std::move(responses);
  out["ladder"] = std::move(ladder);
  return out;
}

json Views::curves(const std::string& name, const std::string& metric, size_t buckets, bool seeds, double smooth) {
  const std::optional<Curve> which = parse_choice<Curve>(metric);
  if (!which) {
    throw BadRequest("metric '" + metric + "': expected one of " + join(choice_names<Curve>(), ", "));
  }
  std::lock_guard<std::mutex> lock(m_mutex);
  const Cached& c = analysed(name);
  size_t runs_count = 0;
  for (const VariantRuns& v : c.input->variants) {
    runs_count += v.runs.size();
  }
  const size_t seed_buckets = shared_buckets(buckets, runs_count);
  json variants = json::array();
  for (const VariantRuns& v : c.input->variants) {
    // The mean over the seeds that have a point at each token count, with the seeds' min and max.
    std::map<double, std::vector<double>> at;
    json runs = json::array();
    for (const ReportRun& r : v.runs) {
      std::vector<double> x, y;
      run_curve(r, *which, x, y);
      y = smoothed(y, smooth);
      for (size_t i = 0; i < x.size(); ++i) {
        if (std::isfinite(y[i])) {
          at[x[i]].push_back(y[i]);
        }
      }
      if (seeds && !x.empty()) {
        json curve = thinned(x, {&y}, {"y"}, seed_buckets, 1);
        curve.update({{"run_id", r.run_id}, {"init_seed", r.init_seed}, {"data_seed", r.data_seed},
                      {"status", to_string(r.status)}});
        runs.push_back(std::move(curve));
      }
    }
    std::vector<double> x, mean, lo, hi, n;
    for (const auto& [tokens, values] : at) {
      x.push_back(tokens);
      double sum = 0;
      for (double value : values) {
        sum += value;
      }
      mean.push_back(sum / static_cast<double>(values.size()));
      lo.push_back(*std::min_element(values.begin(), values.end()));
      hi.push_back(*std::max_element(values.begin(), values.end()));
      n.push_back(static_cast<double>(values.size()));
    }
    json entry = thinned(x, {&mean, &lo, &hi, &n}, {"mean", "min", "max", "seeds"}, buckets, 3);
    entry["name"] = v.name;
    entry["baseline"] = v.name == c.input->baseline;
    if (seeds) {
      entry["runs"] = std::move(runs);
    }
    variants.push_back(std::move(entry));
  }
  return {{"sweep", name}, {"metric", metric}, {"buckets", buckets}, {"seed_buckets", seeds ? json(seed_buckets) : json()},
          {"smooth", smooth}, {"variants", std::move(variants)}, {"version", c.version}};
}

void Views::warm() {
  try {
    int64_t version = 0;
    std::string name;
    {
      std::lock_guard<std::mutex> lock(m_mutex);
      version = current_version();  // before the data: a commit after it is read again at the next request
      const auto known = m_opened->sweeps();  // the most recently run first
      if (known.empty()) {
        return;
      }
      name = known.front().name;
    }
    // On a connection of its own, so that requests meanwhile are answered (one for this sweep
    // reads it too, and that answer is kept).
    Store store(database_path(m_results), Store::Access::reader);
    Cached read;
    read_sweep(store, name, read);
    read.version = version;
    std::lock_guard<std::mutex> lock(m_mutex);
    m_analyses.try_emplace(name, std::move(read));
  } catch (...) {
    // the same error reaches the first request for the sweep, which reports it
  }
}

json Views::run(const std::string& run_id) {
  std::lock_guard<std::mutex> lock(m_mutex);
  const int64_t version = current_version();
  const auto r = m_opened->run(run_id);
  if (!r) {
    throw NotFound("no run with id '" + run_id + "'");
  }
  json segments = json::array();
  for (const auto& s : m_opened->segments(run_id)) {
    segments.push_back({{"started", s.started}, {"last_event", s.last_event}, {"step", s.step}, {"code", s.code_label()}});
  }
  std::string log;
  std::error_code ec;
  const fs::path worker_log = fs::path(r->run_dir) / "worker.log";
  if (fs::is_regular_file(worker_log, ec)) {
    log = tail_lines(worker_log, 60);
  }
  return {{"run_id", r->run_id},
          {"status", to_string(r->status)},
          {"attempts", r->attempts},
          {"init_seed", r->init_seed},
          {"data_seed", r->data_seed},
          {"steps", r->steps},
          {"total_steps", r->total_steps},
          {"tokens", r->tokens},
          {"test_loss", optional_number(r->test_loss)},
          {"test_bpb", optional_number(r->test_bpb)},
          {"wall_seconds", optional_number(r->wall_seconds)},
          {"tokens_per_s", optional_number(r->tokens_per_s)},
          {"error", r->error},
          {"run_dir", r->run_dir},
          {"job", r->job},
          {"job_state", r->job_state},
          {"config", r->config_yaml},
          {"segments", segments},
          {"log", log},
          {"version", version}};
}

}  // namespace sweep
