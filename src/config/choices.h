// The closed sets a run config, a sweep file and the command line choose from, as enums, each
// with one string table (util/choices.h): its spellings in YAML, in the run identity's JSON, on
// the command line (a CLI option checks against the same table) and in messages.
#pragma once

#include <array>
#include <nlohmann/json.hpp>
#include <string_view>

#include "util/choices.h"

namespace sweep {

enum class Family { gpt2, deepseek };
enum class Norm { layernorm, rmsnorm };
enum class Position { learned, rope };
enum class MlpActivation { gelu, swiglu, relu2 };  // relu2: relu(x)², the speedrun's
enum class Attention { mha, mla };
enum class Balance { aux_loss, bias, none };
enum class Schedule { constant, cosine, linear, wsd };
enum class Optimizer { adamw, muon };
enum class Precision { fp32, tf32, bf16 };
enum class Backend { automatic, nccl, gloo };  // the ranks' process group; automatic: NCCL on CUDA, Gloo on cpu
enum class AxisKind { grid, zip, tune, scale };  // a sweep file's dimension (config/sweep_spec.h)
// --until-decided's alpha spending (Lan & DeMets): O'Brien–Fleming-type or Pocock-type (report/stats.h)
enum class Spending { obrien_fleming, pocock };
// The type of a key a trainer of your own declares (config/trainer.h)
enum class KeyType { integer, real, boolean, string, size, choice };
// What a scale ladder's target is counted in (config/sweep_spec.h): parameters or training FLOPs
enum class TargetUnit { params, flops };
// Where `sweep run` starts workers: device slots here, or Slurm array tasks (sched/)
enum class ExecutorKind { local, slurm };
// What `sweep report` and `sweep backtest` print
enum class OutputFormat { text, markdown, csv, json };

template <>
struct Choices<Family> {
  static constexpr std::array<std::string_view, 2> names{"gpt2", "deepseek"};
};
template <>
struct Choices<Norm> {
  static constexpr std::array<std::string_view, 2> names{"layernorm", "rmsnorm"};
};
template <>
struct Choices<Position> {
  static constexpr std::array<std::string_view, 2> names{"learned", "rope"};
};
template <>
struct Choices<MlpActivation> {
  static constexpr std::array<std::string_view, 3> names{"gelu", "swiglu", "relu2"};
};
template <>
struct Choices<Attention> {
  static constexpr std::array<std::string_view, 2> names{"mha", "mla"};
};
template <>
struct Choices<Balance> {
  static constexpr std::array<std::string_view, 3> names{"aux_loss", "bias", "none"};
};
template <>
struct Choices<Schedule> {
  static constexpr std::array<std::string_view, 4> names{"constant", "cosine", "linear", "wsd"};
};
template <>
struct Choices<Optimizer> {
  static constexpr std::array<std::string_view, 2> names{"adamw", "muon"};
};
template <>
struct Choices<Precision> {
  static constexpr std::array<std::string_view, 3> names{"fp32", "tf32", "bf16"};
};
template <>
struct Choices<Backend> {
  static constexpr std::array<std::string_view, 3> names{"auto", "nccl", "gloo"};
};
template <>
struct Choices<AxisKind> {
  static constexpr std::array<std::string_view, 4> names{"grid", "zip", "tune", "scale"};
};
template <>
struct Choices<Spending> {
  static constexpr std::array<std::string_view, 2> names{"obrien-fleming", "pocock"};
};
template <>
struct Choices<KeyType> {
  static constexpr std::array<std::string_view, 6> names{"int", "float", "bool", "string", "size", "choice"};
};
template <>
struct Choices<TargetUnit> {
  static constexpr std::array<std::string_view, 2> names{"params", "flops"};
};
template <>
struct Choices<ExecutorKind> {
  static constexpr std::array<std::string_view, 2> names{"local", "slurm"};
};
template <>
struct Choices<OutputFormat> {
  static constexpr std::array<std::string_view, 4> names{"text", "markdown", "csv", "json"};
};

}  // namespace sweep

// Every nlohmann JSON type (json, ordered_json: the run identity's) spells a choice as its
// string. A to_json found by ADL would not do: nlohmann's own one for enums (their integer) is
// as good a match for ordered_json, and a run id would change without a word.
template <sweep::Choice E>
struct nlohmann::adl_serializer<E, void> {
  template <class Json>
  static void to_json(Json& j, E value) {
    j = sweep::to_string(value);
  }
};
