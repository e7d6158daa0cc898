// A sweep file read, validated and expanded: `load_sweep`, in named steps (load_sweep.cpp).
#pragma once

#include <functional>
#include <string>

#include "config/sweep_spec.h"

namespace sweep {

// The vocabulary size of a dataset, as the sweep file names it (`dataset`) and where find_dataset
// found it (`dir`, empty when nowhere); throws Error when it cannot be used. (data/ reads it;
// config may not depend on data.)
using VocabLookup = std::function<int64_t(const std::string& dataset, const std::string& dir)>;

// The most variants (interventions and combinations × grid/zip points) a sweep may expand to
// unless told otherwise (--max-variants): more is refused before the expansion is made.
inline constexpr size_t k_default_max_variants = 10000;

// Loads, validates and expands. Every config's dataset is found from the sweep file's folder
// (find_dataset). `vocab_of`, asked once per dataset, checks it and fills model.vocab_size (when
// 0), so run ids name what will really be trained; its errors are reported at the dataset's
// key. Tests of pure expansion pass none.
// `trainer`: a saved copy's trainer as it was planned (`sweep ingest` reads the saved copy of a
// sweep file, elsewhere than its original's folder).
SweepSpec load_sweep(const std::string& path, const VocabLookup& vocab_of = {},
                     size_t max_variants = k_default_max_variants, const TrainerRecord* trainer = nullptr);

}  // namespace sweep
