#include <doctest/doctest.h>

#include <fstream>

#include "config/run_config.h"
#include "helpers.h"
#include "util/fs.h"
#include "util/text.h"

using namespace sweep;

static const std::string k_config_dir = std::string(SWEEP_TEST_DATA) + "/config";

TEST_CASE("a valid config sets every field") {
  RunConfig c = load_run_config(k_config_dir + "/good.yaml");
  CHECK(c.model.n_layer == 2);
  CHECK(c.model.n_embd == 64);
  CHECK(c.model.dropout == doctest::Approx(0.1));
  CHECK(c.model.qkv_bias);
  CHECK(c.model.tie_weights);
  CHECK(c.train.tokens == 5'000'000);
  CHECK(c.train.schedule == Schedule::wsd);
  CHECK(c.train.decay == doctest::Approx(0.3));
  CHECK(c.train.precision == Precision::bf16);
  CHECK(c.eval.val_tokens == 65536);
  CHECK(c.seeds.init == 3);
  CHECK(c.seeds.data == 4);
  CHECK(c.resources.threads == 0);
  CHECK(c.threads() >= 1);
  CHECK(c.total_steps() == 5'000'000 / (4 * 32 * 2));
  CHECK(c.warmup_steps() == static_cast<int64_t>(std::llround(0.05 * c.total_steps())));
}

// One table spells each choice: parsing a spelling gives back its value, and the run identity's
// JSON writes the same spelling.
template <Choice E>
static void check_spellings(std::vector<std::string> expected) {
  CHECK(choice_names<E>() == expected);
  for (const std::string& name : expected) {
    const std::optional<E> value = parse_choice<E>(name);
    REQUIRE(value);
    CHECK(to_string(*value) == name);
    CHECK(nlohmann::json(*value) == name);
    CHECK(nlohmann::ordered_json(*value) == name);  // the run identity's kind of JSON
  }
  CHECK_FALSE(parse_choice<E>("no such choice"));
  CHECK_THROWS(choice_of<E>(""));
}

TEST_CASE("each closed set of choices has one table of spellings, in its enum's order") {
  check_spellings<Family>({"gpt2", "deepseek"});
  check_spellings<Norm>({"layernorm", "rmsnorm"});
  check_spellings<Position>({"learned", "rope"});
  check_spellings<MlpActivation>({"gelu", "swiglu", "relu2"});
  check_spellings<Attention>({"mha", "mla"});
  check_spellings<Balance>({"aux_loss", "bias", "none"});
  check_spellings<Schedule>({"constant", "cosine", "linear", "wsd"});
  check_spellings<Optimizer>({"adamw", "muon"});
  check_spellings<Precision>({"fp32", "tf32", "bf16"});
  check_spellings<Backend>({"auto", "nccl", "gloo"});
  check_spellings<AxisKind>({"grid", "zip", "tune", "scale"});
  check_spellings<Spending>({"obrien-fleming", "pocock"});
  check_spellings<KeyType>({"int", "float", "bool", "string", "size", "choice"});
  check_spellings<TargetUnit>({"params", "flops"});
  CHECK(to_string(Backend::automatic) == "auto");
  CHECK(to_string(MlpActivation::relu2) == "relu2");
}

TEST_CASE("the canonical YAML round-trips to the same config") {
  RunConfig c = load_run_config(k_config_dir + "/good.yaml");
  const std::string file = (fs::temp_directory_path() / "sweep-roundtrip.yaml").string();
  write_file_atomic(file, c.to_yaml());
  RunConfig back = load_run_config(file);
  fs::remove(file);
  CHECK(back.to_json() == c.to_json());
}

TEST_CASE("--set overrides are validated like the file and reported at the option") {
  RunConfig c = load_run_config(k_config_dir + "/good.yaml",
                                {parse_set_option("train.lr=1e-3"), parse_set_option("model.dropout=0")});
  CHECK(c.train.lr == doctest::Approx(1e-3));
  CHECK(c.model.dropout == 0.0);
  try {
    load_run_config(k_config_dir + "/good.yaml", {parse_set_option("train.lr=-2"), parse_set_option("train.lrr=1")});
    FAIL("expected InputErrors");
  } catch (const InputErrors& e) {
    REQUIRE(e.diagnostics().size() == 2);
    CHECK(e.diagnostics()[0].str() == "--set train.lr=-2: 'train.lr' must be in (0, inf], got -2");
    CHECK(e.diagnostics()[1].str() == "--set train.lrr=1: unknown key 'train.lrr' — did you mean 'lr'?");
  }
  CHECK_THROWS_AS(parse_set_option("train.lr"), InputErrors);
}

TEST_CASE("bad config files give file:line:col errors, all in one pass") {
  CHECK(test::check_bad_files(k_config_dir + "/bad", [](const std::string& path) { load_run_config(path); }) >= 15);
}

TEST_CASE("a run's seeds in words and in a column: never \"2/2\", which reads as the second of two") {
  CHECK(seeds_in_words(2, 2) == "seed 2");
  CHECK(seeds_in_words(1, 3) == "init seed 1, data seed 3");
  CHECK(seeds_in_words(1, 3, 2) == "init seed 1, data seed 3, repeat 2");
  CHECK(seeds_in_column(2, 2) == "2");
  CHECK(seeds_in_column(1, 3) == "init=1,data=3");
  CHECK(seeds_in_column(4, 4, 1) == "4,repeat=1");
}
