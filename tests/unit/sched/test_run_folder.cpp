// A run folder checked against its name (sched/run_folder.h): its config.yaml must hash to it (at
// any repeat, under the numerics its core said), and its start events must be of that config — by
// the identity a worker stamps, or, in a folder of an older worker, by its steps and batch.
#include <doctest/doctest.h>

#include <nlohmann/json.hpp>

#include "config/sweep_spec.h"
#include "helpers.h"
#include "sched/run_folder.h"
#include "util/fs.h"

using namespace sweep;

namespace {

// runs/ID holding `config` as its config.yaml and `starts` as its events.jsonl; its path.
fs::path folder(const test::TempDir& dir, const std::string& id, const RunConfig& config,
                const std::vector<nlohmann::json>& starts = {}) {
  const fs::path at = fs::path(dir.str("runs")) / id;
  fs::create_directories(at);
  write_file_atomic(at / "config.yaml", config.to_yaml());
  std::string lines;
  for (const auto& ev : starts) {
    lines += ev.dump() + "\n{\"event\":\"train\",\"step\":1,\"tokens\":128,\"loss\":3}\n";
  }
  write_file_atomic(at / "events.jsonl", lines);
  return at;
}

nlohmann::json start_of(const RunConfig& c) {
  return {{"event", "start"}, {"step", 0}, {"total_steps", c.total_steps()}, {"tokens_per_step", c.tokens_per_step()}};
}

}  // namespace

TEST_CASE("a run folder is the run its name says: its config hashes to it, its events are that config's") {
  test::TempDir dir;
  RunConfig a = test::tiny_config();
  a.data.dataset = "data/none";
  RunConfig b = a;
  b.model.dropout = 0.1;  // the same steps and batch: only the identity tells them apart
  const std::string id_a = run_id_of(a, 0), id_b = run_id_of(b, 0);

  nlohmann::json stamped_a = start_of(a), stamped_b = start_of(b);
  stamped_a["identity"] = id_a;
  stamped_b["identity"] = id_b;
  CHECK(run_folder_problem(folder(dir, id_a, a, {stamped_a})).empty());
  CHECK(run_folder_problem(folder(dir, id_a, a)).empty());  // never started
  CHECK(run_folder_problem(folder(dir, run_id_of(a, 2), a, {stamped_a})).empty());  // a repeat: the same config
  // an older core's folder: the numerics version its start said
  nlohmann::json older = start_of(a);
  older["numerics"] = k_numerics_version - 1;
  CHECK(run_folder_problem(folder(dir, run_id_of(a, 0, k_numerics_version - 1), a, {older})).empty());

  // another run's events (swapped): by its stamp
  const std::string swapped = run_folder_problem(folder(dir, id_a, a, {stamped_b}));
  CHECK(swapped.find("its events.jsonl holds a start of run " + id_b + ", not of its config (" + id_a + ")") == 0);
  // an older worker's, unstamped: by the steps and batch of its start
  RunConfig longer = a;
  longer.train.tokens *= 2;
  const std::string other_shape = run_folder_problem(folder(dir, id_a, a, {start_of(longer)}));
  CHECK(other_shape.find("its events.jsonl holds a start of 40 steps of 128 tokens, its config.yaml 20 of 128") == 0);
  // a run of 2 ranks: its worker's start says the steps of both ranks' batches (10 of 256 tokens)
  RunConfig ranked = a;
  ranked.resources.ranks = 2;
  RunConfig trained = ranked;
  trained.world_size = 2;  // as the trainer runs it
  nlohmann::json ranked_start = start_of(trained);
  ranked_start["identity"] = run_id_of(ranked, 0);
  CHECK(run_folder_problem(folder(dir, run_id_of(ranked, 0), ranked, {ranked_start})).empty());
  // a config edited after the run, or a folder renamed
  const std::string edited = run_folder_problem(folder(dir, id_a, b, {stamped_b}));
  CHECK(edited.find("its config.yaml is not the run its name says (it hashes to " + id_b + ")") == 0);
  CHECK_FALSE(run_folder_problem(folder(dir, "myrun", a)).empty());
  // a config.yaml that does not load
  const fs::path broken = folder(dir, id_a, a);
  write_file_atomic(broken / "config.yaml", "model: [\n");
  CHECK(run_folder_problem(broken).find("its config.yaml does not load: ") == 0);
}

TEST_CASE("a run folder whose files are not files says what they are: a folder, or a link and what it points to") {
  test::TempDir dir;
  RunConfig a = test::tiny_config();
  a.data.dataset = "data/none";
  const fs::path at = folder(dir, run_id_of(a, 0), a);
  fs::remove(at / "events.jsonl");
  fs::create_directory(at / "events.jsonl");
  CHECK(run_folder_problem(at) == "its events.jsonl is not a file (a folder) — restore it, or move the folder away");
  fs::remove(at / "events.jsonl");
  fs::create_directory(dir.path / "elsewhere");
  fs::create_directory_symlink(dir.path / "elsewhere", at / "events.jsonl");
  CHECK(run_folder_problem(at).find("(a link to " + (dir.path / "elsewhere").string() + ", which is a folder)") !=
        std::string::npos);
  fs::remove(at / "events.jsonl");
  fs::create_symlink(dir.path / "gone", at / "events.jsonl");
  CHECK(run_folder_problem(at).find(", which is nothing)") != std::string::npos);
}
