// What `sweep serve` answers, as JSON, from a results database it only reads: the sweeps with
// their progress, a sweep's ranked table and report (the same analysis as `sweep report`,
// recomputed when the database changes), its curves as each variant's mean with its seed band
// and each seed, thinned on the server (serve/downsample.h), and one run's record. No HTTP here
// (serve/server.cpp maps routes to these); one connection, used by one request at a time.
#pragma once

#include <array>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

#include "report/analysis.h"
#include "store/store.h"
#include "util/choices.h"

namespace sweep {

// A request the views cannot answer: 404 (no such sweep or run) or 400 (a bad parameter).
struct NotFound : std::runtime_error {
  using std::runtime_error::runtime_error;
};
struct BadRequest : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// The curves a chart can ask for: validation loss, and per training step its loss, gradient norm,
// learning rate, tokens/s and (MoE models) the busiest expert's load ÷ the mean.
enum class Curve { val_loss, train_loss, grad_norm, lr, tokens_per_s, moe_load };
template <>
struct Choices<Curve> {
  static constexpr std::array<std::string_view, 6> names{"val_loss", "train_loss", "grad_norm", "lr", "tokens_per_s",
                                                         "moe_load"};
};

class Views {
 public:
  explicit Views(const std::string& results);

  // A token that changes whenever the database has (a page polls it to know when to fetch again).
  nlohmann::json version();
  nlohmann::json sweeps();
  // Shared, not copied: the answer is made once per database version (1.5 MB for 1,000 runs).
  std::shared_ptr<const nlohmann::json> sweep(const std::string& name);
  // `metric` one of Curve's names; `buckets` the chart's width in points; `seeds` adds each run
  // (thinned to fewer buckets when there are many: 200,000 points in all, at least 25 buckets each);
  // `smooth` in [0, 1): each run's curve smoothed by an exponential moving average first.
  nlohmann::json curves(const std::string& name, const std::string& metric, size_t buckets, bool seeds, double smooth);
  nlohmann::json run(const std::string& run_id);
  // `sweep pool` over every sweep with results, on test_loss (report/pool/pool.h), as its JSON.
  nlohmann::json pool();
  // Reads the most recently run sweep ahead of its first request, on a connection of its own
  // (sweep serve, as it starts: the first look at 1,000 runs × 2,000 steps reads 2M rows, over a
  // second). Errors are left for a request to report.
  void warm();

 private:
  struct Cached {
    int64_t version = -1;
    std::unique_ptr<ReportInput> input;
    std::unique_ptr<const Analysis> analysis;
    std::shared_ptr<const nlohmann::json> page;  // sweep()'s answer, made once per version
  };
  // The sweep's report input and analysis as of the database's current state (the runs done
  // since the last look read again, the others kept).
  Cached& analysed(const std::string& name);
  // c's input and analysis read again through `store`, its done runs taken from c's last input.
  static void read_sweep(Store& store, const std::string& name, Cached& c);
  nlohmann::json sweep_page(const std::string& name, const Cached& c);
  // The database's version, after opening it again when its file was replaced (an ingest into a
  // copy moved into place): every request asks it first.
  int64_t current_version();

  std::string m_results;
  std::string m_path;  // RESULTS/sweep.db
  std::mutex m_mutex;  // one request at a time on the connection and the caches
  std::unique_ptr<Store> m_opened;
  std::pair<uint64_t, uint64_t> m_file{0, 0};  // the device and inode of the file opened
  int64_t m_reopened = 0;                       // times it was opened again: part of the version
  std::map<std::string, Cached> m_analyses;
};

}  // namespace sweep
